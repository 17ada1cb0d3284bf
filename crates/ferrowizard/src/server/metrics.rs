//! The server's own metrics, DropWizard's `InstrumentedHandler` for this server: a timer of
//! every request, requests in progress, a meter per status class (the 503s of overload
//! included), and a timer per route *template* and method (so that `/quotes/{symbol}` is one
//! series however many symbols there are).

use std::cell::RefCell;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Instant;

use ferrowizard_metrics::{Meter, MetricRegistry, RegistryError, Timer};
use http::{Method, Request, Response};
use tower::{Layer, Service};

/// The metrics of every request on one server.
#[derive(Clone, Debug)]
pub struct RequestMetrics {
    registry: MetricRegistry,
    /// Tells registries apart in the per-thread cache of route timers.
    id: usize,
    requests: Timer,
    /// Requests in progress: a gauge (it goes down too), read from this.
    active: Arc<AtomicI64>,
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
        let active = Arc::new(AtomicI64::new(0));
        let read = active.clone();
        registry.gauge("ferrowizard.requests.active", &[], move || {
            read.load(Ordering::Relaxed) as f64
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

    fn finished(&self, started: Instant, status: u16) {
        self.requests.update(started.elapsed());
        if let Some(m) = self.classes.get(usize::from(status / 100).wrapping_sub(1)) {
            m.mark();
        }
    }

    /// The timer of `route` (a template) for `method`. Cached per thread: a worker asks the
    /// registry (a lock) once per route, not per request.
    pub fn route(&self, method: &Method, route: &str) -> Option<Timer> {
        type Cache = HashMap<usize, HashMap<Method, HashMap<String, Timer>>>;
        thread_local! {
            static ROUTES: RefCell<Cache> = RefCell::new(HashMap::new());
        }
        ROUTES.with(|cache| {
            let mut cache = cache.try_borrow_mut().ok()?;
            let by_method = cache
                .entry(self.id)
                .or_default()
                .entry(method.clone())
                .or_default();
            if let Some(t) = by_method.get(route) {
                return Some(t.clone());
            }
            let timer = self
                .registry
                .timer_with(
                    "ferrowizard.routes",
                    &[("method", method.as_str()), ("route", route)],
                )
                .ok()?;
            by_method.insert(route.to_owned(), timer.clone());
            Some(timer)
        })
    }
}

/// Adds [`RequestMetrics`] to a service.
#[derive(Clone, Debug)]
pub struct RequestMetricsLayer(pub Arc<RequestMetrics>);

impl<S> Layer<S> for RequestMetricsLayer {
    type Service = RequestMetricsService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestMetricsService {
            inner,
            metrics: self.0.clone(),
        }
    }
}

/// See [`RequestMetricsLayer`].
#[derive(Clone, Debug)]
pub struct RequestMetricsService<S> {
    inner: S,
    metrics: Arc<RequestMetrics>,
}

impl<S, B, RB> Service<Request<B>> for RequestMetricsService<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = Pin<Box<dyn std::future::Future<Output = Result<Response<RB>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let started = Instant::now();
        // One reference count per request, not one per metric.
        let active = Active::new(self.metrics.clone());
        let future = self.inner.call(req);
        Box::pin(async move {
            let result = future.await;
            if let Ok(response) = &result {
                active.0.finished(started, response.status().as_u16());
            }
            result
        })
    }
}

/// Counts a request in progress while it lives (also when the client goes away mid-way).
struct Active(Arc<RequestMetrics>);

impl Active {
    fn new(metrics: Arc<RequestMetrics>) -> Active {
        metrics.active.fetch_add(1, Ordering::Relaxed);
        Active(metrics)
    }
}

impl Drop for Active {
    fn drop(&mut self) {
        self.0.active.fetch_sub(1, Ordering::Relaxed);
    }
}
