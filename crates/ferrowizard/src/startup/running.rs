//! A service running: the application's `run` done, its managed resources started, the server
//! serving, the metric reporters reporting; and its stop, in the reverse order. What `server`
//! (the command, [`super::serve`]) and [`crate::testing`] both run.

use std::sync::Arc;

use crate::admin::Admin;
use crate::app::{Application, Environment};
use crate::config::Configuration;
use crate::health::schedule::{Readiness, shutdown_wait};
use crate::lifecycle::Started;
use crate::reporters::Reporters;
use crate::server::{Bound, Server};

use super::error::StartupError;

/// A service started by [`Running::start`].
pub(crate) struct Running {
    server: Server,
    managed: Started,
    reporters: Reporters,
    health: Option<Scheduled>,
}

/// `health:` running: its checks' tasks, and the delayed shutdown's wait.
struct Scheduled {
    health: Arc<Readiness>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    wait: Option<std::time::Duration>,
}

impl Running {
    /// Runs `app` with `config` (`logging`: the pipeline installed for it, whose counters are
    /// published, as are `counters`, gauges by name), starts its managed resources, then its
    /// server, then the reporters. On a failure, what started is stopped.
    pub(crate) async fn start<A: Application>(
        app: &A,
        config: &A::Config,
        logging: Option<&Arc<ferrowizard_logging::Logging>>,
        counters: &[(&str, Arc<std::sync::atomic::AtomicU64>)],
    ) -> Result<Running, StartupError> {
        let mut environment = Environment::named(app.name());
        app.run(config, &mut environment)
            .await
            .map_err(StartupError::Run)?;
        let Environment {
            mut routes,
            health_checks,
            tasks,
            metrics,
            lifecycle,
            name: _,
            streams,
        } = environment;
        // `health:`: its checks are registered ones; its response is an application route.
        let health = match config.health().filter(|h| h.enabled) {
            Some(factory) => {
                let health = Readiness::new(factory, &health_checks.checks)?;
                routes = routes.merge(health.router(&factory.health_check_url_paths));
                Some((health, shutdown_wait(factory)))
            }
            None => None,
        };
        register_metrics(&metrics, logging)?;
        for (name, counter) in counters {
            let counter = counter.clone();
            metrics.gauge(name, &[], move || {
                counter.load(std::sync::atomic::Ordering::Relaxed) as f64
            })?;
        }
        let admin = Admin {
            config: config.admin().clone(),
            health_checks,
            tasks,
            metrics: metrics.clone(),
            logging: logging.cloned(),
            runtime: tokio::runtime::Handle::current(),
        };
        // Managed resources start before the ports open, in registration order.
        let managed = lifecycle.start().await?;
        let health = health.map(|(health, wait)| Scheduled {
            tasks: health.schedule(),
            health,
            wait,
        });
        let server = match Server::start(
            config.server(),
            routes,
            admin.router(),
            &metrics,
            app.name(),
        )
        .await
        {
            Ok(s) => s.with_streams(streams),
            Err(e) => {
                managed.stop().await;
                return Err(e.into());
            }
        };
        let reporters = match Reporters::start(config.metrics(), &metrics) {
            Ok(r) => r,
            Err(e) => {
                server.shutdown().await;
                managed.stop().await;
                return Err(e.into());
            }
        };
        tracing::info!(target: "ferrowizard::server", "started {}", app.name());
        Ok(Running {
            server,
            managed,
            reporters,
            health,
        })
    }

    /// The bound connectors.
    pub(crate) fn bound(&self) -> &[Bound] {
        self.server.bound()
    }

    /// Stops accepting, drains the requests within the grace period, stops the managed
    /// resources in reverse, then the reporters (after the last request, so that
    /// `reportOnStop`'s report counts it). Returns the connections cut at the end of the grace
    /// period.
    pub(crate) async fn stop(self) -> usize {
        // `delayedShutdownHandlerEnabled`: not ready, still serving, so that load balancers
        // stop sending before the ports close.
        if let Some(Scheduled {
            health,
            wait: Some(wait),
            ..
        }) = &self.health
        {
            health.shutting_down();
            tracing::info!(target: "ferrowizard::health", wait_ms = wait.as_millis() as u64, "delayed shutdown: reporting not ready");
            tokio::time::sleep(*wait).await;
        }
        let left = self.server.shutdown().await;
        for task in self.health.iter().flat_map(|h| &h.tasks) {
            task.abort();
        }
        self.managed.stop().await;
        let reporters = self.reporters;
        let _ = tokio::task::spawn_blocking(move || reporters.stop()).await;
        left
    }
}

/// What ferrowizard publishes besides the server's own metrics: the process, the logging
/// pipeline's counters, and whatever the `metrics` crate's macros record.
fn register_metrics(
    metrics: &ferrowizard_metrics::MetricRegistry,
    logging: Option<&Arc<ferrowizard_logging::Logging>>,
) -> Result<(), ferrowizard_metrics::RegistryError> {
    crate::admin::metrics::register_process(metrics)?;
    if let Some(logging) = logging {
        let logging = logging.clone();
        crate::admin::metrics::register_appenders(metrics, Arc::new(move || logging.stats()))?;
    }
    // Another recorder installed first (a test harness, say) keeps its place.
    let _ = ferrowizard_metrics::install_recorder(metrics);
    Ok(())
}
