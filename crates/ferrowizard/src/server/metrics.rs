//! The server's own metrics, DropWizard's `InstrumentedHandler` for this server: a timer of
//! every request, requests in progress, a meter per status class (the 503s of overload
//! included), and a timer per route *template* and method (so that `/quotes/{symbol}` is one
//! series however many symbols there are).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use rustc_hash::FxBuildHasher;

use ferrowizard_metrics::{Meter, MetricRegistry, RegistryError, Timer};
use http::Method;

use super::limits::Overload;
use super::routes::RouteId;

/// Registers `ferrowizard.requests.active`, the requests being handled now on the application
/// connectors: those their admission counts (`overloads`), running or waiting for a slot.
///
/// Read from the admission counts rather than kept by the metrics: a request already takes
/// its place there on arrival and gives it back when answered (or dropped); a count of its
/// own would be two more atomic additions a request, each behind a thread-local lookup.
pub fn register_active(
    registry: &MetricRegistry,
    overloads: Vec<Arc<Overload>>,
) -> Result<(), RegistryError> {
    registry.describe("ferrowizard.requests.active", "Requests being handled now");
    registry.gauge("ferrowizard.requests.active", &[], move || {
        overloads.iter().map(|o| o.admitted()).sum::<u64>() as f64
    })?;
    Ok(())
}

/// The metrics of every request on one server.
#[derive(Clone, Debug)]
pub struct RequestMetrics {
    registry: MetricRegistry,
    /// Tells registries apart in the per-thread cache of route timers.
    id: usize,
    requests: Timer,
    /// 1xx to 5xx.
    classes: [Meter; 5],
}

impl RequestMetrics {
    /// Registers the server's metrics in `registry`.
    pub fn new(registry: &MetricRegistry) -> Result<RequestMetrics, RegistryError> {
        static NEXT_ID: AtomicUsize = AtomicUsize::new(0);
        registry.describe(
            "ferrowizard.requests",
            "Requests, from received to response head",
        );
        registry.describe(
            "ferrowizard.responses",
            "Responses by status class (503s of overload included)",
        );
        registry.describe(
            "ferrowizard.routes",
            "Requests by route template and method, from routed to response head",
        );
        let class = |c: &str| registry.meter_with("ferrowizard.responses", &[("class", c)]);
        Ok(RequestMetrics {
            registry: registry.clone(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            requests: registry.timer("ferrowizard.requests")?,
            classes: [
                class("1xx")?,
                class("2xx")?,
                class("3xx")?,
                class("4xx")?,
                class("5xx")?,
            ],
        })
    }

    /// A request has, at `now` after `took`, a response of `status`.
    pub(crate) fn finished(&self, now: Instant, took: Duration, status: u16) {
        self.requests.update_at(now, took);
        if let Some(m) = self.classes.get(usize::from(status / 100).wrapping_sub(1)) {
            m.mark();
        }
    }

    /// Records a request of a known template (`cell`, `template`) with a standard `method`
    /// that ended at `now` after `took`: the timer is held by the server's route table, so
    /// that a request finds it without a lookup (the registry is asked once per route and
    /// method).
    pub(crate) fn record_known(
        &self,
        cell: &OnceLock<Timer>,
        template: &str,
        method: &Method,
        now: Instant,
        took: Duration,
    ) {
        let timer = match cell.get() {
            Some(timer) => timer,
            None => match self.registry.timer_with(
                "ferrowizard.routes",
                &[("method", method.as_str()), ("route", template)],
            ) {
                // Another thread may have set it first: the same timer, from the registry.
                Ok(timer) => cell.get_or_init(|| timer),
                Err(_) => {
                    tracing::debug!(target: "ferrowizard::server", "route timer unavailable");
                    return;
                }
            },
        };
        timer.update_at(now, took);
    }

    /// Records a request of `method` the router matched to `route` that ended at `now` after
    /// `took`. The route's timer is looked up in a per-thread cache: a worker asks the
    /// registry (a lock, and a string key built) once per route, not per request.
    pub(crate) fn record_route(
        &self,
        method: &Method,
        route: RouteId,
        now: Instant,
        took: Duration,
    ) {
        type Key = (usize, RouteId, Method);
        thread_local! {
            static ROUTES: RefCell<HashMap<Key, Timer, FxBuildHasher>> =
                RefCell::new(HashMap::default());
        }
        let key = (self.id, route, method.clone());
        let recorded = ROUTES.with(|cache| {
            let Ok(mut cache) = cache.try_borrow_mut() else {
                return false;
            };
            if let Some(timer) = cache.get(&key) {
                timer.update_at(now, took);
                return true;
            }
            let Some(template) = route.template() else {
                return false;
            };
            let Ok(timer) = self.registry.timer_with(
                "ferrowizard.routes",
                &[("method", method.as_str()), ("route", template.as_str())],
            ) else {
                return false;
            };
            timer.update_at(now, took);
            cache.insert(key, timer);
            true
        });
        if !recorded {
            tracing::debug!(target: "ferrowizard::server", "route timer unavailable");
        }
    }
}
