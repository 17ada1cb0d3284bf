//! A first service on ferrowizard: greetings, loaded from a file at start, served at `/hello`.

use std::sync::{Arc, RwLock};

use ferrowizard::axum::{Router, extract::Path, extract::State, routing::get};
use ferrowizard::config::FrameworkConfiguration;
use ferrowizard::health::{Health, HealthCheck};
use ferrowizard::{
    Application, Command, Config, Environment, Managed, RunError, Task, TaskError, TaskParams,
    TaskResult,
};
use tower_http::cors::CorsLayer;

/// ferrowizard's sections (`server`, `logging`, `metrics`, `admin`) plus `hello:`.
#[derive(Clone, Debug, Config)]
pub struct HelloConfig {
    /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
    #[config(framework)]
    pub framework: FrameworkConfiguration,
    /// `hello:`.
    pub hello: HelloSection,
}

/// `hello:` the file of greetings, one a line, loaded at start.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct HelloSection {
    /// The file of greetings, relative to the working directory.
    #[config(default = "greetings.txt".to_owned(), length(min = 1))]
    pub greetings_file: String,
}

/// The file's lines but the blank ones, or why it cannot be read.
async fn read(file: &str) -> Result<Vec<String>, RunError> {
    let text = tokio::fs::read_to_string(file)
        .await
        .map_err(|e| format!("{file}: {e}"))?;
    Ok(text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(str::to_owned)
        .collect())
}

/// The greetings: the routes' state, a managed resource (loaded before the server opens its
/// ports) and a health check.
struct Greetings {
    file: String,
    lines: RwLock<Vec<String>>,
}

impl Greetings {
    /// Reads the file again.
    async fn load(&self) -> Result<usize, RunError> {
        let lines = read(&self.file).await?;
        let count = lines.len();
        *self.lines.write().unwrap_or_else(|e| e.into_inner()) = lines;
        Ok(count)
    }

    fn first(&self) -> Option<String> {
        let lines = self.lines.read().unwrap_or_else(|e| e.into_inner());
        lines.first().cloned()
    }
}

impl Managed for Greetings {
    async fn start(&self) -> Result<(), RunError> {
        self.load().await.map(drop)
    }

    async fn stop(&self) -> Result<(), RunError> {
        println!("greetings: stopped after the last request");
        Ok(())
    }
}

impl HealthCheck for Greetings {
    async fn check(&self) -> Health {
        match self.lines.read().map_or(0, |lines| lines.len()) {
            0 => Health::unhealthy("no greetings"),
            n => Health::healthy_with(format!("{n} greetings")),
        }
    }
}

/// `POST /tasks/reload`: reads the greetings file again.
struct Reload(Arc<Greetings>);

impl Task for Reload {
    async fn execute(&self, _: TaskParams) -> TaskResult {
        match self.0.load().await {
            Ok(count) => Ok(format!("reloaded {count} greetings\n")),
            Err(e) => Err(TaskError::Failed(e)),
        }
    }
}

/// `GET /hello/{name}`: the first greeting, to `name`.
async fn hello(State(greetings): State<Arc<Greetings>>, Path(name): Path<String>) -> String {
    let greeting = greetings.first().unwrap_or_else(|| "Hello".to_owned());
    format!("{greeting}, {name}!\n")
}

/// The service.
pub struct Hello;

impl Application for Hello {
    type Config = HelloConfig;

    fn name(&self) -> &str {
        "hello"
    }

    async fn run(&self, config: &HelloConfig, env: &mut Environment) -> Result<(), RunError> {
        let greetings = Arc::new(Greetings {
            file: config.hello.greetings_file.clone(),
            lines: RwLock::default(),
        });
        let routes = Router::new().route("/hello/{name}", get(hello));
        env.routes(routes.with_state(greetings.clone()))
            .layer(CorsLayer::permissive())
            .manage(greetings.clone())
            .health_check("greetings", greetings.clone())
            .task("reload", Reload(greetings));
        Ok(())
    }

    fn commands(&self) -> Vec<Command<HelloConfig>> {
        let cli =
            clap::Command::new("greetings").about("Print the greetings the configuration loads");
        vec![Command::configured(
            cli,
            |_, config: HelloConfig| async move {
                for greeting in read(&config.hello.greetings_file).await? {
                    println!("{greeting}");
                }
                Ok(())
            },
        )]
    }
}

/// The README's and the guide's Rust examples, compiled (and run, unless `no_run`) as this
/// crate's doctests: `cargo test -p hello --doc`.
#[cfg(doctest)]
mod guide {
    #[doc = include_str!("../../../README.md")]
    mod readme {}
    #[doc = include_str!("../../../docs/src/getting-started.md")]
    mod getting_started {}
    #[doc = include_str!("../../../docs/src/writing-a-service.md")]
    mod writing_a_service {}
    #[doc = include_str!("../../../docs/src/health.md")]
    mod health {}
    #[doc = include_str!("../../../docs/src/tracing.md")]
    mod tracing {}
    #[doc = include_str!("../../../docs/src/authentication.md")]
    mod authentication {}
    #[doc = include_str!("../../../docs/src/calling-services.md")]
    mod calling_services {}
    #[doc = include_str!("../../../docs/src/streams.md")]
    mod streams {}
}
