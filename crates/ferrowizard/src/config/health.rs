//! `health:`, DropWizard 2.1's scheduled health checks: each configured check runs on its own
//! schedule and flips its state after a number of failures or successes; the application is
//! ready while every critical check is healthy, and says so at `healthCheckUrlPaths` on the
//! application port. Absent: nothing is scheduled and no path is served (as in DropWizard).

use ferrowizard_config::{Duration, section};
use serde::{Deserialize, Serialize};

section! {
    /// `health:`.
    pub struct HealthFactory {
        /// Schedule the checks and serve `healthCheckUrlPaths` (false: as if `health:` were
        /// absent).
        enabled: bool = true,
        /// On SIGTERM, report not ready for `shutdownWaitPeriod` while still serving, so that
        /// a load balancer stops sending before the ports close.
        delayed_shutdown_handler_enabled: bool = false,
        /// How long the service reports not ready before it drains (`delayedShutdownHandlerEnabled`).
        shutdown_wait_period: Duration = Duration::seconds(15),
        /// Where the readiness response is served, on the application connectors.
        #[garde(length(min = 1), inner(custom(absolute_path)))]
        health_check_url_paths: Vec<String> = vec!["/health-check".to_owned()],
        /// The application's state before any check changes it.
        initial_overall_state: bool = true,
        /// The scheduled checks: each names a check the application registers.
        #[garde(dive)]
        health_checks: Vec<HealthCheckConfig> = Vec::new(),
        /// How the response is sent.
        #[garde(dive)]
        responder: ResponderFactory = ResponderFactory::default(),
    }
}

section! {
    /// `health.healthChecks[]`: one scheduled check.
    pub struct HealthCheckConfig {
        /// The name the application registered the check under (`Environment::health_check`).
        #[garde(length(min = 1))]
        name: String = String::new(),
        /// `ready` (the default) or `alive`; an `alive` check is critical.
        r#type: CheckType = CheckType::Ready,
        /// Whether the application is not ready while this check is unhealthy.
        critical: bool = false,
        /// The check's state before its first run.
        initial_state: bool = true,
        /// When it runs, and how many results flip its state.
        #[garde(dive)]
        schedule: Schedule = Schedule::default(),
    }
}

section! {
    /// `health.healthChecks[].schedule`.
    pub struct Schedule {
        /// Between runs while the check is healthy.
        #[garde(custom(ferrowizard_config::positive_duration))]
        check_interval: Duration = Duration::seconds(5),
        /// Between runs while it is unhealthy.
        #[garde(custom(ferrowizard_config::positive_duration))]
        downtime_interval: Duration = Duration::seconds(30),
        /// Before the first run (unset: `checkInterval`).
        initial_delay: Option<Duration> = None,
        /// Unhealthy results, since the state last changed, that make a healthy check unhealthy.
        failure_attempts: u32 = 3,
        /// Healthy results, since the state last changed, that make an unhealthy check healthy.
        success_attempts: u32 = 2,
    }
}

section! {
    /// `health.responder`: the readiness response's headers.
    pub struct ResponderFactory {
        /// Send `Cache-Control` with `cacheControlValue`.
        cache_control_enabled: bool = true,
        /// The `Cache-Control` value.
        cache_control_value: String = "no-store".to_owned(),
    }
}

/// What a check tells: readiness (`ready`) or liveness (`alive`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, garde::Validate)]
#[serde(rename_all = "lowercase")]
#[garde(allow_unvalidated)]
pub enum CheckType {
    /// Whether the application should receive traffic.
    #[default]
    Ready,
    /// Whether the application runs at all: critical whatever `critical` says.
    Alive,
}

fn absolute_path(path: &String, _: &()) -> garde::Result {
    if path.starts_with('/') {
        Ok(())
    } else {
        Err(garde::Error::new(format!("{path:?} must start with /")))
    }
}
