//! W3C Trace Context: a request's place in a distributed trace.
//!
//! With `server.traceContext.enabled`, the server reads each request's `traceparent` and
//! `tracestate` headers ([W3C Trace Context](https://www.w3.org/TR/trace-context/)): a
//! well-formed `traceparent` makes the request a child of the caller's span in the caller's
//! trace; a missing or malformed one starts a new trace (never an error). The request gets a
//! span id of its own, and its [`TraceContext`] is
//! - a handler's extractor (and [`TraceContext::current`]), whose [`TraceContext::traceparent`] and
//!   [`TraceContext::tracestate`] are the headers to send on a call to another service;
//! - `traceId` and `spanId` in the request's logging context, so that every event logged
//!   while it is handled carries them (`%X{traceId}` in the pattern layout, `mdc` in the JSON
//!   layout), and `traceId`/`spanId` fields of an `access-json` request log;
//! - the `http.server.request` span the request is handled in, named and attributed by
//!   OpenTelemetry's HTTP semantic conventions.
//!
//! ```
//! use ferrowizard::trace::TraceContext;
//!
//! async fn quote(trace: TraceContext) -> String {
//!     // A call to another service carries the trace on.
//!     let _headers = [("traceparent", trace.traceparent())];
//!     format!("trace {}", trace.trace_id())
//! }
//! # let _ = ferrowizard::axum::Router::<()>::new().route("/", ferrowizard::axum::routing::get(quote));
//! ```

use std::fmt;

use axum::extract::FromRequestParts;
use axum::response::{IntoResponse, Response};
use http::request::Parts;
use http::{HeaderMap, HeaderName, HeaderValue, StatusCode};

/// The longest `tracestate` propagated, in bytes: W3C asks to propagate at least 512, and
/// 32 members of the usual size fit well within this.
const MAX_TRACESTATE: usize = 4096;

/// The most list members a `tracestate` may have (W3C).
const MAX_MEMBERS: usize = 32;

/// The headers' names, built once: a name given as text is parsed at every lookup.
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// A trace's id: 16 bytes, never all zeros; shown as 32 lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TraceId(u128);

/// A span's id: 8 bytes, never all zeros; shown as 16 lowercase hex digits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SpanId(u64);

impl TraceId {
    /// The id from its 16 bytes, `None` when they are all zeros (W3C's invalid id).
    ///
    /// ```
    /// use ferrowizard::trace::TraceId;
    /// let id = TraceId::from_bytes([0x4b; 16]).unwrap();
    /// assert_eq!(id.to_string(), "4b".repeat(16));
    /// assert_eq!(TraceId::from_bytes([0; 16]), None);
    /// ```
    pub fn from_bytes(bytes: [u8; 16]) -> Option<TraceId> {
        let id = u128::from_be_bytes(bytes);
        (id != 0).then_some(TraceId(id))
    }

    /// The id's 16 bytes.
    pub fn to_bytes(self) -> [u8; 16] {
        self.0.to_be_bytes()
    }

    /// A random id: fastrand's whole range, drawn again on the one value W3C forbids (a
    /// ranged draw costs a multiplication and a rejection test every time).
    fn random() -> TraceId {
        loop {
            let id = fastrand::u128(..);
            if id != 0 {
                return TraceId(id);
            }
        }
    }
}

impl SpanId {
    /// The id from its 8 bytes, `None` when they are all zeros (W3C's invalid id).
    ///
    /// ```
    /// use ferrowizard::trace::SpanId;
    /// assert_eq!(SpanId::from_bytes([0, 0, 0, 0, 0, 0, 0, 1]).unwrap().to_string(), "0000000000000001");
    /// ```
    pub fn from_bytes(bytes: [u8; 8]) -> Option<SpanId> {
        let id = u64::from_be_bytes(bytes);
        (id != 0).then_some(SpanId(id))
    }

    /// The id's 8 bytes.
    pub fn to_bytes(self) -> [u8; 8] {
        self.0.to_be_bytes()
    }

    /// A random id, as [`TraceId`]'s.
    fn random() -> SpanId {
        loop {
            let id = fastrand::u64(..);
            if id != 0 {
                return SpanId(id);
            }
        }
    }
}

/// Ids as hex digits: by hand (see the logging context's, which shows the same ids).
pub(crate) use ferrowizard_logging::context::hex;

/// Hex digits as text (they are ASCII).
fn text(hex: &[u8]) -> &str {
    std::str::from_utf8(hex).unwrap_or_default()
}

impl TraceId {
    /// The id as 32 hex digits, written into `f` without allocating.
    pub(crate) fn with_hex<R>(self, f: impl FnOnce(&str) -> R) -> R {
        f(text(&hex::<32>(self.0)))
    }
}

impl SpanId {
    /// The id as 16 hex digits, written into `f` without allocating.
    pub(crate) fn with_hex<R>(self, f: impl FnOnce(&str) -> R) -> R {
        f(text(&hex::<16>(u128::from(self.0))))
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_hex(|h| f.write_str(h))
    }
}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.with_hex(|h| f.write_str(h))
    }
}

/// A request's place in its trace: the trace, the request's own span, the caller's span and
/// the caller's `tracestate` (see the module docs). An extractor (the context of the request
/// being handled, [`TraceContext::current`]): a handler of a server whose `traceContext` is
/// off is answered 500, saying so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceContext {
    trace_id: TraceId,
    span_id: SpanId,
    parent: Option<SpanId>,
    sampled: bool,
    state: Option<HeaderValue>,
}

impl TraceContext {
    /// The context of a request with `headers`: a child of the caller's span when its
    /// `traceparent` is well-formed (its `tracestate` kept when that is well-formed too),
    /// else the root of a new trace, sampled when `sample_new` says so.
    ///
    /// ```
    /// use ferrowizard::trace::TraceContext;
    /// use http::HeaderMap;
    ///
    /// let mut headers = HeaderMap::new();
    /// headers.insert("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".parse().unwrap());
    /// let child = TraceContext::from_headers(&headers, || false);
    /// assert_eq!(child.trace_id().to_string(), "4bf92f3577b34da6a3ce929d0e0e4736");
    /// assert_eq!(child.parent_span_id().unwrap().to_string(), "00f067aa0ba902b7");
    /// assert!(child.sampled());
    ///
    /// headers.insert("traceparent", "not a traceparent".parse().unwrap());
    /// let root = TraceContext::from_headers(&headers, || false);
    /// assert_eq!(root.parent_span_id(), None);
    /// ```
    pub fn from_headers(headers: &HeaderMap, sample_new: impl FnOnce() -> bool) -> TraceContext {
        match parent(headers) {
            Some((trace_id, parent, sampled)) => TraceContext {
                trace_id,
                span_id: SpanId::random(),
                parent: Some(parent),
                sampled,
                state: tracestate(headers),
            },
            None => TraceContext {
                trace_id: TraceId::random(),
                span_id: SpanId::random(),
                parent: None,
                sampled: sample_new(),
                state: None,
            },
        }
    }

    /// The trace this request is part of.
    pub fn trace_id(&self) -> TraceId {
        self.trace_id
    }

    /// The request's own span.
    pub fn span_id(&self) -> SpanId {
        self.span_id
    }

    /// The caller's span, when the request came with a well-formed `traceparent`.
    pub fn parent_span_id(&self) -> Option<SpanId> {
        self.parent
    }

    /// Whether the trace is sampled (`traceparent`'s flag): the caller's decision, or this
    /// server's for a trace it started.
    pub fn sampled(&self) -> bool {
        self.sampled
    }

    /// Sets the sampled flag (an exporter's sampler decided for a trace this server started).
    #[cfg_attr(not(feature = "otlp"), allow(dead_code))]
    pub(crate) fn set_sampled(&mut self, sampled: bool) {
        self.sampled = sampled;
    }

    /// The `traceparent` to send on a call made while handling this request: this trace,
    /// with this request's span as the callee's parent.
    ///
    /// ```
    /// # use ferrowizard::trace::TraceContext;
    /// let root = TraceContext::from_headers(&http::HeaderMap::new(), || true);
    /// let header = root.traceparent();
    /// let header = header.to_str().unwrap();
    /// assert_eq!(header, format!("00-{}-{}-01", root.trace_id(), root.span_id()));
    /// ```
    pub fn traceparent(&self) -> HeaderValue {
        let mut header = [b'-'; 55];
        header[..2].copy_from_slice(b"00");
        header[3..35].copy_from_slice(&hex::<32>(self.trace_id.0));
        header[36..52].copy_from_slice(&hex::<16>(u128::from(self.span_id.0)));
        header[53..].copy_from_slice(if self.sampled { b"01" } else { b"00" });
        // Hex digits and dashes only.
        HeaderValue::from_bytes(&header).unwrap_or(HeaderValue::from_static(""))
    }

    /// The caller's `tracestate`, to send on unchanged (`None`: it sent none, or one that is
    /// not well-formed).
    pub fn tracestate(&self) -> Option<&HeaderValue> {
        self.state.as_ref()
    }
}

/// What the request being handled carries on to the calls it makes: its ID, under the header
/// the server reads it from, and its trace context. In place while the request is handled
/// (the observe stage's scope).
#[derive(Debug, Default)]
pub(crate) struct Carried {
    /// `requestId.headerName` and the request's ID.
    pub(crate) request_id: Option<(HeaderName, HeaderValue)>,
    /// The request's trace context, when `traceContext` is on.
    pub(crate) trace: Option<TraceContext>,
}

scoped_tls::scoped_thread_local!(static CURRENT: Carried);

impl Carried {
    /// Runs `f` with this as what the thread's request carries.
    pub(crate) fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        CURRENT.set(self, f)
    }
}

impl TraceContext {
    /// The context of the request being handled on this thread: in a handler, in what it
    /// calls, and in the futures it awaits (as the logging context, it does not follow work
    /// handed to another task with `tokio::spawn`).
    ///
    /// ```
    /// use ferrowizard::trace::TraceContext;
    /// assert_eq!(TraceContext::current(), None); // outside a traced request
    /// ```
    pub fn current() -> Option<TraceContext> {
        Self::with_current(TraceContext::clone)
    }

    /// Calls `f` with the context of the request being handled on this thread, without a copy
    /// (`None` outside a traced request).
    #[cfg_attr(not(feature = "otlp"), allow(dead_code))]
    pub(crate) fn with_current<R>(f: impl FnOnce(&TraceContext) -> R) -> Option<R> {
        if !CURRENT.is_set() {
            return None;
        }
        CURRENT.with(|carried| carried.trace.as_ref().map(f))
    }
}

/// Adds to `headers` what carries the request being handled on to a call it makes, so that
/// the service called logs the same request ID and joins the same trace:
/// - the request's ID, under the header this server reads it from
///   (`server.requestId.headerName`, `X-Request-Id` unless told otherwise);
/// - when the server follows traces, `traceparent`, with `call` (the span of the call, made
///   while the request is handled) as the callee's parent when an OpenTelemetry export
///   records it, and the request's own span otherwise; and the caller's `tracestate`.
///
/// A header `headers` already has is kept. Outside a request (a background task, a test) it
/// adds nothing. ferrowizard-client calls it for each call it makes.
///
/// ```
/// use ferrowizard::trace::propagate;
///
/// let mut headers = http::HeaderMap::new();
/// propagate(&mut headers, &tracing::Span::current());
/// assert!(headers.is_empty()); // no request is being handled here
/// ```
pub fn propagate(headers: &mut HeaderMap, call: &tracing::Span) {
    if !CURRENT.is_set() {
        return;
    }
    CURRENT.with(|carried| {
        if let Some((name, id)) = &carried.request_id
            && !headers.contains_key(name)
        {
            headers.insert(name.clone(), id.clone());
        }
        let Some(trace) = &carried.trace else {
            return;
        };
        if !headers.contains_key(TRACEPARENT) {
            let parent = match span_ids(call) {
                Some((trace_id, span_id, sampled)) if trace_id == trace.trace_id => TraceContext {
                    trace_id,
                    span_id,
                    parent: None,
                    sampled,
                    state: None,
                }
                .traceparent(),
                _ => trace.traceparent(),
            };
            headers.insert(TRACEPARENT, parent);
        }
        if let Some(state) = &trace.state
            && !headers.contains_key(TRACESTATE)
        {
            headers.insert(TRACESTATE, state.clone());
        }
    });
}

/// The trace, the span and the sampled flag OpenTelemetry gave `span` (`None`: it has none,
/// or no export layer sees it).
#[cfg(feature = "otlp")]
fn span_ids(span: &tracing::Span) -> Option<(TraceId, SpanId, bool)> {
    use opentelemetry::trace::TraceContextExt;
    use tracing_opentelemetry::OpenTelemetrySpanExt;
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let ids = context.span().span_context().clone();
    if !ids.is_valid() {
        return None;
    }
    Some((
        TraceId::from_bytes(ids.trace_id().to_bytes())?,
        SpanId::from_bytes(ids.span_id().to_bytes())?,
        ids.is_sampled(),
    ))
}

/// Without an export, spans have no ids of their own.
#[cfg(not(feature = "otlp"))]
fn span_ids(_span: &tracing::Span) -> Option<(TraceId, SpanId, bool)> {
    None
}

/// The trace, the caller's span and the sampled flag of a well-formed `traceparent` (exactly
/// one such header).
fn parent(headers: &HeaderMap) -> Option<(TraceId, SpanId, bool)> {
    let mut all = headers.get_all(TRACEPARENT).iter();
    let value = all.next()?;
    if all.next().is_some() {
        return None;
    }
    parse_traceparent(value.as_bytes())
}

/// W3C's `version "-" trace-id "-" parent-id "-" trace-flags`, lowercase hex: version 00 is
/// exactly that; a later version may add fields after a dash, which are ignored; version ff
/// is invalid.
fn parse_traceparent(v: &[u8]) -> Option<(TraceId, SpanId, bool)> {
    if v.len() < 55 || v[2] != b'-' || v[35] != b'-' || v[52] != b'-' {
        return None;
    }
    let version = parse_hex(&v[0..2])?;
    if version == 0xff || (version == 0 && v.len() != 55) || (v.len() > 55 && v[55] != b'-') {
        return None;
    }
    let trace = (u128::from(parse_hex(&v[3..19])?) << 64) | u128::from(parse_hex(&v[19..35])?);
    let span = parse_hex(&v[36..52])?;
    let flags = parse_hex(&v[53..55])?;
    Some((
        TraceId::from_bytes(trace.to_be_bytes())?,
        SpanId::from_bytes(span.to_be_bytes())?,
        flags & 1 == 1,
    ))
}

/// Up to 16 lowercase hex digits as a number.
fn parse_hex(digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(0u64, |n, &d| {
        let v = match d {
            b'0'..=b'9' => d - b'0',
            b'a'..=b'f' => d - b'a' + 10,
            _ => return None,
        };
        Some((n << 4) | u64::from(v))
    })
}

/// The `tracestate` headers joined into one list, when every member is well-formed, there
/// are at most 32 and no key is repeated (W3C; a malformed list is dropped whole, as the
/// specification allows). Empty members are left out.
fn tracestate(headers: &HeaderMap) -> Option<HeaderValue> {
    let mut members: Vec<&str> = Vec::new();
    let mut length = 0;
    for value in headers.get_all(TRACESTATE) {
        let value = value.to_str().ok()?;
        for member in value.split(',') {
            let member = member.trim_matches([' ', '\t']);
            if member.is_empty() {
                continue;
            }
            let (key, val) = member.split_once('=')?;
            if !valid_key(key)
                || !valid_value(val)
                || members
                    .iter()
                    .any(|m| m.split_once('=').map(|(k, _)| k) == Some(key))
            {
                return None;
            }
            length += member.len() + 1;
            members.push(member);
            // Bounded before the next member's repeat check: a long header costs no more.
            if members.len() > MAX_MEMBERS || length > MAX_TRACESTATE {
                return None;
            }
        }
    }
    if members.is_empty() {
        return None;
    }
    HeaderValue::from_str(&members.join(",")).ok()
}

/// `simple-key` or `tenant-id@system-id`: lowercase letters, digits and `_-*/`, starting
/// with a letter (a digit, for a tenant id).
fn valid_key(key: &str) -> bool {
    let part = |s: &str, max: usize, digit_first: bool| {
        let b = s.as_bytes();
        !b.is_empty()
            && b.len() <= max
            && (b[0].is_ascii_lowercase() || (digit_first && b[0].is_ascii_digit()))
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || b"_-*/".contains(c))
    };
    match key.split_once('@') {
        Some((tenant, system)) => part(tenant, 241, true) && part(system, 14, false),
        None => part(key, 256, false),
    }
}

/// 1 to 256 printable ASCII characters but `,` and `=`, not ending in a space.
fn valid_value(value: &str) -> bool {
    let b = value.as_bytes();
    !b.is_empty()
        && b.len() <= 256
        && b.last() != Some(&b' ')
        && b.iter()
            .all(|&c| (0x20..=0x7e).contains(&c) && c != b',' && c != b'=')
}

/// The answer to a handler asking for a [`TraceContext`] of a server that does not read
/// trace context.
#[derive(Debug)]
pub struct TraceContextOff;

impl IntoResponse for TraceContextOff {
    fn into_response(self) -> Response {
        (
            StatusCode::INTERNAL_SERVER_ERROR,
            "no trace context: server.traceContext.enabled is false, or the extractor ran \
             outside the request's task",
        )
            .into_response()
    }
}

impl<S: Send + Sync> FromRequestParts<S> for TraceContext {
    type Rejection = TraceContextOff;

    async fn from_request_parts(_: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        TraceContext::current().ok_or(TraceContextOff)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (k, v) in pairs {
            map.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        map
    }

    const VALID: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn hex_writes_every_digit_in_order() {
        let n = 0x0123_4567_89ab_cdef_fedc_ba98_7654_3210_u128;
        assert_eq!(&hex::<32>(n), b"0123456789abcdeffedcba9876543210");
        assert_eq!(&hex::<16>(n), b"fedcba9876543210");
        assert_eq!(&hex::<2>(0xa5), b"a5");
        assert_eq!(&hex::<4>(0), b"0000");
    }

    #[test]
    fn a_well_formed_traceparent_makes_a_child_and_anything_else_a_new_root() {
        let child = TraceContext::from_headers(&headers(&[("traceparent", VALID)]), || false);
        assert_eq!(
            child.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(
            child.parent_span_id().unwrap().to_string(),
            "00f067aa0ba902b7"
        );
        assert_ne!(child.span_id(), child.parent_span_id().unwrap());
        assert!(child.sampled());
        let unsampled = VALID.replace("-01", "-00");
        assert!(
            !TraceContext::from_headers(&headers(&[("traceparent", &unsampled)]), || true)
                .sampled()
        );
        // A later version may carry more fields after a dash.
        let later = format!("{}-what-comes-next", VALID.replacen("00", "cc", 1));
        assert!(parse_traceparent(later.as_bytes()).is_some());
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
        ] {
            let root = TraceContext::from_headers(&headers(&[("traceparent", bad)]), || true);
            assert_eq!(root.parent_span_id(), None, "{bad:?}");
            assert!(root.sampled(), "a new root follows the sampler");
        }
        // Two traceparent headers are one too many.
        let two = TraceContext::from_headers(
            &headers(&[("traceparent", VALID), ("traceparent", VALID)]),
            || false,
        );
        assert_eq!(two.parent_span_id(), None);
        let a = TraceContext::from_headers(&HeaderMap::new(), || false);
        let b = TraceContext::from_headers(&HeaderMap::new(), || false);
        assert_ne!(a.trace_id(), b.trace_id());
        assert_eq!(a.traceparent().len(), 55);
    }

    #[test]
    fn tracestate_is_kept_when_well_formed_and_dropped_whole_when_not() {
        let state = |values: &[&str]| {
            let mut pairs = vec![("traceparent", VALID)];
            pairs.extend(values.iter().map(|v| ("tracestate", *v)));
            TraceContext::from_headers(&headers(&pairs), || false)
                .tracestate()
                .map(|v| v.to_str().unwrap().to_owned())
        };
        assert_eq!(
            state(&[
                "congo=t61rcWkgMzE, rojo=00f067aa0ba902b7",
                "tenant1@vendor=x"
            ])
            .as_deref(),
            Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7,tenant1@vendor=x")
        );
        assert_eq!(state(&[]), None);
        assert_eq!(state(&["congo=a,congo=b"]), None, "a repeated key");
        assert_eq!(state(&["Congo=a"]), None, "an uppercase key");
        assert_eq!(state(&["congo"]), None, "no value");
        assert_eq!(state(&["congo=a=b"]), None);
        let many: Vec<String> = (0..33).map(|i| format!("k{i}=v")).collect();
        assert_eq!(state(&[&many.join(",")]), None, "33 members");
        // No tracestate without a traceparent to go with it.
        let alone = TraceContext::from_headers(&headers(&[("tracestate", "congo=a")]), || false);
        assert_eq!(alone.tracestate(), None);
    }
}
