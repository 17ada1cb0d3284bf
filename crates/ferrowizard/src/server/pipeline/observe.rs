//! The observe stage: what makes a request followable across services and log lines, when
//! the configuration asks for it. Its request ID (`requestId`, [`crate::server::pipeline::request_id`]), its
//! place in a trace (`traceContext`, [`crate::trace`]), the logging context that carries both
//! into every event logged while the request is handled, and its `http.server.request` span.
//! The trace context is current while the request is handled ([`TraceContext::current`],
//! which handlers' extractor reads), as the logging context is.
//!
//! The pipeline calls [`Observe::begin`] when a request arrives, runs the route stage inside
//! [`Observation::scope`] (the logging context in place), opens the span with the route
//! found ([`Observation::open_span`]), runs the handle stage inside the scope (the context
//! and the span), and calls [`Observation::finish`] with the response.
//! With both settings off, `begin` returns `None` and the request pays one branch.

use ferrowizard_logging::context::Context;
use http::{HeaderName, Method, Request, Response};
use tracing::Span;
use tracing::field::Empty;

use crate::export::Recording;
use crate::trace::{Carried, TraceContext};

/// The target of the requests' spans.
pub(crate) const REQUEST_SPAN_TARGET: &str = "ferrowizard::server::request";

/// The logging context's key of the trace id (also access-json's field).
pub(crate) const TRACE_ID: &str = "traceId";
/// The logging context's key of the request's span id (also access-json's field).
pub(crate) const SPAN_ID: &str = "spanId";

/// The observe stage's settings.
#[derive(Clone, Debug, Default)]
pub(crate) struct Observe {
    /// `requestId.headerName`, when `requestId.enabled`.
    request_id: Option<HeaderName>,
    /// `traceContext.enabled`.
    trace_context: bool,
}

/// What the observe stage found of one request.
pub(crate) struct Observation {
    context: Context,
    /// The request's ID (as returned in the response) and its trace context, carried on to
    /// the calls the handler makes ([`crate::trace::propagate`]); current while the route and
    /// handle stages run.
    carried: Carried,
    /// The request's span (`Span::none()` when traces are off, no subscriber wants it, or
    /// an export makes its own).
    span: Span,
    /// With an export, the request's own span (see [`crate::export::start`]), whose context
    /// is current while the request is handled.
    otel: Option<crate::export::RequestSpan>,
}

/// A request's trace and span ids, as access-json writes them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TraceIds {
    pub(crate) trace_id: crate::trace::TraceId,
    pub(crate) span_id: crate::trace::SpanId,
}

impl Observe {
    /// The stage for `request_id` (`requestId.headerName` when on) and `trace_context`.
    pub(crate) fn new(request_id: Option<HeaderName>, trace_context: bool) -> Observe {
        Observe {
            request_id,
            trace_context,
        }
    }

    /// Whether the stage does anything.
    pub(crate) fn is_off(&self) -> bool {
        self.request_id.is_none() && !self.trace_context
    }

    /// The request's ID and trace context, and the logging context with both.
    pub(crate) fn begin<B>(&self, req: &Request<B>) -> Option<Box<Observation>> {
        if self.is_off() {
            return None;
        }
        let mut context = Context::new();
        let request_id = self.request_id.as_ref().map(|name| {
            let id = crate::server::pipeline::request_id::id(req.headers().get(name));
            // Checked or generated: visible ASCII.
            context.set(
                crate::server::pipeline::request_id::KEY,
                id.to_str().unwrap_or_default(),
            );
            (name.clone(), id)
        });
        let trace = self.trace_context.then(|| {
            let mut trace = TraceContext::from_headers(req.headers(), || false);
            // With an export, the sampled flag is its decision from the start.
            if let Some(sampled) = crate::export::decide(&trace) {
                trace.set_sampled(sampled);
            }
            context.set_hex(
                TRACE_ID,
                u128::from_be_bytes(trace.trace_id().to_bytes()),
                32,
            );
            context.set_hex(
                SPAN_ID,
                u128::from(u64::from_be_bytes(trace.span_id().to_bytes())),
                16,
            );
            trace
        });
        // Boxed: a request that is not observed carries one pointer in its future, not the
        // observation's few hundred bytes (the future is moved as a whole).
        Some(Box::new(Observation {
            context,
            carried: Carried { request_id, trace },
            span: Span::none(),
            otel: None,
        }))
    }
}

/// `otel.name`: the method and, when known, the route.
struct SpanName<'a>(&'a Method, Option<&'a str>);

impl std::fmt::Display for SpanName<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(route) => write!(f, "{} {route}", self.0),
            None => f.write_str(self.0.as_str()),
        }
    }
}

/// The request's span: OpenTelemetry's HTTP server span (`http.server.request`) with the
/// semantic conventions' attributes, named by the method and the route (`GET /quotes/{id}`)
/// before it is first entered, which is when an OpenTelemetry layer fixes the name; the
/// status is recorded when the response is ready.
fn request_span<B>(req: &Request<B>, route: Option<&str>) -> Span {
    let span = tracing::info_span!(
        target: REQUEST_SPAN_TARGET,
        "http.server.request",
        otel.name = %SpanName(req.method(), route),
        otel.kind = "server",
        otel.status_code = Empty,
        http.request.method = req.method().as_str(),
        http.route = route,
        http.response.status_code = Empty,
        url.path = req.uri().path(),
        url.query = req.uri().query(),
        network.protocol.version = protocol(req.version()),
        client.address = Empty,
        request.id = Empty,
    );
    if !span.is_disabled()
        && let Some(client) = client(req)
    {
        span.record("client.address", tracing::field::display(client));
    }
    span
}

/// `client.address`: the peer's address, when the connection's is known.
fn client<B>(req: &Request<B>) -> Option<std::net::IpAddr> {
    req.extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.ip())
}

/// `network.protocol.version`.
fn protocol(version: http::Version) -> &'static str {
    match version {
        http::Version::HTTP_09 => "0.9",
        http::Version::HTTP_10 => "1.0",
        http::Version::HTTP_2 => "2",
        http::Version::HTTP_3 => "3",
        _ => "1.1",
    }
}

impl Observation {
    /// Runs `f` (a stage's step) with the request's logging context in place, inside its span.
    pub(crate) fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        let _otel = self.otel.as_ref().map(crate::export::RequestSpan::enter);
        match &self.carried.trace {
            Some(_) => self
                .span
                .in_scope(|| self.carried.scope(|| self.context.scope(f))),
            None => self.carried.scope(|| self.context.scope(f)),
        }
    }

    /// Opens the request's span, when its trace is followed, once the route stage has found
    /// the route's template (if it is one the server knows).
    pub(crate) fn open_span<B>(&mut self, req: &Request<B>, route: Option<&str>) {
        let Some(trace) = &mut self.carried.trace else {
            return;
        };
        // With an export, the export's own span stands for the request's (when it records the
        // request; when not, the request has no span).
        match crate::export::start(trace, || crate::export::ServerSpan {
            method: req.method(),
            route,
            path: req.uri().path(),
            query: req.uri().query(),
            version: protocol(req.version()),
            client: client(req),
            request_id: self.context.text(crate::server::pipeline::request_id::KEY),
        }) {
            Recording::NoExport => {}
            Recording::Dropped => return,
            Recording::Span(span) => {
                self.otel = Some(span);
                return;
            }
        }
        self.span = request_span(req, route);
        if let Some((_, id)) = &self.carried.request_id
            && !self.span.is_disabled()
            && let Ok(id) = id.to_str()
        {
            self.span.record("request.id", id);
        }
    }

    /// The route of a merged router, found by its route layer: the span's `http.route`.
    pub(crate) fn routed(&mut self, template: &str) {
        self.span.record("http.route", template);
        if let Some(span) = &mut self.otel {
            span.routed(template);
        }
    }

    /// The request's ID, for the request log.
    pub(crate) fn request_id(&self) -> Option<&str> {
        self.context.text(crate::server::pipeline::request_id::KEY)
    }

    /// The request's trace and span ids, for the request log.
    pub(crate) fn trace_ids(&self) -> Option<TraceIds> {
        self.carried.trace.as_ref().map(|t| TraceIds {
            trace_id: t.trace_id(),
            span_id: t.span_id(),
        })
    }

    /// Returns the request's ID in `response` and ends the span with its status.
    pub(crate) fn finish(&mut self, response: &mut Response<axum::body::Body>) {
        if let Some((name, value)) = self.carried.request_id.take() {
            response.headers_mut().insert(name, value);
        }
        if let Some(span) = self.otel.take() {
            span.end(response.status().as_u16());
        }
        if !self.span.is_disabled() {
            let status = response.status().as_u16();
            self.span
                .record("http.response.status_code", i64::from(status));
            if status >= 500 {
                self.span.record("otel.status_code", "error");
            }
        }
        // The span closes here rather than when the pipeline's future is dropped.
        self.span = Span::none();
    }
}
