//! `health:`, DropWizard 2.1's scheduled health checks: each configured check runs on its own
//! schedule and flips its state after a number of failures or successes; the application is
//! ready while every critical check is healthy, and says so at `healthCheckUrlPaths` on the
//! application port. Absent: nothing is scheduled and no path is served (as in DropWizard).

use ferrowizard_config::{Config, Duration};

/// `health:`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct HealthFactory {
    /// Schedule the checks and serve `healthCheckUrlPaths` (false: as if `health:` were
    /// absent).
    #[config(default = true)]
    pub enabled: bool,
    /// On SIGTERM, report not ready for `shutdownWaitPeriod` while still serving, so that
    /// a load balancer stops sending before the ports close.
    pub delayed_shutdown_handler_enabled: bool,
    /// How long the service reports not ready before it drains (`delayedShutdownHandlerEnabled`).
    #[config(default = Duration::seconds(15))]
    pub shutdown_wait_period: Duration,
    /// Where the readiness response is served, on the application connectors.
    #[config(
        default = vec!["/health-check".to_owned()],
        length(min = 1),
        inner(custom(absolute_path)),
    )]
    pub health_check_url_paths: Vec<String>,
    /// The application's state before any check changes it.
    #[config(default = true)]
    pub initial_overall_state: bool,
    /// The scheduled checks: each names a check the application registers.
    pub health_checks: Vec<HealthCheckConfig>,
    /// How the response is sent.
    pub responder: ResponderFactory,
}

/// `health.healthChecks[]`: one scheduled check.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct HealthCheckConfig {
    /// The name the application registered the check under (`Environment::health_check`).
    #[config(length(min = 1))]
    pub name: String,
    /// `ready` (the default) or `alive`; an `alive` check is critical.
    #[config(default = CheckType::Ready)]
    pub r#type: CheckType,
    /// Whether the application is not ready while this check is unhealthy.
    pub critical: bool,
    /// The check's state before its first run.
    #[config(default = true)]
    pub initial_state: bool,
    /// When it runs, and how many results flip its state.
    pub schedule: Schedule,
}

/// `health.healthChecks[].schedule`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Schedule {
    /// Between runs while the check is healthy.
    #[config(default = Duration::seconds(5), custom(ferrowizard_config::positive_duration))]
    pub check_interval: Duration,
    /// Between runs while it is unhealthy.
    #[config(default = Duration::seconds(30), custom(ferrowizard_config::positive_duration))]
    pub downtime_interval: Duration,
    /// Before the first run (unset: `checkInterval`).
    pub initial_delay: Option<Duration>,
    /// Unhealthy results, since the state last changed, that make a healthy check unhealthy.
    #[config(default = 3)]
    pub failure_attempts: u32,
    /// Healthy results, since the state last changed, that make an unhealthy check healthy.
    #[config(default = 2)]
    pub success_attempts: u32,
}

/// `health.responder`: the readiness response's headers.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct ResponderFactory {
    /// Send `Cache-Control` with `cacheControlValue`.
    #[config(default = true)]
    pub cache_control_enabled: bool,
    /// The `Cache-Control` value.
    #[config(default = "no-store".to_owned())]
    pub cache_control_value: String,
}

/// What a check tells: readiness (`ready`) or liveness (`alive`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Config)]
#[config(rename_all = "lowercase")]
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
