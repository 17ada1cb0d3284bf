//! What an application supplies: its configuration type, its routes, layers, managed
//! resources, health checks and tasks.

use std::future::Future;

use axum::Router;
use axum::extract::Request;
use axum::response::IntoResponse;
use axum::routing::{MethodRouter, Route};
use tower::{Layer, Service};

use crate::admin::tasks::{Task, Tasks};
use crate::command::Command;
use crate::config::Configuration;
use crate::errors::RunError;
use crate::health::{HealthCheck, HealthChecks};
use crate::lifecycle::{Lifecycle, Managed};
use crate::server::Routes;
use crate::stream::Streams;
use ferrowizard_metrics::MetricRegistry;

/// What `Application::run` registers: DropWizard's `Environment`.
#[derive(Default)]
pub struct Environment {
    pub(crate) routes: Routes,
    pub(crate) health_checks: HealthChecks,
    pub(crate) tasks: Tasks,
    pub(crate) metrics: MetricRegistry,
    pub(crate) lifecycle: Lifecycle,
    pub(crate) name: String,
    pub(crate) streams: Option<Streams>,
}

impl Environment {
    /// An environment for the application `name` (what [`Environment::name`] answers); the
    /// server makes one with [`Application::name`] before it calls `run`.
    ///
    /// ```
    /// let environment = ferrowizard::Environment::named("orders");
    /// assert_eq!(environment.name(), "orders");
    /// ```
    pub fn named(name: impl Into<String>) -> Environment {
        Environment {
            name: name.into(),
            ..Environment::default()
        }
    }

    /// The application's name ([`Application::name`]): what a client it builds calls itself
    /// in `User-Agent`, for one.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Adds a route: `method_router` at `path` (axum's `Router::route`, and its panics).
    /// Its requests are timed under `path` (`ferrowizard.routes`) at no cost to the route:
    /// the way to add routes that serve under load.
    pub fn route(&mut self, path: &str, method_router: MethodRouter) -> &mut Self {
        self.routes = std::mem::take(&mut self.routes).route(path, method_router);
        self
    }

    /// Adds every route of `router`, an axum router with its state set
    /// ([`Router::with_state`]), merged with any added before; each is timed under its
    /// template as [`route`](Self::route)'s are (see [`Routes::merge`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use ferrowizard::axum::{Router, extract::State, routing::get};
    ///
    /// async fn hello(State(greeting): State<Arc<str>>) -> String {
    ///     greeting.to_string()
    /// }
    ///
    /// let mut environment = ferrowizard::Environment::default();
    /// let greeting: Arc<str> = "hello".into();
    /// environment.routes(Router::new().route("/hello", get(hello)).with_state(greeting));
    /// ```
    pub fn routes(&mut self, router: Router) -> &mut Self {
        self.routes = std::mem::take(&mut self.routes).merge(router);
        self
    }

    /// Applies a tower layer (tower-http's CORS, timeouts, authentication...) to every
    /// application route, whenever the routes were added, as axum's [`Router::layer`] does,
    /// and to the application's 404s. Layers added later wrap those added before. The server's
    /// own stages still see every request (the request log, the route timers, admission),
    /// including those a layer answers itself.
    ///
    /// ```
    /// use ferrowizard::axum::http::{HeaderValue, header};
    /// use tower_http::set_header::SetResponseHeaderLayer;
    ///
    /// let mut environment = ferrowizard::Environment::default();
    /// environment.layer(SetResponseHeaderLayer::overriding(
    ///     header::CACHE_CONTROL,
    ///     HeaderValue::from_static("no-store"),
    /// ));
    /// ```
    pub fn layer<L>(&mut self, layer: L) -> &mut Self
    where
        L: Layer<Route> + Clone + Send + Sync + 'static,
        L::Service: Service<Request> + Clone + Send + Sync + 'static,
        <L::Service as Service<Request>>::Response: IntoResponse + 'static,
        <L::Service as Service<Request>>::Error: Into<std::convert::Infallible> + 'static,
        <L::Service as Service<Request>>::Future: Send + 'static,
    {
        self.routes = std::mem::take(&mut self.routes).layer(layer);
        self
    }

    /// Registers a resource with a lifecycle: started, in registration order, before the
    /// server opens its ports; stopped, in reverse, after the last request was answered (see
    /// [`Managed`]).
    pub fn manage(&mut self, resource: impl Managed) -> &mut Self {
        self.lifecycle.add(resource);
        self
    }

    /// Registers a health check under `name`.
    pub fn health_check(&mut self, name: impl Into<String>, check: impl HealthCheck) -> &mut Self {
        self.health_checks.add(name, check);
        self
    }

    /// Registers an admin task, run by `POST /tasks/{name}` on the admin connector.
    pub fn task(&mut self, name: impl Into<String>, task: impl Task) -> &mut Self {
        self.tasks.add(name, task);
        self
    }

    /// The handle WebSocket and event-stream routes give their streams to, for their
    /// request-log lines, their metrics and their end at shutdown (see [`crate::stream`]).
    /// Made, and its metrics registered, on the first call; later calls give the same one.
    ///
    /// ```
    /// let mut environment = ferrowizard::Environment::default();
    /// let streams = environment.streams()?;
    /// assert_eq!(streams.open(), 0);
    /// # Ok::<(), ferrowizard::metrics::RegistryError>(())
    /// ```
    pub fn streams(&mut self) -> Result<Streams, ferrowizard_metrics::RegistryError> {
        if let Some(streams) = &self.streams {
            return Ok(streams.clone());
        }
        let streams = Streams::new(&self.metrics)?;
        self.streams = Some(streams.clone());
        Ok(streams)
    }

    /// The metric registry `/metrics` renders: the application's own metrics go here (or
    /// through the `metrics` crate's macros, which land here too).
    pub fn metrics(&self) -> &MetricRegistry {
        &self.metrics
    }
}

/// An application built on ferrowizard.
pub trait Application: Send + Sync + 'static {
    /// Its configuration: a `#[derive(Config)]` struct with a
    /// [`FrameworkConfiguration`](crate::config::FrameworkConfiguration) field marked
    /// `#[config(framework)]`.
    type Config: Configuration + Send + Sync + 'static;

    /// The name shown in `--help`, at startup and in syslog.
    fn name(&self) -> &str;

    /// Registers routes, layers, managed resources, health checks and tasks; may `await` its
    /// own setup first (a pool, a cache warm-up). Runs inside the server's runtime, so it may
    /// spawn background tasks; an error stops the service from starting (exit 1, one line).
    ///
    /// Written as an `async fn` in the implementation:
    ///
    /// ```
    /// use ferrowizard::config::FrameworkConfiguration;
    /// use ferrowizard::{Application, Config, Environment, RunError};
    ///
    /// /// The service's configuration: ferrowizard's sections only.
    /// #[derive(Clone, Debug, Config)]
    /// pub struct HelloConfig {
    ///     /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
    ///     #[config(framework)]
    ///     pub framework: FrameworkConfiguration,
    /// }
    ///
    /// struct Hello;
    ///
    /// impl Application for Hello {
    ///     type Config = HelloConfig;
    ///
    ///     fn name(&self) -> &str {
    ///         "hello"
    ///     }
    ///
    ///     async fn run(&self, _: &HelloConfig, environment: &mut Environment) -> Result<(), RunError> {
    ///         environment.route("/hello", ferrowizard::axum::routing::get(|| async { "hello" }));
    ///         Ok(())
    ///     }
    /// }
    /// ```
    fn run(
        &self,
        config: &Self::Config,
        environment: &mut Environment,
    ) -> impl Future<Output = Result<(), RunError>> + Send;

    /// The application's own subcommands, beside `server` and `check` (listed by `--help`):
    /// none unless told otherwise. See [`Command`].
    fn commands(&self) -> Vec<Command<Self::Config>> {
        Vec::new()
    }
}
