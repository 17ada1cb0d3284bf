//! Stage 5, **handle**: the application's router, called for an admitted request, through
//! tower-http's compression when the client named an encoding and `gzip.includedMethods` lists
//! the method; a handler that panics becomes a 500 with an ERROR line while the server serves
//! on (its text becomes JSON in respond for a client that accepts JSON).

use std::convert::Infallible;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use http::{Request, Response, StatusCode};
use pin_project_lite::pin_project;
use tower::Service;
use tower_http::compression::{Compression, CompressionLayer};

use crate::errors::generated;
use crate::server::pipeline::compress::Compressible;

/// What a pipeline serves: a router, as a tower service (axum's `Router`).
pub trait Inner:
    Service<Request<Body>, Response = Response<Body>, Error = Infallible, Future: Send + 'static>
    + Clone
    + Send
    + 'static
{
}

impl<S> Inner for S where
    S: Service<
            Request<Body>,
            Response = Response<Body>,
            Error = Infallible,
            Future: Send + 'static,
        > + Clone
        + Send
        + 'static
{
}

/// The router, and the same router behind tower-http's compression (when `gzip.enabled`).
#[derive(Clone)]
pub(crate) struct Handler<S> {
    plain: S,
    compressing: Option<Compression<S, Compressible>>,
}

/// The future of a compressed call.
type CompressedFuture<S> = <Compression<S, Compressible> as Service<Request<Body>>>::Future;

type BoxedResponse = Pin<Box<dyn Future<Output = Response<Body>> + Send>>;

impl<S: Clone> Handler<S> {
    /// Calls `router`, through compression of the responses `compressible` allows when
    /// given (`gzip.enabled`).
    pub(crate) fn new(router: S, compressible: Option<Compressible>) -> Handler<S> {
        let compressing = compressible.map(|predicate| {
            tower::Layer::layer(
                &CompressionLayer::new().gzip(true).compress_when(predicate),
                router.clone(),
            )
        });
        Handler {
            plain: router,
            compressing,
        }
    }

    /// Whether responses may be compressed (`gzip.enabled`).
    pub(crate) fn compresses(&self) -> bool {
        self.compressing.is_some()
    }
}

impl<S: Inner> Handler<S> {
    /// Asks the router (and the compression around it) whether it is ready, as tower's
    /// contract wants: axum's router always is.
    pub(crate) fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        if let Some(c) = &mut self.compressing {
            std::task::ready!(c.poll_ready(cx))?;
        }
        self.plain.poll_ready(cx)
    }

    /// Calls the router for `req`, which holds a running slot; through compression when
    /// `compress`.
    #[inline]
    pub(crate) fn call(
        &mut self,
        req: Request<Body>,
        compress: bool,
    ) -> Handling<S::Future, CompressedFuture<S>> {
        match (&mut self.compressing, compress) {
            (Some(c), true) => Handling::Compressed {
                inner: Box::pin(c.call(req)),
            },
            // Built where it is returned: the router's future goes straight into its place.
            _ => Handling::Plain {
                inner: self.plain.call(req),
            },
        }
    }

    /// Calls the router for `req` once `slot` is ready (admission's wait for a running slot,
    /// whose output holds the slot until the response is ready). The slow path: boxed, with
    /// a clone of the services, so that the connection's own instance stays free.
    pub(crate) fn call_after<T: Send + 'static>(
        &self,
        slot: impl Future<Output = T> + Send + 'static,
        req: Request<Body>,
        compress: bool,
    ) -> Handling<S::Future, CompressedFuture<S>> {
        let mut handler = self.clone();
        Handling::Queued {
            inner: Box::pin(async move {
                let _slot = slot.await;
                let response = match (&mut handler.compressing, compress) {
                    (Some(c), true) => c.call(req).await.map(|r| r.map(Body::new)),
                    _ => handler.plain.call(req).await,
                };
                match response {
                    Ok(r) => r,
                    Err(never) => match never {},
                }
            }),
        }
    }
}

pin_project! {
    /// A call of the router under way: its response, or a 500 if the handler panicked.
    #[project = HandlingProj]
    pub(crate) enum Handling<P, C> {
        Plain { #[pin] inner: P },
        // Boxed: tower-http's future wraps the router's and would double the size of every
        // request's future, which is moved a few times on its way into hyper's slot.
        Compressed { inner: Pin<Box<C>> },
        Queued { inner: BoxedResponse },
    }
}

impl<P, C, CB> Future for Handling<P, C>
where
    P: Future<Output = Result<Response<Body>, Infallible>>,
    C: Future<Output = Result<Response<CB>, Infallible>>,
    CB: http_body::Body<Data = bytes::Bytes> + Send + 'static,
    CB::Error: Into<axum::BoxError>,
{
    type Output = Response<Body>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response<Body>> {
        match self.project() {
            HandlingProj::Plain { inner } => catching(|| inner.poll(cx).map(infallible)),
            HandlingProj::Compressed { inner } => catching(|| {
                inner
                    .as_mut()
                    .poll(cx)
                    .map(|r| infallible(r).map(Body::new))
            }),
            HandlingProj::Queued { inner } => catching(|| inner.as_mut().poll(cx)),
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
    generated(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error\n")
}

fn infallible<B>(r: Result<Response<B>, Infallible>) -> Response<B> {
    match r {
        Ok(r) => r,
        Err(never) => match never {},
    }
}
