//! Starting an application inside a test, as DropWizard's `DropwizardAppExtension` does: from a
//! YAML string, on free loopback ports, in the test's own process; stopped when dropped.
//!
//! ```
//! use ferrowizard::config::FrameworkConfiguration;
//! use ferrowizard::{Application, Config, Environment, RunError};
//! use ferrowizard::testing::TestService;
//!
//! /// ferrowizard's sections only.
//! #[derive(Clone, Debug, Config)]
//! pub struct HelloConfig {
//!     /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
//!     #[config(framework)]
//!     pub framework: FrameworkConfiguration,
//! }
//!
//! struct Hello;
//!
//! impl Application for Hello {
//!     type Config = HelloConfig;
//!
//!     fn name(&self) -> &str {
//!         "hello"
//!     }
//!
//!     async fn run(&self, _: &HelloConfig, env: &mut Environment) -> Result<(), RunError> {
//!         env.route("/hello", ferrowizard::axum::routing::get(|| async { "hello\n" }));
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Runtime::new().unwrap().block_on(async {
//! let service = TestService::start(Hello, "logging: {appenders: []}\n").unwrap();
//! let hello = service.get("/hello").await.unwrap();
//! assert_eq!(hello.status, 200);
//! assert_eq!(hello.text(), "hello\n");
//! let ping = service.admin_get("/ping").await.unwrap();
//! assert_eq!(ping.text(), "pong\n");
//! // `application_url()` and `admin_url()` are the base URLs, for any other client.
//! assert!(service.application_url().starts_with("http://127.0.0.1:"));
//! drop(service); // drains, stops the managed resources, writes the request log
//! # });
//! ```

mod client;

use std::thread::JoinHandle;

use bytes::Bytes;
use http::Method;

use tokio::sync::oneshot;

use crate::app::Application;
use crate::config::server::ConnectorFactory;
use crate::config::{self, Configuration, ServerFactory};
use crate::startup::Running;
use client::TestClient;
pub use client::{RequestError, TestResponse};

/// An application serving in this process, stopped (in order, as on SIGTERM) when dropped.
///
/// It runs on a thread of its own with a runtime of its own, so that a test may use it from
/// synchronous code or from any runtime. The configuration's `logging:` section is not
/// installed (a test process has one global subscriber, and tests share it); the request log,
/// metrics, health checks, tasks and managed resources all run as configured.
#[derive(Debug)]
pub struct TestService {
    client: TestClient,
    application: String,
    admin: Option<String>,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

/// Why a [`TestService`] did not start.
#[derive(Debug, thiserror::Error)]
pub enum TestError {
    /// The YAML did not load or validate: the report, as `check` prints it.
    #[error("{0}")]
    Config(String),
    /// The application did not start (its `run`, a managed resource, a port): one line.
    #[error("{0}")]
    Start(String),
}

impl TestService {
    /// Starts `app` with the configuration `yaml`, every connector moved to a free port on
    /// 127.0.0.1. Returns once it serves.
    pub fn start<A: Application>(app: A, yaml: &str) -> Result<TestService, TestError> {
        let config = load::<A>(yaml)?;
        let (started, ready) = std::sync::mpsc::channel();
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(format!("{}-test", app.name()))
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .enable_all()
                    .build()
                {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = started.send(Err(format!("cannot start the runtime: {e}")));
                        return;
                    }
                };
                runtime.block_on(async move {
                    match Running::start(&app, &config, None, &[]).await {
                        Ok(running) => {
                            let _ = started.send(Ok(urls(&running, config.server())));
                            let _ = stopped.await;
                            running.stop().await;
                        }
                        Err(e) => {
                            let _ = started.send(Err(e.to_string()));
                        }
                    }
                });
                runtime.shutdown_timeout(std::time::Duration::from_secs(1));
            })
            .map_err(|e| TestError::Start(format!("cannot start a thread: {e}")))?;
        let outcome = ready
            .recv()
            .unwrap_or_else(|_| Err("the service's thread ended".into()));
        match outcome {
            Ok((application, admin)) => Ok(TestService {
                client: TestClient::new(),
                application,
                admin,
                stop: Some(stop),
                thread: Some(thread),
            }),
            Err(e) => {
                let _ = thread.join();
                Err(TestError::Start(e))
            }
        }
    }

    /// `http://127.0.0.1:PORT` (or `https://`) of the first application connector, with the
    /// application's context path and `rootPath` (no trailing `/`).
    pub fn application_url(&self) -> &str {
        &self.application
    }

    /// The first admin connector's base URL with the admin context path (on the simple
    /// server, the one connector's); empty when the service has no admin connector.
    pub fn admin_url(&self) -> &str {
        self.admin.as_deref().unwrap_or_default()
    }

    /// `GET` `path` (e.g. `/hello/Ada`) on the application connector.
    pub async fn get(&self, path: &str) -> Result<TestResponse, RequestError> {
        self.request(Method::GET, path, Bytes::new(), None).await
    }

    /// `POST` `body` (as `text/plain`) to `path` on the application connector.
    pub async fn post(
        &self,
        path: &str,
        body: impl Into<Bytes>,
    ) -> Result<TestResponse, RequestError> {
        let body = body.into();
        self.request(Method::POST, path, body, Some("text/plain"))
            .await
    }

    /// `POST` `value` as JSON to `path` on the application connector.
    pub async fn post_json(
        &self,
        path: &str,
        value: &impl serde::Serialize,
    ) -> Result<TestResponse, RequestError> {
        let body = serde_json::to_vec(value).map_err(|e| RequestError::Send(e.to_string()))?;
        let json = Some("application/json");
        self.request(Method::POST, path, body.into(), json).await
    }

    /// `method` `path` with `body` on the application connector.
    pub async fn request(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
        content_type: Option<&'static str>,
    ) -> Result<TestResponse, RequestError> {
        let url = format!("{}{path}", self.application);
        self.client.send(method, url, body, content_type).await
    }

    /// `GET` `path` (e.g. `/healthcheck`) on the admin connector.
    pub async fn admin_get(&self, path: &str) -> Result<TestResponse, RequestError> {
        self.admin(Method::GET, path, Bytes::new()).await
    }

    /// `POST` `path` (e.g. `/tasks/reload?level=INFO`) with `body` on the admin connector.
    pub async fn admin_post(
        &self,
        path: &str,
        body: impl Into<Bytes>,
    ) -> Result<TestResponse, RequestError> {
        self.admin(Method::POST, path, body.into()).await
    }

    async fn admin(
        &self,
        method: Method,
        path: &str,
        body: Bytes,
    ) -> Result<TestResponse, RequestError> {
        let base = self
            .admin
            .as_deref()
            .ok_or(RequestError::NoConnector("admin"))?;
        let url = format!("{base}{path}");
        self.client.send(method, url, body, None).await
    }
}

impl Drop for TestService {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The application's configuration from `yaml`, every connector on a free loopback port.
fn load<A: Application>(yaml: &str) -> Result<A::Config, TestError> {
    let first: A::Config = config::load_str("test.yaml", yaml, &[])
        .map_err(|report| TestError::Config(report.to_string()))?;
    let mut overrides = Vec::new();
    // The type too: a connector the file leaves to its defaults is written whole.
    let mut free = |path: String, connector: &ConnectorFactory| {
        let kind = match connector {
            ConnectorFactory::Http(_) => "http",
            ConnectorFactory::Https(_) => "https",
        };
        overrides.push(format!("{path}.type={kind}"));
        overrides.push(format!("{path}.port=0"));
        overrides.push(format!("{path}.bindHost=127.0.0.1"));
    };
    match first.server() {
        ServerFactory::Default(f) => {
            for (i, c) in f.application_connectors.iter().enumerate() {
                free(format!("server.applicationConnectors[{i}]"), c);
            }
            for (i, c) in f.admin_connectors.iter().enumerate() {
                free(format!("server.adminConnectors[{i}]"), c);
            }
        }
        ServerFactory::Simple(f) => free("server.connector".to_owned(), &f.connector),
    }
    config::load_str("test.yaml", yaml, &overrides)
        .map_err(|report| TestError::Config(report.to_string()))
}

/// The base URLs of the first application and admin connectors, each with its context path
/// (no trailing `/`).
fn urls(running: &Running, server: &ServerFactory) -> (String, Option<String>) {
    let base = |role: &str| {
        running
            .bound()
            .iter()
            .find(|b| b.role == role)
            .map(|b| format!("{}://{}", b.scheme, b.addr))
    };
    let admin_path = match server {
        ServerFactory::Default(f) => &f.admin_context_path,
        ServerFactory::Simple(f) => &f.admin_context_path,
    };
    let admin_path = admin_path.trim_end_matches('/');
    let application = base("application").unwrap_or_default();
    let admin = match server {
        ServerFactory::Default(_) => base("admin").map(|b| format!("{b}{admin_path}")),
        ServerFactory::Simple(_) => Some(format!("{application}{admin_path}")),
    };
    (format!("{application}{}", server.application_path()), admin)
}
