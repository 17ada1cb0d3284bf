//! `/healthcheck`: the application's checks and the built-in `runtime` check, in DropWizard's
//! shape.
//!
//! Checks run side by side, each within `admin.healthChecks.timeout` (a check that hangs is
//! unhealthy with "timed out after N ms", and the answer still comes in time for a load
//! balancer). 200 when every check is healthy, 500 when one is not, 501 when the application
//! registered none (DropWizard warns about that at startup; so does ferrowizard).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use axum::response::IntoResponse;
use tokio::runtime::Handle;

use crate::health::check::{Health, HealthCheck, Registered};

/// How long the application runtime may take to run a trivial task before `runtime` is
/// unhealthy: our analogue of DropWizard's deadlock check. Blocked worker threads (a handler
/// doing blocking I/O, a lock held across an `.await`) show here first.
pub const RUNTIME_BOUND: Duration = Duration::from_secs(1);

/// The built-in check: the application runtime runs a task within [`RUNTIME_BOUND`].
pub(crate) struct RuntimeCheck(pub Handle);

impl HealthCheck for RuntimeCheck {
    async fn check(&self) -> Health {
        let started = Instant::now();
        let task = self.0.spawn(async {});
        match tokio::time::timeout(RUNTIME_BOUND, task).await {
            Ok(Ok(())) => Health::healthy_with(format!(
                "ran a task in {} µs",
                started.elapsed().as_micros()
            )),
            Ok(Err(e)) => Health::unhealthy(format!("the application runtime failed a task: {e}")),
            Err(_) => Health::unhealthy(format!(
                "the application runtime did not run a task within {} ms",
                RUNTIME_BOUND.as_millis()
            )),
        }
    }
}

/// The checks to run, the application's and the built-in ones.
#[derive(Clone)]
pub(crate) struct Checks {
    pub(crate) application: Arc<Vec<(String, Arc<dyn Registered>)>>,
    pub(crate) builtin: Arc<Vec<(String, Arc<dyn Registered>)>>,
    pub(crate) timeout: Duration,
}

#[derive(serde::Serialize)]
struct Outcome {
    healthy: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<String>,
    duration: u64,
    timestamp: String,
}

/// Runs every check at once (each within the timeout) and answers.
pub(crate) async fn healthcheck(checks: Checks) -> impl IntoResponse {
    let mut running = tokio::task::JoinSet::new();
    let mut names = std::collections::HashMap::new();
    for (name, check) in checks.builtin.iter().chain(checks.application.iter()) {
        let (owned, check, timeout) = (name.clone(), check.clone(), checks.timeout);
        let task = running.spawn(async move {
            let started = Instant::now();
            let result = match tokio::time::timeout(timeout, check.run()).await {
                Ok(r) => r,
                Err(_) => Health::unhealthy(format!("timed out after {} ms", timeout.as_millis())),
            };
            (owned, result, started.elapsed())
        });
        names.insert(task.id(), name.clone());
    }
    let timestamp = jiff::Timestamp::now().to_string();
    let mut report = BTreeMap::new();
    while let Some(done) = running.join_next().await {
        let (name, result, took) = match done {
            Ok(d) => d,
            // A check that panicked is unhealthy, under its own name.
            Err(e) => (
                names.remove(&e.id()).unwrap_or_default(),
                Health::unhealthy(format!("the check panicked: {e}")),
                Duration::ZERO,
            ),
        };
        let (healthy, message) = match result {
            Health::Healthy(m) => (true, m),
            Health::Unhealthy(m) => (false, Some(m)),
        };
        report.insert(
            name,
            Outcome {
                healthy,
                message,
                duration: took.as_millis() as u64,
                timestamp: timestamp.clone(),
            },
        );
    }
    let status = if checks.application.is_empty() {
        StatusCode::NOT_IMPLEMENTED
    } else if report.values().all(|o| o.healthy) {
        StatusCode::OK
    } else {
        StatusCode::INTERNAL_SERVER_ERROR
    };
    (status, axum::Json(report))
}
