//! The server's own metrics, DropWizard's `InstrumentedHandler` for this server: a timer of
//! every request, requests in progress, a meter per status class (the 503s of overload
//! included), and a timer per route *template* and method (so that `/quotes/{symbol}` is one
//! series however many symbols there are).

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use axum::extract::MatchedPath;
use rustc_hash::{FxBuildHasher, FxHashSet};

use ferrowizard_metrics::{Adder, Meter, MetricRegistry, RegistryError, Timer};
use http::Method;

/// The metrics of every request on one server.
#[derive(Clone, Debug)]
pub struct RequestMetrics {
    registry: MetricRegistry,
    /// Tells registries apart in the per-thread cache of route timers.
    id: usize,
    requests: Timer,
    /// Requests in progress: a gauge (it goes down too), read from this.
    active: Arc<Adder>,
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
        registry.describe("ferrowizard.requests.active", "Requests being handled now");
        registry.describe(
            "ferrowizard.responses",
            "Responses by status class (503s of overload included)",
        );
        registry.describe(
            "ferrowizard.routes",
            "Requests by route template and method, from routed to response head",
        );
        let class = |c: &str| registry.meter_with("ferrowizard.responses", &[("class", c)]);
        let active = Arc::new(Adder::new());
        let read = active.clone();
        registry.gauge("ferrowizard.requests.active", &[], move || {
            read.sum() as f64
        })?;
        Ok(RequestMetrics {
            registry: registry.clone(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            requests: registry.timer("ferrowizard.requests")?,
            active,
            classes: [
                class("1xx")?,
                class("2xx")?,
                class("3xx")?,
                class("4xx")?,
                class("5xx")?,
            ],
        })
    }

    /// A request arrived.
    pub(crate) fn started(&self) {
        self.active.add(1);
    }

    /// A request went away before its response (the client closed the connection).
    pub(crate) fn abandoned(&self) {
        self.active.add(-1);
    }

    /// The request that arrived at `started` has, at `now`, a response of `status`.
    pub(crate) fn finished(&self, started: Instant, now: Instant, status: u16) {
        self.active.add(-1);
        self.requests
            .update_at(now, now.saturating_duration_since(started));
        if let Some(m) = self.classes.get(usize::from(status / 100).wrapping_sub(1)) {
            m.mark();
        }
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

/// A route template the router matched, by identity: the address and length of axum's one
/// copy of its text.
///
/// Why not a clone of axum's `MatchedPath`: that is a reference count every worker bumps on
/// the same allocation, as axum does for every request of the route, and each bump moves the
/// count's cache line between the cores (noting and timing the route measured ~0.4 µs of CPU a
/// request that way on this project's 2-core machine, BENCHMARKS.md). Identity is sound
/// because [`TEMPLATES`] keeps every template seen alive for the life of the process: no other
/// text can take its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RouteId(usize, usize);

/// Every route template ever matched (a few per application), kept alive; see [`RouteId`].
static TEMPLATES: Mutex<Vec<MatchedPath>> = Mutex::new(Vec::new());

/// Copies of one template's text kept in [`TEMPLATES`] at most.
const COPIES_KEPT: usize = 8;

impl RouteId {
    /// The identity of `route`, which is kept alive from now on (or, past [`COPIES_KEPT`]
    /// copies of its text, of the first copy kept).
    fn of(route: &MatchedPath) -> RouteId {
        let id = RouteId(route.as_str().as_ptr() as usize, route.as_str().len());
        thread_local! {
            /// The templates this thread has already made sure are kept.
            static SEEN: RefCell<FxHashSet<RouteId>> = RefCell::default();
        }
        if SEEN.with(|seen| seen.try_borrow().is_ok_and(|s| s.contains(&id))) {
            return id;
        }
        let mut all = TEMPLATES.lock().unwrap_or_else(PoisonError::into_inner);
        if !all.iter().any(|t| id.is(t)) {
            // Each router has its own copy of a template (two servers in one process: two
            // copies), each kept so that its requests take the fast path above. But a
            // `MatchedPath` made afresh for every request (axum does that for a router nested
            // in another at run time) must not add an entry per request: past a few copies of
            // one text, the first copy stands for the rest.
            let mut same = all.iter().filter(|t| t.as_str() == route.as_str());
            if let Some(first) = same.next()
                && same.count() + 1 >= COPIES_KEPT
            {
                return RouteId(first.as_str().as_ptr() as usize, first.as_str().len());
            }
            all.push(route.clone());
        }
        drop(all);
        SEEN.with(|seen| {
            if let Ok(mut seen) = seen.try_borrow_mut() {
                seen.insert(id);
            }
        });
        id
    }

    fn is(self, template: &MatchedPath) -> bool {
        template.as_str().as_ptr() as usize == self.0 && template.as_str().len() == self.1
    }

    /// The template's text (a lock: once per route and thread).
    fn template(self) -> Option<MatchedPath> {
        TEMPLATES
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|t| self.is(t))
            .cloned()
    }
}

thread_local! {
    /// The route the router matched for the request being called on this thread: set by
    /// [`Routed`] inside the router, taken by the gate as soon as the router's `call` returns
    /// (the same synchronous call, so the same thread).
    static MATCHED: RefCell<Option<(Method, RouteId)>> = const { RefCell::new(None) };
}

/// Takes what [`Routed`] noted for the request just handed to the router.
pub(crate) fn take_matched() -> Option<(Method, RouteId)> {
    MATCHED.with(|m| m.try_borrow_mut().ok().and_then(|mut m| m.take()))
}

/// Added to the router as a route layer: the `routed` DEBUG event with the route template,
/// and the template noted for the gate, which times the request under its route (one clock
/// reading at each end serves every timer; see `super::gate`).
#[derive(Clone, Copy, Debug, Default)]
pub struct RouteLayer;

impl<S> tower::Layer<S> for RouteLayer {
    type Service = Routed<S>;

    fn layer(&self, inner: S) -> Routed<S> {
        Routed { inner }
    }
}

/// See [`RouteLayer`].
#[derive(Clone, Debug)]
pub struct Routed<S> {
    inner: S,
}

impl<S, B> tower::Service<http::Request<B>> for Routed<S>
where
    S: tower::Service<http::Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<B>) -> Self::Future {
        if let Some(route) = req.extensions().get::<MatchedPath>() {
            tracing::debug!(
                target: "ferrowizard::server::routing",
                method = req.method().as_str(),
                route = route.as_str(),
                "routed"
            );
            let noted = (req.method().clone(), RouteId::of(route));
            MATCHED.with(|m| {
                if let Ok(mut m) = m.try_borrow_mut() {
                    *m = Some(noted);
                }
            });
        }
        self.inner.call(req)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::routing::get;
    use tower::ServiceExt;

    /// A `MatchedPath` for `path`, as axum makes it in `router`.
    async fn matched(router: &axum::Router, path: &str) -> MatchedPath {
        let (tx, rx) = std::sync::mpsc::channel();
        let probe = router.clone().layer(axum::middleware::from_fn(
            move |req: axum::extract::Request, next: axum::middleware::Next| {
                let tx = tx.clone();
                async move {
                    let _ = tx.send(req.extensions().get::<MatchedPath>().cloned());
                    next.run(req).await
                }
            },
        ));
        let request = http::Request::get(path)
            .body(axum::body::Body::empty())
            .unwrap();
        let _ = probe.oneshot(request).await;
        rx.recv().unwrap().unwrap()
    }

    #[tokio::test]
    async fn a_route_is_known_by_its_copy_and_copies_made_per_request_are_not_kept() {
        // Text no other test uses: `TEMPLATES` is shared by the whole test binary.
        let template = "/route-id-test/{id}";
        let copies = || {
            TEMPLATES
                .lock()
                .unwrap()
                .iter()
                .filter(|t| t.as_str() == template)
                .count()
        };
        let router = axum::Router::new().route(template, get(|| async {}));
        let first = matched(&router, "/route-id-test/1").await;
        let again = matched(&router, "/route-id-test/2").await;
        assert_eq!(
            RouteId::of(&first),
            RouteId::of(&again),
            "one copy per router"
        );
        assert_eq!(RouteId::of(&first).template().unwrap().as_str(), template);
        assert_eq!(copies(), 1);
        // Copies at other addresses (other routers, or made afresh per request): a few are
        // kept, then the first stands for them all.
        for i in 0..3 * COPIES_KEPT {
            let other = axum::Router::new().route(template, get(|| async {}));
            let path = format!("/route-id-test/{i}");
            let id = RouteId::of(&matched(&other, &path).await);
            assert_eq!(id.template().unwrap().as_str(), template);
        }
        assert_eq!(copies(), COPIES_KEPT);
    }
}
