//! A first service on ferrowizard: greetings, loaded from a file at start, served at `/hello`.
#![warn(missing_docs)]

use std::{collections::HashMap, sync::Arc, sync::RwLock};

use ferrowizard::axum::http::{HeaderName, HeaderValue};
use ferrowizard::axum::{Router, extract::Query, extract::State, routing::get};
use ferrowizard::{Application, Command, Environment, Managed, RunError, TaskError};
use tower_http::set_header::SetResponseHeaderLayer;

ferrowizard::configuration! {
    /// ferrowizard's sections (`server`, `logging`, `metrics`, `admin`) plus `hello:`.
    pub struct HelloConfig {
        /// The greetings.
        #[garde(dive)]
        hello: HelloSection = HelloSection::default(),
    }
}

ferrowizard::section! {
    /// `hello:` a file of greetings, one a line, loaded at start.
    pub struct HelloSection {
        /// The file.
        #[garde(length(min = 1))]
        greetings_file: String = "greetings.txt".to_owned(),
    }
}

/// A header every response gets, through a tower layer on every route.
const GREETER: HeaderName = HeaderName::from_static("x-greeter");

/// The greetings file's lines, or why there are none.
async fn load(file: &str) -> Result<Vec<String>, RunError> {
    let text = tokio::fs::read_to_string(file).await.map_err(|e| format!("{file}: {e}"))?;
    let lines: Vec<String> = text.lines().filter(|l| !l.trim().is_empty()).map(str::to_owned).collect();
    if lines.is_empty() { Err(format!("{file}: no greetings").into()) } else { Ok(lines) }
}

/// The routes' state, and a managed resource: loaded before the server opens its ports.
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

/// `GET /hello?name=Ada`: the first greeting, to `name` (or the world).
async fn hello(State(g): State<Arc<Greetings>>, Query(q): Query<HashMap<String, String>>) -> String {
    let lines = g.lines.read().unwrap_or_else(|e| e.into_inner());
    let name = q.get("name").map_or("world", String::as_str);
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
        let greetings =
            Arc::new(Greetings { file: config.hello.greetings_file.clone(), lines: RwLock::default() });
        let (check, task) = (greetings.clone(), greetings.clone());
        env.routes(Router::new().route("/hello", get(hello)).with_state(greetings.clone()))
            .layer(SetResponseHeaderLayer::overriding(GREETER, HeaderValue::from_static("hello")))
            .manage(greetings)
            .health_check("greetings", move || {
                let count = check.lines.read().map_or(0, |lines| lines.len());
                async move { (count > 0).then(|| Some(format!("{count} greetings"))).ok_or("none".to_owned()) }
            })
            .task("reload", move |_| {
                let greetings = task.clone();
                async move { greetings.start().await.map(|()| "reloaded\n".to_owned()).map_err(TaskError::Failed) }
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
