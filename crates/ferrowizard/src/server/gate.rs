//! The front door of a connector: everything between a connection and the router, in one
//! service.
//!
//! A request is timed and counted ([`RequestMetrics`]), checked against `allowedMethods`
//! (405) and the body size limit (413), admitted under `maxThreads` and `maxQueuedRequests`
//! or answered 503 at once ([`Overload`]), handed to the router (through tower-http's
//! compression when the client says which encodings it accepts), and logged in the request
//! log ([`RequestLog`]); a handler that panics becomes a 500 with an ERROR line while the
//! server serves on.
//!
//! Why one hand-written service rather than a stack of tower layers (tower-http's body
//! limit, compression and panic catching, an overload layer, a method layer and a
//! request-log layer): in such a stack each layer boxes its future, the overload layer
//! clones the whole stack below it per request, three layers re-box the response body, and
//! each keeps its own reference count on shared state, every one a cache line the workers
//! fight over (BENCHMARKS.md, "Server under load"). Here a request takes one reference to
//! the connector's shared state, keeps its state inline in one future, clones nothing, and
//! its body is re-boxed only when compressed or streamed to the request log.

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body::Body as _;
use pin_project_lite::pin_project;
use tower::Service;
use tower_http::compression::{Compression, CompressionLayer};

use super::compress::Compressible;
use super::connector::{AXUM_BODY_LIMIT, Answer, lift_axums_body_limit};
use super::limits::{Overload, plain};
use super::metrics::RequestMetrics;
use super::request_log::{Entry, RequestLog};
use super::routes::{Route, RouteTable};

type Compressor = Compressible;

/// What [`Gate`] needs from the configuration.
#[derive(Clone, Debug)]
pub struct GateSettings {
    /// `gzip.enabled`.
    pub gzip: bool,
    /// `gzip.minimumEntitySize`, bytes.
    pub minimum_entity_size: u64,
    /// `gzip.compressedMimeTypes`.
    pub compressed_mime_types: Vec<String>,
    /// `gzip.includedMethods`: the requests whose responses may be compressed.
    pub compressed_methods: Vec<String>,
    /// `allowedMethods`.
    pub allowed_methods: Vec<String>,
    /// `maxRequestBodySize`, bytes.
    pub max_body: u64,
}

/// What every request of a connection shares: reached through one reference count, which
/// is the connection's own (see `Gate`'s `Clone`).
#[derive(Clone)]
struct Shared {
    overload: Arc<Overload>,
    allowed: Box<[Method]>,
    /// `gzip.includedMethods`.
    compressed_methods: Box<[Method]>,
    max_body: u64,
    /// Responses at least this long may be compressed: they carry `Vary: Accept-Encoding`
    /// whoever asked, as tower-http's compression does (`None`: gzip is off).
    vary_from: Option<u64>,
    metrics: Option<RequestMetrics>,
    request_log: Option<Arc<RequestLog>>,
    /// The routes whose templates are known (see `super::routes`).
    routes: Arc<RouteTable>,
}

/// See the module docs. `S` is the router.
pub struct Gate<S> {
    plain: S,
    /// The router behind tower-http's compression (when `gzip.enabled`).
    compressing: Option<Compression<S, Compressor>>,
    shared: Arc<Shared>,
}

impl<S: Clone> Gate<S> {
    /// A gate in front of `router`.
    pub(crate) fn new(
        router: S,
        routes: Arc<RouteTable>,
        settings: &GateSettings,
        overload: Arc<Overload>,
        metrics: Option<RequestMetrics>,
        request_log: Option<Arc<RequestLog>>,
    ) -> Gate<S> {
        let compressing = settings.gzip.then(|| {
            let predicate = Compressible::new(
                settings.minimum_entity_size,
                &settings.compressed_mime_types,
            );
            tower::Layer::layer(
                &CompressionLayer::new().gzip(true).compress_when(predicate),
                router.clone(),
            )
        });
        Gate {
            plain: router,
            compressing,
            shared: Arc::new(Shared {
                overload,
                allowed: methods(&settings.allowed_methods),
                compressed_methods: methods(&settings.compressed_methods),
                max_body: settings.max_body,
                vary_from: settings.gzip.then_some(settings.minimum_entity_size),
                metrics,
                request_log,
                routes,
            }),
        }
    }
}

fn methods(names: &[String]) -> Box<[Method]> {
    names
        .iter()
        .filter_map(|m| Method::from_bytes(m.as_bytes()).ok())
        .collect()
}

/// A clone for a new connection gets a copy of the shared state behind a reference count of
/// its own: a request takes one count on it, and a count every worker took on one shared
/// `Arc` would move its cache line between cores twice per request.
impl<S: Clone> Clone for Gate<S> {
    fn clone(&self) -> Self {
        Gate {
            plain: self.plain.clone(),
            compressing: self.compressing.clone(),
            shared: Arc::new((*self.shared).clone()),
        }
    }
}

type BoxedResponse = Pin<Box<dyn Future<Output = Response<Body>> + Send>>;

impl Gate<axum::Router> {
    /// [`Service::call`] without asking [`Service::poll_ready`] first (axum's router is always
    /// ready, and tower-http's compression is ready when what it wraps is), for a connection,
    /// which hands over what it does with the response (`answer`): the future returned is
    /// the one hyper polls, with nothing wrapped around it.
    pub(crate) fn call_ready(
        &mut self,
        req: Request<Body>,
        answer: Answer,
    ) -> <Self as Service<Request<Body>>>::Future {
        self.call_with(req, Some(answer))
    }
}

/// What a gate serves: a router, as a tower service (axum's `Router`).
pub trait Inner:
    Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send + 'static>
    + Clone
    + Send
    + 'static
{
}

impl<S> Inner for S
where
    S: Service<Request<Body>, Response = Response<Body>, Error = Infallible>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
{
}

impl<S: Inner> Service<Request<Body>> for Gate<S> {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future =
        GateFuture<S::Future, tower_http::compression::ResponseFuture<S::Future, Compressor>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        // The router is always ready; asked anyway, as tower's contract wants.
        if let Some(c) = &mut self.compressing {
            std::task::ready!(c.poll_ready(cx))?;
        }
        self.plain.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        self.call_with(req, None)
    }
}

impl<S: Inner> Gate<S> {
    fn call_with(
        &mut self,
        mut req: Request<Body>,
        answer: Option<Answer>,
    ) -> <Self as Service<Request<Body>>>::Future {
        // Nothing noted for an earlier request (a router called outside a gate) is ours.
        let _ = super::routes::take_matched();
        let started = Instant::now();
        let shared = self.shared.clone();
        let heads = Heads::of(
            req.headers(),
            shared.request_log.is_some(),
            self.compressing.is_some(),
        );
        let entry = shared
            .request_log
            .as_ref()
            .and_then(|l| l.entry(&req, started, heads.referer, heads.user_agent));
        let accepts_encoding = heads.accept_encoding;
        let mut finish = Finish {
            shared,
            started,
            entry,
            route: None,
            answer,
            admitted: false,
            running: false,
        };
        let shared = &*finish.shared;
        if !shared.allowed.contains(req.method()) {
            let response = plain(StatusCode::METHOD_NOT_ALLOWED, "Method Not Allowed\n");
            return GateFuture::ready(response, finish);
        }
        // A declared length is checked now; an unknown one (chunked) as the body is read.
        match req.body().size_hint().upper() {
            Some(n) if n > shared.max_body => {
                let response = plain(StatusCode::PAYLOAD_TOO_LARGE, "Payload Too Large\n");
                return GateFuture::ready(response, finish);
            }
            // Longer than axum's own limit, and allowed: the handler may read it all.
            Some(n) if n > AXUM_BODY_LIMIT => lift_axums_body_limit(req.extensions_mut()),
            Some(_) => {}
            None => {
                let limit = usize::try_from(shared.max_body).unwrap_or(usize::MAX);
                req = req.map(|b| Body::new(http_body_util::Limited::new(b, limit)));
                if shared.max_body > AXUM_BODY_LIMIT {
                    lift_axums_body_limit(req.extensions_mut());
                }
            }
        }
        let Some(runs) = shared.overload.admit() else {
            shared.overload.rejected.fetch_add(1, Relaxed);
            tracing::debug!(target: "ferrowizard::server::overload", uri = %req.uri(), "server full: 503");
            let response = plain(
                StatusCode::SERVICE_UNAVAILABLE,
                "Service Unavailable: the server is at capacity\n",
            );
            return GateFuture::ready(response, finish);
        };
        // A known template: found here. Another (a merged router's): noted by its route
        // layer as the router calls the route, which then wins (`Finish::note_route`).
        let route = shared
            .routes
            .find(req.method(), req.uri().path())
            .map(|(route, template)| {
                tracing::debug!(
                    target: "ferrowizard::server::routing",
                    method = req.method().as_str(),
                    route = template,
                    "routed"
                );
                route
            });
        // Any encoding named, for a method `includedMethods` lists: tower-http decides (and
        // answers 406 to what it cannot meet).
        let compress = self.compressing.is_some()
            && accepts_encoding
            && shared.compressed_methods.contains(req.method());
        finish.admitted = true;
        finish.route = route;
        if !runs {
            // Every running slot is busy: wait in the queue. The slow path: boxed, with a
            // clone of the services, so that the connection's own instance stays free.
            let overload = finish.shared.overload.clone();
            let (mut plain_service, mut compressing) =
                (self.plain.clone(), self.compressing.clone());
            let inner: BoxedResponse = Box::pin(async move {
                overload.wait_to_run().await;
                // The slot is this future's until it ends (or is dropped); the place is
                // the request's, released by `Finish`.
                let _slot = RunningSlot(&overload);
                let response = match (&mut compressing, compress) {
                    (Some(c), true) => c.call(req).await.map(|r| r.map(Body::new)),
                    _ => plain_service.call(req).await,
                };
                match response {
                    Ok(r) => r,
                    Err(never) => match never {},
                }
            });
            return GateFuture {
                state: State::Waiting { inner },
                finish,
            };
        }
        finish.running = true;
        match (&mut self.compressing, compress) {
            (Some(c), true) => {
                let inner = Box::pin(c.call(req));
                finish.note_route();
                GateFuture {
                    state: State::Compressed { inner },
                    finish,
                }
            }
            // Built where it is returned: the router's future goes straight into its place.
            _ => GateFuture::plain(self.plain.call(req), finish),
        }
    }
}

/// The request headers the gate reads: found in one pass over the map (a request carries a
/// handful of headers; each lookup by name hashes the name and probes the table).
struct Heads<'a> {
    /// For the request-log line.
    referer: Option<&'a HeaderValue>,
    user_agent: Option<&'a HeaderValue>,
    /// Whether the client named any encoding (compression is then tower-http's to decide).
    accept_encoding: bool,
}

impl<'a> Heads<'a> {
    /// The first `Referer` and `User-Agent` values when `logged`, whether `Accept-Encoding`
    /// is present when `compressing`; no pass when neither.
    fn of(headers: &'a http::HeaderMap, logged: bool, compressing: bool) -> Heads<'a> {
        let mut heads = Heads {
            referer: None,
            user_agent: None,
            accept_encoding: false,
        };
        if !logged && !compressing {
            return heads;
        }
        for (name, value) in headers {
            if *name == header::REFERER {
                heads.referer.get_or_insert(value);
            } else if *name == header::USER_AGENT {
                heads.user_agent.get_or_insert(value);
            } else if *name == header::ACCEPT_ENCODING {
                heads.accept_encoding = true;
            }
        }
        heads
    }
}

/// A running slot taken after a wait in the queue.
struct RunningSlot<'a>(&'a Overload);

impl Drop for RunningSlot<'_> {
    fn drop(&mut self) {
        self.0.release_run();
    }
}

/// What a request owes the connector until it is done: its place and slot, its metrics and
/// its request-log line. Released when the response is ready, or when the future is dropped
/// (the client went away).
struct Finish {
    shared: Arc<Shared>,
    started: Instant,
    entry: Option<Entry>,
    /// The route template the router matched, for its timer.
    route: Option<Route>,
    /// The connection's part, last.
    answer: Option<Answer>,
    admitted: bool,
    running: bool,
}

impl Finish {
    /// Takes the route the router matched, if a route layer noted it during the call or poll
    /// just made on this thread (axum's router calls the route's service on its future's
    /// first poll; see `super::routes::RouteLayer`).
    fn note_route(&mut self) {
        if let Some(matched) = super::routes::take_matched() {
            self.route = Some(matched);
        }
    }

    fn release(&mut self) {
        if self.admitted {
            self.admitted = false;
            self.shared
                .overload
                .leave(std::mem::take(&mut self.running));
        }
    }

    fn done(&mut self, mut response: Response<Body>) -> Response<Body> {
        self.release();
        if let Some(min) = self.shared.vary_from
            && response
                .body()
                .size_hint()
                .exact()
                .is_some_and(|n| n >= min)
            && !response.headers().contains_key(header::VARY)
        {
            response
                .headers_mut()
                .append(header::VARY, HeaderValue::from_static("accept-encoding"));
        }
        // One clock reading, and one duration, for every timer and the request-log line.
        let now = Instant::now();
        let took = now.saturating_duration_since(self.started);
        if let Some(m) = &self.shared.metrics {
            m.finished(now, took, response.status().as_u16());
            match self.route.take() {
                Some(Route::Known { index, slot }) => {
                    if let Some((timer, template)) = self.shared.routes.timer(index, slot) {
                        m.record_known(timer, template, Route::standard_method(slot), now, took);
                    }
                }
                Some(Route::Noted(method, route)) => m.record_route(&method, route, now, took),
                None => {}
            }
        }
        if let (Some(entry), Some(log)) = (self.entry.take(), &self.shared.request_log) {
            log.finish(entry, took, &mut response);
        }
        if let Some(answer) = self.answer.take() {
            answer.answered(&mut response);
        }
        response
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        self.release();
    }
}

pin_project! {
    #[project = StateProj]
    enum State<P, C> {
        Ready { response: Option<Response<Body>> },
        Plain { #[pin] inner: P },
        // Boxed: tower-http's future wraps the router's and would double the size of every
        // request's future, which is moved a few times on its way into hyper's slot.
        Compressed { inner: Pin<Box<C>> },
        Waiting { inner: BoxedResponse },
        Done,
    }
}

pin_project! {
    /// The response future of [`Gate`].
    pub struct GateFuture<P, C> {
        #[pin]
        state: State<P, C>,
        finish: Finish,
    }
}

impl<P, C> GateFuture<P, C> {
    /// A response the gate gives itself (405, 413, 503).
    fn ready(response: Response<Body>, finish: Finish) -> Self {
        GateFuture {
            state: State::Ready {
                response: Some(response),
            },
            finish,
        }
    }

    /// The router's future `inner`, just called.
    #[inline]
    fn plain(inner: P, mut finish: Finish) -> Self {
        finish.note_route();
        GateFuture {
            state: State::Plain { inner },
            finish,
        }
    }
}

/// Polls `poll`, turning a panic into a 500 and an ERROR line (the connection and the server
/// carry on).
fn catching(poll: impl FnOnce() -> Poll<Response<Body>>) -> Poll<Response<Body>> {
    match std::panic::catch_unwind(AssertUnwindSafe(poll)) {
        Ok(p) => p,
        Err(payload) => Poll::Ready(panicked(payload)),
    }
}

fn panicked(payload: Box<dyn std::any::Any + Send + 'static>) -> Response<Body> {
    let message = payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
        .unwrap_or("(a panic without a message)");
    tracing::error!(target: "ferrowizard::server", panic = message, "a request handler panicked");
    plain(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error\n")
}

fn infallible<B>(r: Result<Response<B>, Infallible>) -> Response<B> {
    match r {
        Ok(r) => r,
        Err(never) => match never {},
    }
}

impl<P, C, CB> Future for GateFuture<P, C>
where
    P: Future<Output = Result<Response<Body>, Infallible>>,
    C: Future<Output = Result<Response<CB>, Infallible>>,
    CB: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    CB::Error: Into<axum::BoxError>,
{
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let response = match this.state.as_mut().project() {
            StateProj::Ready { response } => match response.take() {
                Some(r) => r,
                None => return Poll::Pending,
            },
            StateProj::Plain { inner } => {
                let poll = catching(|| inner.poll(cx).map(infallible));
                this.finish.note_route();
                std::task::ready!(poll)
            }
            StateProj::Compressed { inner } => {
                let poll = catching(|| {
                    inner
                        .as_mut()
                        .poll(cx)
                        .map(|r| infallible(r).map(Body::new))
                });
                this.finish.note_route();
                std::task::ready!(poll)
            }
            StateProj::Waiting { inner } => {
                let poll = catching(|| inner.as_mut().poll(cx));
                this.finish.note_route();
                std::task::ready!(poll)
            }
            StateProj::Done => return Poll::Pending,
        };
        // The inner future is finished (or panicked): dropped now, never polled again.
        this.state.set(State::Done);
        Poll::Ready(Ok(this.finish.done(response)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_pass_finds_the_first_values_and_any_encoding() {
        let mut headers = http::HeaderMap::new();
        headers.insert(header::HOST, HeaderValue::from_static("example.com"));
        headers.append(header::USER_AGENT, HeaderValue::from_static("first"));
        headers.append(header::USER_AGENT, HeaderValue::from_static("second"));
        headers.insert(header::REFERER, HeaderValue::from_static("http://r/"));
        headers.insert(header::ACCEPT_ENCODING, HeaderValue::from_static("gzip"));
        let heads = Heads::of(&headers, true, true);
        // What `HeaderMap::get` gives: the first value.
        assert_eq!(heads.user_agent, headers.get(header::USER_AGENT));
        assert_eq!(heads.referer, headers.get(header::REFERER));
        assert!(heads.accept_encoding);

        headers.remove(header::ACCEPT_ENCODING);
        headers.remove(header::REFERER);
        let heads = Heads::of(&headers, true, true);
        assert_eq!((heads.referer, heads.accept_encoding), (None, false));
        assert_eq!(heads.user_agent.unwrap(), "first");

        // Neither a request log nor compression: nothing read.
        let heads = Heads::of(&headers, false, false);
        assert!(heads.user_agent.is_none());
    }
}
