//! A health check and what it finds.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// What a health check found: healthy (with a message, or none) or unhealthy (with why), as
/// DropWizard's `HealthCheck.Result`.
///
/// ```
/// use ferrowizard::health::Health;
///
/// let lines = 3;
/// let found = if lines > 0 {
///     Health::healthy_with(format!("{lines} greetings"))
/// } else {
///     Health::unhealthy("no greetings")
/// };
/// assert!(found.is_healthy());
/// assert_eq!(found.message(), Some("3 greetings"));
/// assert_eq!(Health::unhealthy("down").message(), Some("down"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Health {
    /// Healthy, with what the check has to say, if anything.
    Healthy(Option<String>),
    /// Unhealthy, and why.
    Unhealthy(String),
}

impl Health {
    /// Healthy, with nothing to say.
    pub fn healthy() -> Self {
        Health::Healthy(None)
    }

    /// Healthy, with a message.
    pub fn healthy_with(message: impl Into<String>) -> Self {
        Health::Healthy(Some(message.into()))
    }

    /// Unhealthy, and why.
    pub fn unhealthy(message: impl Into<String>) -> Self {
        Health::Unhealthy(message.into())
    }

    /// Whether the check found the application healthy.
    pub fn is_healthy(&self) -> bool {
        matches!(self, Health::Healthy(_))
    }

    /// The message, if any.
    pub fn message(&self) -> Option<&str> {
        match self {
            Health::Healthy(message) => message.as_deref(),
            Health::Unhealthy(message) => Some(message),
        }
    }
}

/// A named health check, run by `/healthcheck` on the admin connector and by `health:`'s
/// schedules. A check that does not answer within `admin.healthChecks.timeout` is unhealthy.
///
/// Implement it on the state the check looks at: `check` borrows it, and an `Arc` of it is a
/// check too, so the state is shared with the routes without a clone per call. A closure
/// returning a future is a check as well, for checks that need no state: one that moves its
/// state into an `async move` block can run only once (`FnOnce`, error E0525), where the
/// trait's `&self` lends the state to every run.
///
/// ```
/// use std::sync::{Arc, RwLock};
///
/// use ferrowizard::health::{Health, HealthCheck};
///
/// struct Greetings {
///     lines: RwLock<Vec<String>>,
/// }
///
/// impl HealthCheck for Greetings {
///     async fn check(&self) -> Health {
///         match self.lines.read().map_or(0, |lines| lines.len()) {
///             0 => Health::unhealthy("no greetings"),
///             n => Health::healthy_with(format!("{n} greetings")),
///         }
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let greetings = Arc::new(Greetings { lines: RwLock::new(vec!["Hello".into()]) });
/// assert_eq!(greetings.check().await, Health::healthy_with("1 greetings"));
/// let always = || async { Health::healthy() };
/// assert!(always.check().await.is_healthy());
/// # });
/// ```
pub trait HealthCheck: Send + Sync + 'static {
    /// Checks.
    fn check(&self) -> impl Future<Output = Health> + Send;
}

impl<T: HealthCheck> HealthCheck for Arc<T> {
    fn check(&self) -> impl Future<Output = Health> + Send {
        (**self).check()
    }
}

impl<F, Fut> HealthCheck for F
where
    F: Fn() -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Health> + Send,
{
    fn check(&self) -> impl Future<Output = Health> + Send {
        self()
    }
}

/// A [`HealthCheck`] as the admin side and the schedules hold it.
pub(crate) trait Registered: Send + Sync + 'static {
    fn run(&self) -> Pin<Box<dyn Future<Output = Health> + Send + '_>>;
}

impl<T: HealthCheck> Registered for T {
    fn run(&self) -> Pin<Box<dyn Future<Output = Health> + Send + '_>> {
        Box::pin(self.check())
    }
}

/// The application's health checks, by name, in the order registered.
///
/// ```
/// use ferrowizard::health::{Health, HealthChecks};
///
/// let mut checks = HealthChecks::default();
/// checks.add("db", || async { Health::healthy() });
/// assert_eq!(checks.names().collect::<Vec<_>>(), ["db"]);
/// ```
#[derive(Clone, Default)]
pub struct HealthChecks {
    pub(crate) checks: Vec<(String, Arc<dyn Registered>)>,
}

impl HealthChecks {
    /// Adds `check` under `name`.
    pub fn add(&mut self, name: impl Into<String>, check: impl HealthCheck) -> &mut Self {
        self.checks.push((name.into(), Arc::new(check)));
        self
    }

    /// The checks' names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.checks.iter().map(|(name, _)| name.as_str())
    }

    /// Whether no check is registered.
    pub fn is_empty(&self) -> bool {
        self.checks.is_empty()
    }
}

impl std::fmt::Debug for HealthChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}
