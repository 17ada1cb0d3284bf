//! Managed resources (DropWizard's `Managed`): started in registration order before the
//! server opens its ports, stopped in reverse after its last request, each within a timeout.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use crate::errors::RunError;

/// A resource with a lifecycle: a connection pool, a cache to warm, a consumer to start.
/// Registered with [`Environment::manage`](crate::Environment::manage).
///
/// ```
/// use ferrowizard::{Managed, RunError};
///
/// struct Pool;
///
/// impl Managed for Pool {
///     async fn start(&self) -> Result<(), RunError> {
///         // Open the connections; an error stops the service from starting.
///         Ok(())
///     }
///
///     async fn stop(&self) -> Result<(), RunError> {
///         // Close them, after the last request was answered.
///         Ok(())
///     }
/// }
/// ```
pub trait Managed: Send + Sync + 'static {
    /// Starts the resource. An error (or running past [`timeout`](Self::timeout)) aborts the
    /// service's startup: the resources started before it are stopped, and the service exits
    /// with status 1 and one line naming this resource.
    fn start(&self) -> impl Future<Output = Result<(), RunError>> + Send;

    /// Stops the resource. An error (or running past [`timeout`](Self::timeout)) is logged;
    /// the other resources still stop.
    fn stop(&self) -> impl Future<Output = Result<(), RunError>> + Send;

    /// Its name in messages: the type's name unless told otherwise.
    fn name(&self) -> String {
        let full = std::any::type_name::<Self>();
        full.rsplit("::").next().unwrap_or(full).to_owned()
    }

    /// How long `start` and `stop` each may take: 30 seconds unless told otherwise.
    fn timeout(&self) -> Duration {
        Duration::from_secs(30)
    }
}

/// A resource shared with the routes (`Arc<Pool>` in their state) is managed as the resource.
impl<M: Managed> Managed for std::sync::Arc<M> {
    fn start(&self) -> impl Future<Output = Result<(), RunError>> + Send {
        (**self).start()
    }

    fn stop(&self) -> impl Future<Output = Result<(), RunError>> + Send {
        (**self).stop()
    }

    fn name(&self) -> String {
        (**self).name()
    }

    fn timeout(&self) -> Duration {
        (**self).timeout()
    }
}

type Boxed<'a> = Pin<Box<dyn Future<Output = Result<(), RunError>> + Send + 'a>>;

/// [`Managed`] as a trait object.
trait Erased: Send + Sync {
    fn start(&self) -> Boxed<'_>;
    fn stop(&self) -> Boxed<'_>;
    fn name(&self) -> String;
    fn timeout(&self) -> Duration;
}

impl<M: Managed> Erased for M {
    fn start(&self) -> Boxed<'_> {
        Box::pin(Managed::start(self))
    }

    fn stop(&self) -> Boxed<'_> {
        Box::pin(Managed::stop(self))
    }

    fn name(&self) -> String {
        Managed::name(self)
    }

    fn timeout(&self) -> Duration {
        Managed::timeout(self)
    }
}

/// The resources an application registered, in order.
#[derive(Default)]
pub(crate) struct Lifecycle {
    resources: Vec<Box<dyn Erased>>,
}

/// The resources started, to stop in reverse.
pub(crate) struct Started {
    resources: Vec<Box<dyn Erased>>,
}

/// A resource that did not start.
#[derive(Debug, thiserror::Error)]
#[error("{name} did not start: {reason}")]
pub(crate) struct StartFailed {
    name: String,
    reason: String,
}

impl Lifecycle {
    pub(crate) fn add(&mut self, resource: impl Managed) {
        self.resources.push(Box::new(resource));
    }

    /// Starts every resource in registration order. On a failure, the ones started are
    /// stopped in reverse and the failure is returned.
    pub(crate) async fn start(mut self) -> Result<Started, StartFailed> {
        for (i, resource) in self.resources.iter().enumerate() {
            let name = resource.name();
            let timeout = resource.timeout();
            tracing::debug!(target: "ferrowizard::lifecycle", resource = name.as_str(), "starting");
            let reason = match tokio::time::timeout(timeout, resource.start()).await {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => e.to_string(),
                Err(_) => format!("not started within {timeout:?}"),
            };
            self.resources.truncate(i);
            Started {
                resources: self.resources,
            }
            .stop()
            .await;
            return Err(StartFailed { name, reason });
        }
        Ok(Started {
            resources: self.resources,
        })
    }
}

impl Started {
    /// Stops the resources in reverse order of their start; a failure is logged and the
    /// others still stop.
    pub(crate) async fn stop(self) {
        for resource in self.resources.iter().rev() {
            let name = resource.name();
            let timeout = resource.timeout();
            match tokio::time::timeout(timeout, resource.stop()).await {
                Ok(Ok(())) => {
                    tracing::debug!(target: "ferrowizard::lifecycle", resource = name.as_str(), "stopped");
                }
                Ok(Err(e)) => {
                    tracing::error!(target: "ferrowizard::lifecycle", resource = name.as_str(), error = %e, "did not stop cleanly");
                }
                Err(_) => {
                    tracing::error!(target: "ferrowizard::lifecycle", resource = name.as_str(), timeout_ms = timeout.as_millis() as u64, "did not stop within its timeout");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    /// Notes its start and stop in a shared journal; `fails` at start when told.
    struct Probe {
        name: &'static str,
        journal: Arc<Mutex<Vec<String>>>,
        fails: bool,
        slow: bool,
    }

    impl Managed for Probe {
        async fn start(&self) -> Result<(), RunError> {
            if self.slow {
                tokio::time::sleep(Duration::from_secs(60)).await;
            }
            self.journal
                .lock()
                .unwrap()
                .push(format!("start {}", self.name));
            if self.fails {
                return Err(format!("{} refused", self.name).into());
            }
            Ok(())
        }

        async fn stop(&self) -> Result<(), RunError> {
            self.journal
                .lock()
                .unwrap()
                .push(format!("stop {}", self.name));
            if self.name == "b" {
                return Err("b failed to stop".into());
            }
            Ok(())
        }

        fn name(&self) -> String {
            self.name.to_owned()
        }

        fn timeout(&self) -> Duration {
            Duration::from_millis(200)
        }
    }

    fn lifecycle(journal: &Arc<Mutex<Vec<String>>>, failing: &str, slow: &str) -> Lifecycle {
        let mut l = Lifecycle::default();
        for name in ["a", "b", "c"] {
            l.add(Probe {
                name,
                journal: journal.clone(),
                fails: name == failing,
                slow: name == slow,
            });
        }
        l
    }

    /// Catches: stopping in registration order, a failed stop ending the others' stops, or a
    /// failed start leaving the started ones running.
    #[tokio::test]
    async fn started_in_order_stopped_in_reverse_and_a_failed_start_undoes_the_rest() {
        let journal = Arc::default();
        let l = lifecycle(&journal, "", "");
        l.start().await.unwrap().stop().await;
        assert_eq!(
            *journal.lock().unwrap(),
            [
                "start a", "start b", "start c", "stop c", "stop b", "stop a"
            ]
        );

        let journal = Arc::default();
        let l = lifecycle(&journal, "c", "");
        let failed = l.start().await.err().unwrap();
        assert_eq!(failed.to_string(), "c did not start: c refused");
        assert_eq!(
            *journal.lock().unwrap(),
            ["start a", "start b", "start c", "stop b", "stop a"]
        );

        let journal = Arc::default();
        let l = lifecycle(&journal, "", "b");
        let failed = l.start().await.err().unwrap();
        assert_eq!(
            failed.to_string(),
            "b did not start: not started within 200ms"
        );
        assert_eq!(*journal.lock().unwrap(), ["start a", "stop a"]);
    }
}
