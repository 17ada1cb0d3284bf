//! Admin tasks: `GET /tasks` lists them, `POST /tasks/{name}` runs one.
//!
//! A task is DropWizard's operational lever: something an operator triggers on a running
//! service without a deploy. Parameters come from the query string and from a
//! form-encoded body (both, as DropWizard's `TaskServlet` reads them); the body is limited to
//! `admin.tasks.maxBodySize`. The built-in `log-level` task turns the 2014 DropWizard logging
//! report's lesson into a switch: DEBUG for ten minutes during an incident, then back on its own.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, RawQuery, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ferrowizard_config::{Duration, Level};
use ferrowizard_logging::Levels;

/// A task's parameters, in the order given (a name may repeat, as `logger` does).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TaskParams(Vec<(String, String)>);

impl TaskParams {
    /// Parameters from a query string and a form-encoded body.
    pub fn parse(query: Option<&str>, body: &[u8]) -> TaskParams {
        let mut all: Vec<(String, String)> = Vec::new();
        if let Some(q) = query {
            all.extend(form_urlencoded::parse(q.as_bytes()).into_owned());
        }
        all.extend(form_urlencoded::parse(body).into_owned());
        TaskParams(all)
    }

    /// The first value of `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of `name`.
    pub fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.0
            .iter()
            .filter(move |(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

impl<const N: usize> From<[(&str, &str); N]> for TaskParams {
    fn from(pairs: [(&str, &str); N]) -> Self {
        TaskParams(
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
        )
    }
}

/// Why a task did not do its job.
#[derive(Debug, thiserror::Error)]
pub enum TaskError {
    /// The parameters are wrong: 400, with this text.
    #[error("{0}")]
    BadRequest(String),
    /// It failed: 500.
    #[error("{0}")]
    Failed(Box<dyn std::error::Error + Send + Sync>),
}

/// What a task answers: its reply text, or why not.
pub type TaskResult = Result<String, TaskError>;

/// An admin task, run by `POST /tasks/{name}` on the admin connector (DropWizard's `Task`).
///
/// Implement it on the state the task works on (`execute` borrows it, and an `Arc` of it is a
/// task too), or register a closure taking the parameters.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicBool, Ordering};
///
/// use ferrowizard::{Task, TaskParams, TaskResult};
///
/// struct Pause(Arc<AtomicBool>);
///
/// impl Task for Pause {
///     async fn execute(&self, _: TaskParams) -> TaskResult {
///         self.0.store(true, Ordering::Relaxed);
///         Ok("paused\n".to_owned())
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let paused = Arc::new(AtomicBool::new(false));
/// assert_eq!(Pause(paused.clone()).execute(TaskParams::default()).await.unwrap(), "paused\n");
/// assert!(paused.load(Ordering::Relaxed));
/// # });
/// ```
pub trait Task: Send + Sync + 'static {
    /// Runs the task with the request's parameters.
    fn execute(&self, params: TaskParams) -> impl Future<Output = TaskResult> + Send;
}

impl<T: Task> Task for Arc<T> {
    fn execute(&self, params: TaskParams) -> impl Future<Output = TaskResult> + Send {
        (**self).execute(params)
    }
}

impl<F, Fut> Task for F
where
    F: Fn(TaskParams) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = TaskResult> + Send,
{
    fn execute(&self, params: TaskParams) -> impl Future<Output = TaskResult> + Send {
        self(params)
    }
}

/// A [`Task`] as the admin side holds it.
pub(crate) trait RegisteredTask: Send + Sync + 'static {
    fn run(&self, params: TaskParams) -> Pin<Box<dyn Future<Output = TaskResult> + Send + '_>>;
}

impl<T: Task> RegisteredTask for T {
    fn run(&self, params: TaskParams) -> Pin<Box<dyn Future<Output = TaskResult> + Send + '_>> {
        Box::pin(self.execute(params))
    }
}

/// The application's tasks, by name, in the order registered.
///
/// ```
/// use ferrowizard::{TaskParams, Tasks};
///
/// let mut tasks = Tasks::default();
/// tasks.add("echo", |_: TaskParams| async { Ok("echo\n".to_owned()) });
/// assert_eq!(tasks.names().collect::<Vec<_>>(), ["echo"]);
/// ```
#[derive(Clone, Default)]
pub struct Tasks {
    pub(crate) tasks: Vec<(String, Arc<dyn RegisteredTask>)>,
}

impl Tasks {
    /// Adds `task` under `name`.
    pub fn add(&mut self, name: impl Into<String>, task: impl Task) -> &mut Self {
        self.tasks.push((name.into(), Arc::new(task)));
        self
    }

    /// The tasks' names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.tasks.iter().map(|(name, _)| name.as_str())
    }
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// The tasks by name, as `/tasks` serves them.
#[derive(Clone)]
pub(crate) struct TaskTable {
    tasks: Arc<BTreeMap<String, Arc<dyn RegisteredTask>>>,
    max_body: usize,
    print_causes: bool,
}

impl TaskTable {
    pub(crate) fn new(
        tasks: BTreeMap<String, Arc<dyn RegisteredTask>>,
        max_body: usize,
        print_causes: bool,
    ) -> TaskTable {
        TaskTable {
            tasks: Arc::new(tasks),
            max_body,
            print_causes,
        }
    }

    /// `/tasks` and `/tasks/{name}`.
    pub(crate) fn routes(self) -> Router {
        // A task changes the service: POST only (axum answers 405 to anything else).
        // axum's own 2 MiB limit on a buffered body lifted to `maxBodySize` (one byte more,
        // so that `run` tells an oversized body with its own message).
        let limit = axum::extract::DefaultBodyLimit::max(self.max_body.saturating_add(1));
        Router::new()
            .route("/tasks", get(list))
            .route("/tasks/{name}", axum::routing::post(run).layer(limit))
            .with_state(self)
    }
}

async fn list(State(tasks): State<TaskTable>) -> String {
    let mut out = String::new();
    for name in tasks.tasks.keys() {
        out.push_str(name);
        out.push('\n');
    }
    out
}

async fn run(
    State(tasks): State<TaskTable>,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let Some(task) = tasks.tasks.get(&name).cloned() else {
        return (StatusCode::NOT_FOUND, format!("no task named {name:?}\n")).into_response();
    };
    if body.len() > tasks.max_body {
        return (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("a task takes at most {} bytes\n", tasks.max_body),
        )
            .into_response();
    }
    let form = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|t| t.starts_with("application/x-www-form-urlencoded"));
    let params = TaskParams::parse(query.as_deref(), if form { &body } else { &[] });
    match task.run(params).await {
        Ok(mut reply) => {
            if !reply.ends_with('\n') {
                reply.push('\n');
            }
            (StatusCode::OK, reply).into_response()
        }
        Err(TaskError::BadRequest(why)) => {
            (StatusCode::BAD_REQUEST, format!("{why}\n")).into_response()
        }
        Err(TaskError::Failed(e)) => {
            tracing::error!(target: "ferrowizard::admin", task = name, error = %e, "task failed");
            let mut text = format!("task {name} failed: {e}\n");
            if tasks.print_causes {
                let mut source = e.source();
                while let Some(cause) = source {
                    text.push_str(&format!("Caused by: {cause}\n"));
                    source = cause.source();
                }
            }
            (StatusCode::INTERNAL_SERVER_ERROR, text).into_response()
        }
    }
}

/// `log-level`: sets (or, without `level`, resets) the level of each `logger` given, for
/// `duration` if given (ISO-8601 such as `PT10M`, or `10m`), after which it reverts.
/// Replies as DropWizard's `LogConfigurationTask` does, a line per logger.
pub(crate) fn log_level_task(levels: Arc<Levels>) -> impl Task {
    move |params: TaskParams| {
        let levels = levels.clone();
        async move {
            let level = params
                .get("level")
                .map(|l| {
                    l.parse::<Level>().map_err(|_| {
                        TaskError::BadRequest(format!(
                            "unknown level {l:?}: use one of TRACE, DEBUG, INFO, WARN, ERROR, OFF, ALL"
                        ))
                    })
                })
                .transpose()?;
            let duration = params
                .get("duration")
                .map(|d| {
                    d.parse::<Duration>().map(Duration::get).map_err(|e| {
                        TaskError::BadRequest(format!("duration: {e} (use ISO-8601 such as PT10M)"))
                    })
                })
                .transpose()?;
            let loggers: Vec<&str> = params.all("logger").collect();
            if loggers.is_empty() {
                return Err(TaskError::BadRequest(
                    "give at least one logger parameter (ROOT for the root logger)".into(),
                ));
            }
            let mut reply = String::new();
            for logger in loggers {
                let line = levels
                    .set(logger, level, duration)
                    .map_err(|e| TaskError::BadRequest(e.to_string()))?;
                reply.push_str(&line);
                reply.push('\n');
            }
            Ok(reply)
        }
    }
}
