//! Protection a connector applies before the application sees a request.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};

use axum::body::Body;
use http::{Method, Request, Response, StatusCode};
use tokio::sync::Semaphore;
use tower::{Layer, Service};

type BoxFuture<T> = Pin<Box<dyn std::future::Future<Output = T> + Send>>;

/// `maxThreads` requests run at once; up to `maxQueuedRequests` more wait for a slot; any
/// beyond that get 503 at once (and are counted), rather than queuing until they time out,
/// which is what made the seed's service fail 14% of its requests.
#[derive(Clone, Debug)]
pub struct OverloadLayer {
    state: Arc<Overload>,
}

/// The shared counters and permits of an [`OverloadLayer`].
#[derive(Debug)]
pub struct Overload {
    running: Arc<Semaphore>,
    admitted: Arc<Semaphore>,
    rejected: AtomicU64,
}

impl Overload {
    /// Requests answered 503 because the server was full.
    pub fn rejected(&self) -> u64 {
        self.rejected.load(Relaxed)
    }
}

impl OverloadLayer {
    /// At most `max_running` at once, `max_queued` more waiting.
    pub fn new(max_running: usize, max_queued: usize) -> Self {
        let running = max_running.max(1);
        OverloadLayer {
            state: Arc::new(Overload {
                running: Arc::new(Semaphore::new(running)),
                admitted: Arc::new(Semaphore::new(
                    running
                        .saturating_add(max_queued)
                        .min(Semaphore::MAX_PERMITS),
                )),
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
        let Ok(admitted) = self.state.admitted.clone().try_acquire_owned() else {
            self.state.rejected.fetch_add(1, Relaxed);
            tracing::debug!(target: "ferrowizard::server::overload", uri = %req.uri(), "server full: 503");
            return Box::pin(async {
                Ok(plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "Service Unavailable: the server is at capacity\n",
                ))
            });
        };
        let running = self.state.running.clone();
        let mut inner = self.inner.clone();
        std::mem::swap(&mut inner, &mut self.inner);
        Box::pin(async move {
            let _admitted = admitted;
            let _running = running.acquire_owned().await;
            inner.call(req).await
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
