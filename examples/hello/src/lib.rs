//! A first service on ferrowizard: greetings, loaded from a file at start, served at `/hello`.

use std::sync::{Arc, RwLock};

use ferrowizard::axum::{Router, extract::Path, extract::State, routing::get};
use ferrowizard::config::FrameworkConfiguration;
use ferrowizard::{Application, Command, Config, Environment, Managed, RunError, TaskError};
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
async fn load(file: &str) -> Result<Vec<String>, RunError> {
    let text = tokio::fs::read_to_string(file).await.map_err(|e| format!("{file}: {e}"))?;
    Ok(text.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect())
}

/// The routes' state and a managed resource: loaded before the server opens its ports.
struct Greetings {
    file: String,
    lines: RwLock<Vec<String>>,
}

impl Managed for Greetings {
    async fn start(&self) -> Result<(), RunError> {
        *self.lines.write().unwrap_or_else(|e| e.into_inner()) = load(&self.file).await?;
        Ok(())
    }

    async fn stop(&self) -> Result<(), RunError> {
        println!("greetings: stopped after the last request");
        Ok(())
    }
}

/// `GET /hello/{name}`: the first greeting, to `name`.
async fn hello(State(greetings): State<Arc<Greetings>>, Path(name): Path<String>) -> String {
    let lines = greetings.lines.read().unwrap_or_else(|e| e.into_inner());
    format!("{}, {name}!\n", lines.first().map_or("Hello", String::as_str))
}

/// The service.
pub struct Hello;

impl Application for Hello {
    type Config = HelloConfig;

    fn name(&self) -> &str {
        "hello"
    }

    async fn run(&self, config: &HelloConfig, env: &mut Environment) -> Result<(), RunError> {
        let file = config.hello.greetings_file.clone();
        let greetings = Arc::new(Greetings { file, lines: RwLock::default() });
        let (check, task) = (greetings.clone(), greetings.clone());
        env.routes(Router::new().route("/hello/{name}", get(hello)).with_state(greetings.clone()))
            .layer(CorsLayer::permissive())
            .manage(greetings)
            .health_check("greetings", move || {
                let count = check.lines.read().map_or(0, |lines| lines.len());
                async move { (count > 0).then(|| Some(format!("{count} greetings"))).ok_or("none".to_owned()) }
            })
            .task("reload", move |_| {
                let greetings = task.clone();
                async move { greetings.start().await.map(|()| "reloaded\n".into()).map_err(TaskError::Failed) }
            });
        Ok(())
    }

    fn commands(&self) -> Vec<Command<HelloConfig>> {
        let cli = clap::Command::new("greetings").about("Print the greetings the configuration loads");
        vec![Command::configured(cli, |_, config: HelloConfig| async move {
            load(&config.hello.greetings_file).await?.iter().for_each(|g| println!("{g}"));
            Ok(())
        })]
    }
}
