//! Protection a connector applies before the application sees a request.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::{AcqRel, Acquire, Relaxed, SeqCst};
use std::sync::atomic::{AtomicU64, AtomicUsize};
use std::task::{Context, Poll};

use axum::body::Body;
use http::{Method, Request, Response, StatusCode};
use tokio::sync::Notify;
use tower::{Layer, Service};

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// `maxThreads` requests run at once; up to `maxQueuedRequests` more wait for a slot; any
/// beyond that get 503 at once (and are counted), rather than queuing until they time out,
/// which is what made the seed's service fail 14% of its requests.
#[derive(Clone, Debug)]
pub struct OverloadLayer {
    state: Arc<Overload>,
}

/// The shared counters of an [`OverloadLayer`].
///
/// Atomics rather than `tokio::sync::Semaphore`: a semaphore takes its waiters' mutex on
/// every release, i.e. twice per request on a lock every worker shares. Here admission and
/// a free slot are a compare-and-swap each, and only a request that must wait for a slot
/// touches the `Notify`.
#[derive(Debug)]
pub struct Overload {
    max_running: usize,
    max_admitted: usize,
    running: AtomicUsize,
    admitted: AtomicUsize,
    waiting: AtomicUsize,
    slot_freed: Notify,
    rejected: AtomicU64,
}

/// Increments `counter` if it is below `max`.
fn take(counter: &AtomicUsize, max: usize) -> bool {
    counter
        .fetch_update(AcqRel, Acquire, |n| (n < max).then_some(n + 1))
        .is_ok()
}

impl Overload {
    /// Requests answered 503 because the server was full.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Relaxed)
    }

    /// Waits for a running slot; the returned guard frees it.
    async fn run(self: Arc<Self>) -> Slot {
        loop {
            if take(&self.running, self.max_running) {
                return Slot(self);
            }
            let me = self.clone();
            let notified = me.slot_freed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // Counted as waiting before the second look, so that a slot freed in between
            // is announced to us.
            let waiting = Waiting::new(&me.waiting);
            if take(&self.running, self.max_running) {
                return Slot(self);
            }
            notified.await;
            drop(waiting);
        }
    }
}

/// Counts a waiter while it lives (also when its request is dropped while waiting).
struct Waiting<'a>(&'a AtomicUsize);

impl<'a> Waiting<'a> {
    fn new(counter: &'a AtomicUsize) -> Self {
        counter.fetch_add(1, SeqCst);
        Waiting(counter)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

/// A running request's slot.
struct Slot(Arc<Overload>);

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, SeqCst);
        if self.0.waiting.load(SeqCst) > 0 {
            self.0.slot_freed.notify_one();
        }
    }
}

/// An admitted request (running or waiting); dropping it, also when the client goes away
/// while it waits, frees its place.
struct Admission(Arc<Overload>);

impl Drop for Admission {
    fn drop(&mut self) {
        self.0.admitted.fetch_sub(1, AcqRel);
    }
}

impl OverloadLayer {
    /// At most `max_running` at once, `max_queued` more waiting.
    pub fn new(max_running: usize, max_queued: usize) -> Self {
        let max_running = max_running.max(1);
        OverloadLayer {
            state: Arc::new(Overload {
                max_running,
                max_admitted: max_running.saturating_add(max_queued),
                running: AtomicUsize::new(0),
                admitted: AtomicUsize::new(0),
                waiting: AtomicUsize::new(0),
                slot_freed: Notify::new(),
                rejected: AtomicU64::new(0),
            }),
        }
    }

    /// The counters.
    pub fn state(&self) -> Arc<Overload> {
        self.state.clone()
    }
}

impl<S> Layer<S> for OverloadLayer {
    type Service = OverloadService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        OverloadService {
            inner,
            state: self.state.clone(),
        }
    }
}

/// See [`OverloadLayer`].
#[derive(Clone, Debug)]
pub struct OverloadService<S> {
    inner: S,
    state: Arc<Overload>,
}

impl<S, B> Service<Request<B>> for OverloadService<S>
where
    S: Service<Request<B>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    B: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if !take(&self.state.admitted, self.state.max_admitted) {
            self.state.rejected.fetch_add(1, Relaxed);
            tracing::debug!(target: "ferrowizard::server::overload", uri = %req.uri(), "server full: 503");
            return Box::pin(async {
                Ok(plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: the server is at capacity\n",
                ))
            });
        };
        let admission = Admission(self.state.clone());
        let mut inner = self.inner.clone();
        std::mem::swap(&mut inner, &mut self.inner);
        Box::pin(async move {
            let _slot = admission.0.clone().run().await;
            let response = inner.call(req).await;
            drop(admission);
            response
        })
    }
}

/// A short text response.
pub fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Methods outside `allowedMethods` get 405.
#[derive(Clone, Debug)]
pub struct AllowedMethodsLayer {
    allowed: Arc<[Method]>,
}

impl AllowedMethodsLayer {
    /// Allows exactly these methods (invalid names are skipped; the config validates them).
    pub fn new(methods: &[String]) -> Self {
        AllowedMethodsLayer {
            allowed: methods
                .iter()
                .filter_map(|m| Method::from_bytes(m.as_bytes()).ok())
                .collect(),
        }
    }
}

impl<S> Layer<S> for AllowedMethodsLayer {
    type Service = AllowedMethods<S>;

    fn layer(&self, inner: S) -> Self::Service {
        AllowedMethods {
            inner,
            allowed: self.allowed.clone(),
        }
    }
}

/// See [`AllowedMethodsLayer`].
#[derive(Clone, Debug)]
pub struct AllowedMethods<S> {
    inner: S,
    allowed: Arc<[Method]>,
}

impl<S, B> Service<Request<B>> for AllowedMethods<S>
where
    S: Service<Request<B>, Response = Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = BoxFuture<Result<Response<Body>, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        if self.allowed.contains(req.method()) {
            Box::pin(self.inner.call(req))
        } else {
            Box::pin(async {
                Ok(plain(
                    StatusCode::METHOD_NOT_ALLOWED,
                    "Method Not Allowed\n",
                ))
            })
        }
    }
}
