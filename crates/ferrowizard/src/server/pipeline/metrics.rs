//! Stage 8, **measure**: the server's own metrics, DropWizard's `InstrumentedHandler` for this server: a timer of
//! every request, requests in progress, a meter per status class (the 503s of overload
//! included), and a timer per route *template* and method (so that `/quotes/{symbol}` is one
//! series however many symbols there are).

use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::{Duration, Instant};

use ferrowizard_metrics::{Meter, MetricRegistry, RegistryError, Timer};
use http::Method;

use crate::server::pipeline::admit::Overload;

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
    /// The timers of routes the route table does not hold (a merged router's, a known
    /// template's with a method of its own), by template and method.
    other_routes: Arc<OtherRoutes>,
    requests: Timer,
    /// 1xx to 5xx.
    classes: [Meter; 5],
}

impl RequestMetrics {
    /// Registers the server's metrics in `registry`.
    pub fn new(registry: &MetricRegistry) -> Result<RequestMetrics, RegistryError> {
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
            other_routes: Arc::default(),
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

    /// Records a request of `method` to the route `template` that ended at `now` after
    /// `took`, for a route the table does not hold. The registry (a lock, and a string key
    /// built) is asked once per route and method; see [`OtherRoutes`].
    pub(crate) fn record_route(
        &self,
        method: &Method,
        template: &str,
        now: Instant,
        took: Duration,
    ) {
        if self.other_routes.record(method, template, now, took) {
            return;
        }
        let Ok(timer) = self.registry.timer_with(
            "ferrowizard.routes",
            &[("method", method.as_str()), ("route", template)],
        ) else {
            tracing::debug!(target: "ferrowizard::server", "route timer unavailable");
            return;
        };
        timer.update_at(now, took);
        self.other_routes.keep(method, template, timer);
    }
}

/// The timers of routes the route table does not hold, by method and template.
///
/// A request finds its timer among the first [`OtherRoutes::SLOTS`] kept without a lock:
/// every worker reads these on every such request, and a lock's reader count would be a
/// cache line they all write. An application has a few such routes; past the slots, a
/// lock keeps the rest.
#[derive(Debug)]
struct OtherRoutes {
    slots: Box<[OnceLock<OtherRoute>]>,
    overflow: RwLock<Vec<OtherRoute>>,
}

#[derive(Debug)]
struct OtherRoute {
    method: Method,
    template: Box<str>,
    timer: Timer,
}

impl OtherRoute {
    fn is(&self, method: &Method, template: &str) -> bool {
        self.method == *method && *self.template == *template
    }
}

impl Default for OtherRoutes {
    fn default() -> Self {
        OtherRoutes {
            slots: (0..Self::SLOTS).map(|_| OnceLock::new()).collect(),
            overflow: RwLock::default(),
        }
    }
}

impl OtherRoutes {
    const SLOTS: usize = 64;

    /// Records `took` ending at `now` in the timer of `method` and `template`, if kept.
    fn record(&self, method: &Method, template: &str, now: Instant, took: Duration) -> bool {
        for slot in &self.slots {
            match slot.get() {
                Some(route) if route.is(method, template) => {
                    route.timer.update_at(now, took);
                    return true;
                }
                Some(_) => {}
                // Slots fill in order: the first empty one ends the search.
                None => return false,
            }
        }
        let overflow = self.overflow.read().unwrap_or_else(PoisonError::into_inner);
        match overflow.iter().find(|r| r.is(method, template)) {
            Some(route) => {
                route.timer.update_at(now, took);
                true
            }
            None => false,
        }
    }

    /// Keeps `timer` for `method` and `template` (once: a route kept already stays).
    fn keep(&self, method: &Method, template: &str, timer: Timer) {
        let mut route = OtherRoute {
            method: method.clone(),
            template: template.into(),
            timer,
        };
        for slot in &self.slots {
            match slot.set(route) {
                Ok(()) => return,
                Err(back) => {
                    if slot.get().is_some_and(|kept| kept.is(method, template)) {
                        return;
                    }
                    route = back;
                }
            }
        }
        let mut overflow = self
            .overflow
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        if !overflow.iter().any(|r| r.is(method, template)) {
            overflow.push(route);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Catches: a route past the lock-free slots never found again (a registry lookup per
    /// request), or a route kept twice.
    #[test]
    fn other_routes_are_timed_past_the_lock_free_slots() {
        let registry = MetricRegistry::new();
        let metrics = RequestMetrics::new(&registry).unwrap();
        let (now, took) = (Instant::now(), Duration::from_millis(1));
        let routes = OtherRoutes::SLOTS + 6;
        for round in 1..=3 {
            for i in 0..routes {
                metrics.record_route(&Method::GET, &format!("/r{i}"), now, took);
            }
            metrics.record_route(&Method::POST, "/r0", now, took);
            let kept = metrics
                .other_routes
                .slots
                .iter()
                .filter(|s| s.get().is_some());
            assert_eq!(kept.count(), OtherRoutes::SLOTS);
            let overflow = metrics.other_routes.overflow.read().unwrap().len();
            assert_eq!(overflow, routes + 1 - OtherRoutes::SLOTS);
            for (method, route) in [("GET", "/r0"), ("GET", "/r69"), ("POST", "/r0")] {
                let timer = registry
                    .timer_with(
                        "ferrowizard.routes",
                        &[("method", method), ("route", route)],
                    )
                    .unwrap();
                assert_eq!(timer.count(), round, "{method} {route}");
            }
        }
    }
}
