//! The admin interface: what operators live in, on the admin connector.
//!
//! `/ping`, `/healthcheck` ([`crate::health`]), `/metrics` and `/metrics/prometheus` ([`metrics`]),
//! `/threads` ([`threads`]), `GET /tasks` and `POST /tasks/{name}` ([`crate::Tasks`], with the
//! built-in `log-level`). Safe by default where DropWizard is not: the admin connector binds
//! 127.0.0.1 unless `bindHost` says otherwise, `admin.auth` can require credentials on every
//! admin path (`auth`), and each endpoint can be switched off (`admin.endpoints`).

mod auth;
pub mod metrics;
pub(crate) mod tasks;
pub mod threads;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Router;
use axum::routing::get;
use ferrowizard_logging::Logging;
use ferrowizard_metrics::MetricRegistry;
use tokio::runtime::Handle;

use crate::config::AdminFactory;
use crate::health::HealthChecks;
use crate::health::check::Registered;
use tasks::{RegisteredTask, TaskTable, Tasks};

/// Everything the admin interface shows and acts on.
pub struct Admin {
    /// `admin:`.
    pub config: AdminFactory,
    /// The application's health checks.
    pub health_checks: HealthChecks,
    /// The application's tasks.
    pub tasks: Tasks,
    /// The metrics `/metrics` renders.
    pub metrics: MetricRegistry,
    /// The logging pipeline (for `log-level`), when the service installed one.
    pub logging: Option<Arc<Logging>>,
    /// The application's runtime (the admin side runs on a thread of its own): checked by
    /// the `runtime` health check and shown by `/threads`.
    pub runtime: Handle,
}

impl Admin {
    /// The admin routes, behind `admin.auth` when it is set.
    pub fn router(self) -> Router {
        let Admin {
            config,
            health_checks,
            tasks,
            metrics,
            logging,
            runtime,
        } = self;
        if health_checks.is_empty() {
            tracing::warn!(
                target: "ferrowizard::admin",
                "THIS APPLICATION HAS NO HEALTH CHECKS: /healthcheck answers 501 until it registers one (Environment::health_check)"
            );
        }
        let endpoints = &config.endpoints;
        let mut router = Router::new();
        if endpoints.ping {
            router = router.route("/ping", get(|| async { "pong\n" }));
        }
        if config.health_checks.servlet_enabled {
            let checks = crate::health::endpoint::Checks {
                application: Arc::new(health_checks.checks),
                builtin: Arc::new(vec![(
                    "runtime".to_owned(),
                    Arc::new(crate::health::endpoint::RuntimeCheck(runtime.clone()))
                        as Arc<dyn Registered>,
                )]),
                timeout: config.health_checks.timeout.get(),
            };
            router = router.route(
                "/healthcheck",
                get(move || crate::health::endpoint::healthcheck(checks.clone())),
            );
        }
        if endpoints.metrics {
            router = router.merge(metrics::routes(metrics));
        }
        if endpoints.threads {
            let runtime = runtime.clone();
            router = router.route(
                "/threads",
                get(move || {
                    let runtime = runtime.clone();
                    async move { threads::render(&runtime) }
                }),
            );
        }
        if endpoints.tasks {
            let mut all: BTreeMap<String, Arc<dyn RegisteredTask>> = BTreeMap::new();
            if let Some(logging) = &logging {
                all.insert(
                    "log-level".to_owned(),
                    Arc::new(tasks::log_level_task(logging.levels().clone())),
                );
            }
            all.extend(tasks.tasks);
            let max_body =
                usize::try_from(config.tasks.max_body_size.to_bytes()).unwrap_or(usize::MAX);
            router = router.merge(
                TaskTable::new(all, max_body, config.tasks.print_stack_trace_on_error).routes(),
            );
        }
        match &config.auth {
            Some(a) => {
                let guard = Arc::new(auth::Guard::new(a));
                router.layer(axum::middleware::from_fn(move |req, next| {
                    auth::require(guard.clone(), req, next)
                }))
            }
            None => router,
        }
    }
}
