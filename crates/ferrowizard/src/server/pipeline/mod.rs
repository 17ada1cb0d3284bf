//! A request's way through a connector, as one service: the stages from **receive** to
//! **log**, each called once, in order (the stages are drawn in [`super`]'s docs).
//!
//! [`Pipeline::call`] runs the stages that come before the application (receive, admit,
//! route) and starts the call of the router (handle); [`PipelineFuture`] runs the rest once
//! the response is ready (respond, measure, log). A request the pipeline answers itself (405,
//! 413, 503) skips route and handle. What one stage finds, the next is handed as a value: the
//! arrival time and request-log entry ([`Received`]), the admitted request's place
//! ([`Place`]), its route ([`Route`], or [`Matched`] in the response when a merged router's
//! route layer found it), the connection's part of the response ([`Respond`]). No stage calls
//! another, nor back into the pipeline.
//!
//! Why one hand-written service rather than a stack of tower layers (tower-http's body
//! limit, compression and panic catching, an overload layer, a method layer and a
//! request-log layer): in such a stack each layer boxes its future, the overload layer
//! clones the whole stack below it per request, three layers re-box the response body, and
//! each keeps its own reference count on shared state, every one a cache line the workers
//! fight over (BENCHMARKS.md, "Server overhead"). Here a request takes one reference to
//! the connector's shared state, keeps its state inline in one future, clones nothing, and
//! its body is re-boxed only when compressed or streamed to the request log.

pub(crate) mod admit;
pub(crate) mod compress;
pub(crate) mod handle;
pub(crate) mod metrics;
pub(crate) mod observe;
pub(crate) mod receive;
pub(crate) mod request_id;
pub(crate) mod respond;
pub(crate) mod route;
pub(crate) mod stamp;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use axum::body::Body;
use http::{Method, Request, Response};
use pin_project_lite::pin_project;
use tower::Service;

use crate::server::pipeline::admit::{Admission, Overload, Place};
use crate::server::pipeline::compress::Compressible;
use crate::server::pipeline::handle::{Handler, Handling, Inner};
use crate::server::pipeline::metrics::RequestMetrics;
use crate::server::pipeline::observe::{Observation, Observe};
use crate::server::pipeline::receive::{Received, receive};
use crate::server::pipeline::respond::{Respond, respond};
use crate::server::pipeline::route::{Matched, Route, RouteTable};
use crate::server::request_log::RequestLog;
use crate::server::request_log::entry::Entry;

/// What a [`Pipeline`] needs from the configuration.
#[derive(Clone, Debug)]
pub(crate) struct PipelineSettings {
    /// `gzip.enabled`.
    pub(crate) gzip: bool,
    /// `gzip.minimumEntitySize`, bytes.
    pub(crate) minimum_entity_size: u64,
    /// `gzip.compressedMimeTypes`.
    pub(crate) compressed_mime_types: Vec<String>,
    /// `gzip.includedMethods`: the requests whose responses may be compressed.
    pub(crate) compressed_methods: Vec<String>,
    /// `allowedMethods`.
    pub(crate) allowed_methods: Vec<String>,
    /// `maxRequestBodySize`, bytes.
    pub(crate) max_body: u64,
    /// `requestId` and `traceContext`.
    pub(crate) observe: Observe,
}

/// What every request of a connection shares: reached through one reference count, which
/// is the connection's own (see `Pipeline`'s `Clone`).
#[derive(Clone)]
struct Shared {
    admission: Admission,
    /// `gzip.includedMethods`.
    compressed_methods: Box<[Method]>,
    /// Responses at least this long may be compressed (`None`: gzip is off).
    vary_from: Option<u64>,
    metrics: Option<RequestMetrics>,
    request_log: Option<Arc<RequestLog>>,
    /// The routes whose templates are known (see `crate::server::pipeline::route`).
    routes: Arc<RouteTable>,
    /// Request IDs and trace context.
    observe: Observe,
}

/// A connector's requests, from arrival to their request-log line (see the module docs).
/// `S` is the router.
pub(crate) struct Pipeline<S> {
    handler: Handler<S>,
    shared: Arc<Shared>,
}

impl<S: Clone> Pipeline<S> {
    /// The pipeline in front of `router`, whose known templates are `routes`, admitting
    /// requests under `overload`, timing them in `metrics`, logging them in `request_log`.
    pub(crate) fn new(
        router: S,
        routes: Arc<RouteTable>,
        settings: &PipelineSettings,
        overload: Arc<Overload>,
        metrics: Option<RequestMetrics>,
        request_log: Option<Arc<RequestLog>>,
    ) -> Pipeline<S> {
        let compressible = settings.gzip.then(|| {
            Compressible::new(
                settings.minimum_entity_size,
                &settings.compressed_mime_types,
            )
        });
        Pipeline {
            handler: Handler::new(router, compressible),
            shared: Arc::new(Shared {
                admission: Admission::new(overload, &settings.allowed_methods, settings.max_body),
                compressed_methods: settings
                    .compressed_methods
                    .iter()
                    .filter_map(|m| Method::from_bytes(m.as_bytes()).ok())
                    .collect(),
                vary_from: settings.gzip.then_some(settings.minimum_entity_size),
                metrics,
                request_log,
                routes,
                observe: settings.observe.clone(),
            }),
        }
    }
}

/// A clone for a new connection gets a copy of the shared state behind a reference count of
/// its own: a request takes one count on it, and a count every worker took on one shared
/// `Arc` would move its cache line between cores twice per request.
impl<S: Clone> Clone for Pipeline<S> {
    fn clone(&self) -> Self {
        Pipeline {
            handler: self.handler.clone(),
            shared: Arc::new((*self.shared).clone()),
        }
    }
}

impl<S: Inner> Service<Request<Body>> for Pipeline<S> {
    type Response = Response<Body>;
    type Error = Infallible;
    type Future = PipelineFuture<S>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.handler.poll_ready(cx)
    }

    fn call(&mut self, req: Request<Body>) -> Self::Future {
        self.run(req, None)
    }
}

impl Pipeline<axum::Router> {
    /// [`Service::call`] without asking [`Service::poll_ready`] first (axum's router is always
    /// ready, and tower-http's compression is ready when what it wraps is), for a connection,
    /// which hands over its part of the response (`respond`): the future returned is the one
    /// hyper polls, with nothing wrapped around it.
    pub(crate) fn call_ready(
        &mut self,
        req: Request<Body>,
        respond: Respond,
    ) -> PipelineFuture<axum::Router> {
        self.run(req, Some(respond))
    }
}

impl<S: Inner> Pipeline<S> {
    /// The stages before the application, then the router's call.
    #[inline]
    fn run(&mut self, mut req: Request<Body>, connection: Option<Respond>) -> PipelineFuture<S> {
        let shared = self.shared.clone();
        // receive
        let Received {
            started,
            mut entry,
            accepts_encoding,
            json_errors,
        } = receive(
            &req,
            shared.request_log.as_deref(),
            self.handler.compresses(),
        );
        // observe
        let observation = shared.observe.begin(&req);
        if let (Some(observation), Some(entry), Some(log)) =
            (&observation, entry.as_mut(), shared.request_log.as_deref())
        {
            log.keep_ids(entry, observation);
        }
        let mut rest = Rest {
            shared,
            started,
            entry,
            json_errors,
            route: None,
            connection,
            place: None,
            observation,
        };
        let shared = &*rest.shared;
        // admit
        let place = match shared.admission.admit(&mut req) {
            Ok(place) => place,
            Err(refusal) => return PipelineFuture::answered(refusal.response(), rest),
        };
        // route: a known template is found here; a merged router's is handed on with the
        // response ([`Matched`]), and wins.
        let find = || {
            shared
                .routes
                .find(req.method(), req.uri().path())
                .inspect(|(_, template)| {
                    tracing::debug!(
                        target: "ferrowizard::server::routing",
                        method = req.method().as_str(),
                        route = *template,
                        "routed"
                    );
                })
        };
        let route = match &mut rest.observation {
            Some(observation) => {
                let found = observation.scope(find);
                observation.open_span(&req, found.as_ref().map(|(_, template)| *template));
                found
            }
            None => find(),
        }
        .map(|(route, _)| route);
        // handle: the router's future is built where it is kept, not moved there (it is a
        // few hundred bytes).
        let compress = accepts_encoding && shared.compressed_methods.contains(req.method());
        rest.place = Some(place);
        rest.route = route;
        match place {
            Place::Running => PipelineFuture {
                state: State::Handling {
                    inner: self.handler.call(req, compress),
                },
                rest,
            },
            Place::Queued => {
                let slot = rest.shared.admission.slot();
                PipelineFuture {
                    state: State::Handling {
                        inner: self.handler.call_after(slot, req, compress),
                    },
                    rest,
                }
            }
        }
    }
}

/// The stages after the application, and what they are handed: released when the response
/// is ready, or when the future is dropped (the client went away).
struct Rest {
    shared: Arc<Shared>,
    started: Instant,
    entry: Option<Entry>,
    /// Whether the client takes the server's errors as JSON (receive found out).
    json_errors: bool,
    /// The known template the route stage found.
    route: Option<Route>,
    /// The connection's part of the response, last.
    connection: Option<Respond>,
    /// The admitted request's place, given back when it is answered.
    place: Option<Place>,
    /// What the observe stage found: its logging context and span are in place while the
    /// router's future is polled.
    observation: Option<Box<Observation>>,
}

impl Rest {
    /// The admitted request leaves (its place and slot are free for the next).
    fn leave(&mut self) {
        if let Some(place) = self.place.take() {
            self.shared.admission.leave(place);
        }
    }

    /// respond, measure, log.
    fn finish(&mut self, mut response: Response<Body>) -> Response<Body> {
        self.leave();
        let shared = &*self.shared;
        if let Some(observation) = &mut self.observation {
            if self.route.is_none()
                && let Some(matched) = response.extensions().get::<Matched>()
            {
                observation.routed(matched.template());
            }
            observation.finish(&mut response);
        }
        respond(
            &mut response,
            self.json_errors,
            shared.vary_from,
            self.connection.take(),
        );
        // measure: one clock reading, and one duration, for every timer and the request-log
        // line.
        let now = Instant::now();
        let took = now.saturating_duration_since(self.started);
        if let Some(m) = &shared.metrics {
            m.finished(now, took, response.status().as_u16());
            if let Some(matched) = response.extensions().get::<Matched>() {
                m.record_route(matched.method(), matched.template(), now, took);
            } else {
                match self.route.take() {
                    Some(Route::Known { index, slot }) => {
                        if let Some((timer, template)) = shared.routes.timer(index, slot) {
                            m.record_known(
                                timer,
                                template,
                                Route::standard_method(slot),
                                now,
                                took,
                            );
                        }
                    }
                    Some(Route::Other { index, method }) => {
                        if let Some(template) = shared.routes.template(index) {
                            m.record_route(&method, template, now, took);
                        }
                    }
                    None => {}
                }
            }
        }
        // log
        if let (Some(entry), Some(log)) = (self.entry.take(), &shared.request_log) {
            log.finish(entry, took, &mut response);
        }
        response
    }
}

impl Drop for Rest {
    fn drop(&mut self) {
        self.leave();
    }
}

type HandlingOf<S> = Handling<
    <S as Service<Request<Body>>>::Future,
    <tower_http::compression::Compression<S, Compressible> as Service<Request<Body>>>::Future,
>;

pin_project! {
    #[project = StateProj]
    enum State<H> {
        /// A response the pipeline gave itself (405, 413, 503).
        Answered { response: Option<Response<Body>> },
        Handling { #[pin] inner: H },
        Done,
    }
}

pin_project! {
    /// The response future of [`Pipeline`].
    pub(crate) struct PipelineFuture<S: Inner> {
        #[pin]
        state: State<HandlingOf<S>>,
        rest: Rest,
    }
}

impl<S: Inner> PipelineFuture<S> {
    fn answered(response: Response<Body>, rest: Rest) -> Self {
        PipelineFuture {
            state: State::Answered {
                response: Some(response),
            },
            rest,
        }
    }
}

impl<S: Inner> Future for PipelineFuture<S> {
    type Output = Result<Response<Body>, Infallible>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let response = match this.state.as_mut().project() {
            StateProj::Answered { response } => match response.take() {
                Some(r) => r,
                None => return Poll::Pending,
            },
            StateProj::Handling { inner } => std::task::ready!(match &this.rest.observation {
                Some(observation) => observation.scope(|| inner.poll(cx)),
                None => inner.poll(cx),
            }),
            StateProj::Done => return Poll::Pending,
        };
        // The router's future is finished (or panicked): dropped now, never polled again.
        this.state.set(State::Done);
        Poll::Ready(Ok(this.rest.finish(response)))
    }
}
