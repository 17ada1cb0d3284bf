//! OTLP's trace export request (`ExportTraceServiceRequest`) in protobuf, written straight from
//! the SDK's spans (those made inside requests) and from the requests' own ([`Record`]s).
//!
//! By hand, because the crates' way costs more per sampled request: opentelemetry-proto
//! converts each span into its generated structs (an allocation for every attribute's key and
//! value, the scope hashed once a span) and prost sizes each nested message again at every
//! level it is nested in (BENCHMARKS.md has the figures). Here each message's size is computed once, by arithmetic on its parts' lengths,
//! and the request is written into one buffer of exactly that size. The tests decode what is
//! written with opentelemetry-proto's types and compare it with that crate's own conversion.
//!
//! Fields are written in the order prost writes them (the `.proto` files' order, a span's
//! `flags` last), and a field holding its default (an empty string, a zero count) is left out,
//! as prost does: the bytes are the ones the crates would send.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanContext, SpanId, SpanKind, Status, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::SpanData;

use super::record::Record;

/// Protobuf's wire types.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const LEN: u32 = 2;
const FIXED32: u32 = 5;

/// `SpanFlags`: the span's context says whether its parent is remote, and whether it is.
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

/// The bytes of a varint holding `v`.
fn varint_len(v: u64) -> usize {
    (64 - (v | 1).leading_zeros() as usize).div_ceil(7)
}

/// The bytes of a field's key.
fn key_len(field: u32) -> usize {
    varint_len(u64::from(field << 3))
}

/// The bytes of a length-delimited field (a string, bytes, a message) of `len` bytes.
fn len_field(field: u32, len: usize) -> usize {
    key_len(field) + varint_len(len as u64) + len
}

/// The bytes of a string field, left out when empty.
fn str_field(field: u32, s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        len_field(field, s.len())
    }
}

/// The bytes of a `uint32` field, left out when zero.
fn u32_field(field: u32, v: u32) -> usize {
    if v == 0 {
        0
    } else {
        key_len(field) + varint_len(u64::from(v))
    }
}

/// Nanoseconds since the epoch, as OTLP counts them (0 before it).
fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// A protobuf writer into a buffer.
struct Out(Vec<u8>);

impl Out {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push(v as u8 | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, field: u32, wire: u32) {
        self.varint(u64::from(field << 3 | wire));
    }

    /// A length-delimited field's key and length; its `len` bytes follow.
    fn header(&mut self, field: u32, len: usize) {
        self.key(field, LEN);
        self.varint(len as u64);
    }

    fn bytes(&mut self, field: u32, bytes: &[u8]) {
        self.header(field, bytes.len());
        self.0.extend_from_slice(bytes);
    }

    fn str(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    fn u32(&mut self, field: u32, v: u32) {
        if v != 0 {
            self.key(field, VARINT);
            self.varint(u64::from(v));
        }
    }

    fn fixed64(&mut self, field: u32, v: u64) {
        self.key(field, FIXED64);
        self.0.extend_from_slice(&v.to_le_bytes());
    }

    fn fixed32(&mut self, field: u32, v: u32) {
        self.key(field, FIXED32);
        self.0.extend_from_slice(&v.to_le_bytes());
    }
}

/// `AnyValue`'s body. A value kind this writer does not know (the enums are non-exhaustive)
/// goes as its text.
fn any_len(value: &Value) -> usize {
    match value {
        Value::Bool(_) => 2,
        Value::I64(i) => 1 + varint_len(*i as u64),
        Value::F64(_) => 9,
        Value::String(s) => len_field(1, s.as_str().len()),
        Value::Array(array) => match array_len(array) {
            Some(len) => len_field(5, len),
            None => len_field(1, value.as_str().len()),
        },
        other => len_field(1, other.as_str().len()),
    }
}

fn write_any(out: &mut Out, value: &Value) {
    match value {
        Value::Bool(b) => {
            out.key(2, VARINT);
            out.varint(u64::from(*b));
        }
        Value::I64(i) => {
            out.key(3, VARINT);
            out.varint(*i as u64);
        }
        Value::F64(f) => {
            out.key(4, FIXED64);
            out.0.extend_from_slice(&f.to_le_bytes());
        }
        Value::String(s) => out.bytes(1, s.as_str().as_bytes()),
        Value::Array(array) => match array_len(array) {
            Some(len) => {
                out.header(5, len);
                write_array(out, array);
            }
            None => out.bytes(1, value.as_str().as_bytes()),
        },
        other => out.bytes(1, other.as_str().as_bytes()),
    }
}

/// `ArrayValue`'s body: each element an `AnyValue`; `None` for an array kind this writer does
/// not know.
fn array_len(array: &Array) -> Option<usize> {
    fn each<T>(values: &[T], len: impl Fn(&T) -> usize) -> usize {
        values.iter().map(|v| len_field(1, len(v))).sum()
    }
    Some(match array {
        Array::Bool(v) => each(v, |_| 2),
        Array::I64(v) => each(v, |i| 1 + varint_len(*i as u64)),
        Array::F64(v) => each(v, |_| 9),
        Array::String(v) => each(v, |s| len_field(1, s.as_str().len())),
        _ => return None,
    })
}

fn write_array(out: &mut Out, array: &Array) {
    match array {
        Array::Bool(v) => v.iter().for_each(|b| {
            out.header(1, 2);
            write_any(out, &Value::Bool(*b));
        }),
        Array::I64(v) => v.iter().for_each(|i| {
            out.header(1, 1 + varint_len(*i as u64));
            write_any(out, &Value::I64(*i));
        }),
        Array::F64(v) => v.iter().for_each(|f| {
            out.header(1, 9);
            write_any(out, &Value::F64(*f));
        }),
        Array::String(v) => v.iter().for_each(|s| {
            out.header(1, len_field(1, s.as_str().len()));
            out.bytes(1, s.as_str().as_bytes());
        }),
        _ => {}
    }
}

/// `KeyValue`'s body.
fn kv_len(key: &str, value: &Value) -> usize {
    str_field(1, key) + len_field(2, any_len(value))
}

fn write_kv(out: &mut Out, field: u32, key: &str, value: &Value) {
    out.header(field, kv_len(key, value));
    out.str(1, key);
    out.header(2, any_len(value));
    write_any(out, value);
}

/// The bytes of `attributes` as the repeated `KeyValue` field `field`.
fn attributes_len(field: u32, attributes: &[KeyValue]) -> usize {
    attributes
        .iter()
        .map(|kv| len_field(field, kv_len(kv.key.as_str(), &kv.value)))
        .sum()
}

fn write_attributes(out: &mut Out, field: u32, attributes: &[KeyValue]) {
    for kv in attributes {
        write_kv(out, field, kv.key.as_str(), &kv.value);
    }
}

/// A trace state's header, when it has one (most have none: no allocation then).
fn trace_state(context: &SpanContext) -> Option<String> {
    let state: &TraceState = context.trace_state();
    (*state != TraceState::NONE)
        .then(|| state.header())
        .filter(|h| !h.is_empty())
}

fn kind(kind: &SpanKind) -> u32 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

/// `Status`'s code and message.
fn status(status: &Status) -> (u32, &str) {
    match status {
        Status::Unset => (0, ""),
        Status::Ok => (1, ""),
        Status::Error { description } => (2, description),
    }
}

fn status_len(s: &Status) -> usize {
    let (code, message) = status(s);
    str_field(2, message) + u32_field(3, code)
}

/// A span's parts whose sizes take work: its trace state's header, and the parts' lengths.
struct Sized<'a> {
    span: &'a SpanData,
    state: Option<String>,
    len: usize,
}

impl<'a> Sized<'a> {
    fn new(span: &'a SpanData) -> Sized<'a> {
        let state = trace_state(&span.span_context);
        let mut len = len_field(1, 16) + len_field(2, 8);
        len += state.as_deref().map_or(0, |s| str_field(3, s));
        if span.parent_span_id != SpanId::INVALID {
            len += len_field(4, 8);
        }
        len += key_len(16) + 4;
        len += str_field(5, &span.name);
        len += key_len(6) + varint_len(u64::from(kind(&span.span_kind)));
        len += 2 * (key_len(7) + 8);
        len += attributes_len(9, &span.attributes);
        len += u32_field(10, span.dropped_attributes_count);
        len += span
            .events
            .events
            .iter()
            .map(|e| len_field(11, event_len(e)))
            .sum::<usize>();
        len += u32_field(12, span.events.dropped_count);
        len += span
            .links
            .links
            .iter()
            .map(|l| len_field(13, link_len(l)))
            .sum::<usize>();
        len += u32_field(14, span.links.dropped_count);
        len += len_field(15, status_len(&span.status));
        Sized { span, state, len }
    }

    fn write(&self, out: &mut Out) {
        let span = self.span;
        let context = &span.span_context;
        out.header(2, self.len);
        out.bytes(1, &context.trace_id().to_bytes());
        out.bytes(2, &context.span_id().to_bytes());
        if let Some(state) = &self.state {
            out.str(3, state);
        }
        if span.parent_span_id != SpanId::INVALID {
            out.bytes(4, &span.parent_span_id.to_bytes());
        }
        out.str(5, &span.name);
        out.key(6, VARINT);
        out.varint(u64::from(kind(&span.span_kind)));
        out.fixed64(7, nanos(span.start_time));
        out.fixed64(8, nanos(span.end_time));
        write_attributes(out, 9, &span.attributes);
        out.u32(10, span.dropped_attributes_count);
        for event in &span.events.events {
            out.header(11, event_len(event));
            out.fixed64(1, nanos(event.timestamp));
            out.str(2, &event.name);
            write_attributes(out, 3, &event.attributes);
            out.u32(4, event.dropped_attributes_count);
        }
        out.u32(12, span.events.dropped_count);
        for link in &span.links.links {
            out.header(13, link_len(link));
            let context = &link.span_context;
            out.bytes(1, &context.trace_id().to_bytes());
            out.bytes(2, &context.span_id().to_bytes());
            if let Some(state) = trace_state(context) {
                out.str(3, &state);
            }
            write_attributes(out, 4, &link.attributes);
            out.u32(5, link.dropped_attributes_count);
            out.fixed32(6, flags(context.is_remote(), context));
        }
        out.u32(14, span.links.dropped_count);
        out.header(15, status_len(&span.status));
        let (code, message) = status(&span.status);
        out.str(2, message);
        out.u32(3, code);
        out.fixed32(16, flags(span.parent_span_is_remote, context));
    }
}

/// `flags`: the trace flags, and whether the parent (or the linked span) is remote.
fn flags(remote: bool, context: &SpanContext) -> u32 {
    u32::from(context.trace_flags().to_u8()) | HAS_IS_REMOTE | if remote { IS_REMOTE } else { 0 }
}

fn event_len(event: &opentelemetry::trace::Event) -> usize {
    key_len(1)
        + 8
        + str_field(2, &event.name)
        + attributes_len(3, &event.attributes)
        + u32_field(4, event.dropped_attributes_count)
}

fn link_len(link: &opentelemetry::trace::Link) -> usize {
    let context = &link.span_context;
    len_field(1, 16)
        + len_field(2, 8)
        + trace_state(context).map_or(0, |s| str_field(3, &s))
        + attributes_len(4, &link.attributes)
        + u32_field(5, link.dropped_attributes_count)
        + key_len(6)
        + 4
}

/// `InstrumentationScope`'s body.
fn scope_len(scope: &InstrumentationScope) -> usize {
    str_field(1, scope.name())
        + str_field(2, scope.version().unwrap_or_default())
        + scope
            .attributes()
            .map(|kv| len_field(3, kv_len(kv.key.as_str(), &kv.value)))
            .sum::<usize>()
}

fn write_scope(out: &mut Out, scope: &InstrumentationScope) {
    out.str(1, scope.name());
    out.str(2, scope.version().unwrap_or_default());
    for kv in scope.attributes() {
        write_kv(out, 3, kv.key.as_str(), &kv.value);
    }
}

/// A request attribute's value.
enum Attr<'a> {
    Str(&'a str),
    Int(i64),
}

impl Attr<'_> {
    /// `AnyValue`'s body.
    fn len(&self) -> usize {
        match self {
            Attr::Str(s) => len_field(1, s.len()),
            Attr::Int(i) => 1 + varint_len(*i as u64),
        }
    }

    fn write(&self, out: &mut Out) {
        match self {
            Attr::Str(s) => out.bytes(1, s.as_bytes()),
            Attr::Int(i) => {
                out.key(3, VARINT);
                out.varint(*i as u64);
            }
        }
    }
}

/// `http.request.method`: the name when the conventions know it, else `_OTHER` (and the name
/// as `http.request.method_original`).
fn known_method(method: &http::Method) -> Option<&'static str> {
    use http::Method;
    [
        (Method::GET, "GET"),
        (Method::POST, "POST"),
        (Method::PUT, "PUT"),
        (Method::DELETE, "DELETE"),
        (Method::HEAD, "HEAD"),
        (Method::OPTIONS, "OPTIONS"),
        (Method::PATCH, "PATCH"),
        (Method::CONNECT, "CONNECT"),
        (Method::TRACE, "TRACE"),
    ]
    .into_iter()
    .find(|(m, _)| m == method)
    .map(|(_, name)| name)
}

/// A request's span ([`super::record::Record`]) with its attributes and size worked out.
struct RequestSized<'a> {
    record: &'a Record,
    attributes: [(&'static str, Option<Attr<'a>>); 9],
    /// The name's parts: the method and, when known, a space and the route.
    name: (&'a str, Option<&'a str>),
    len: usize,
}

impl<'a> RequestSized<'a> {
    /// `client`: the client's address as text.
    fn new(record: &'a Record, client: Option<&'a str>) -> RequestSized<'a> {
        let known = known_method(&record.method);
        let (path, query, request_id, route) = record.parts();
        let mut sized = RequestSized {
            record,
            attributes: [
                (
                    "http.request.method",
                    Some(Attr::Str(known.unwrap_or("_OTHER"))),
                ),
                (
                    "http.request.method_original",
                    known.is_none().then(|| Attr::Str(record.method.as_str())),
                ),
                ("http.route", route.map(Attr::Str)),
                ("url.path", Some(Attr::Str(path))),
                ("url.query", query.map(Attr::Str)),
                ("network.protocol.version", Some(Attr::Str(record.version))),
                ("client.address", client.map(Attr::Str)),
                ("request.id", request_id.map(Attr::Str)),
                (
                    "http.response.status_code",
                    record.status.map(|s| Attr::Int(i64::from(s))),
                ),
            ],
            name: (record.method.as_str(), route),
            len: 0,
        };
        sized.len = sized.body_len();
        sized
    }

    fn attributes(&self) -> impl Iterator<Item = (&'static str, &Attr<'a>)> {
        self.attributes
            .iter()
            .filter_map(|(key, value)| Some((*key, value.as_ref()?)))
    }

    fn name_len(&self) -> usize {
        self.name.0.len() + self.name.1.map_or(0, |r| 1 + r.len())
    }

    fn status(&self) -> u32 {
        if self.record.status.is_some_and(|s| s >= 500) {
            2
        } else {
            0
        }
    }

    fn body_len(&self) -> usize {
        let r = self.record;
        let mut len = len_field(1, 16) + len_field(2, 8);
        len += r
            .state
            .as_ref()
            .map_or(0, |s| str_field(3, s.to_str().unwrap_or_default()));
        if r.parent.is_some() {
            len += len_field(4, 8);
        }
        len += len_field(5, self.name_len());
        len += key_len(6) + 1;
        len += 2 * (key_len(7) + 8);
        len += self
            .attributes()
            .map(|(k, v)| len_field(9, str_field(1, k) + len_field(2, v.len())))
            .sum::<usize>();
        len += len_field(15, u32_field(3, self.status()));
        len += key_len(16) + 4;
        len
    }

    fn write(&self, out: &mut Out) {
        let r = self.record;
        out.header(2, self.len);
        out.bytes(1, &r.trace_id);
        out.bytes(2, &r.span_id);
        if let Some(state) = &r.state {
            out.str(3, state.to_str().unwrap_or_default());
        }
        if let Some(parent) = &r.parent {
            out.bytes(4, parent);
        }
        out.header(5, self.name_len());
        out.0.extend_from_slice(self.name.0.as_bytes());
        if let Some(route) = self.name.1 {
            out.0.push(b' ');
            out.0.extend_from_slice(route.as_bytes());
        }
        out.key(6, VARINT);
        out.varint(2); // SERVER
        out.fixed64(7, nanos(r.start));
        out.fixed64(8, nanos(r.end));
        for (key, value) in self.attributes() {
            out.header(9, str_field(1, key) + len_field(2, value.len()));
            out.str(1, key);
            out.header(2, value.len());
            value.write(out);
        }
        let code = self.status();
        out.header(15, u32_field(3, code));
        out.u32(3, code);
        let remote = if r.parent.is_some() { IS_REMOTE } else { 0 };
        out.fixed32(16, 1 | HAS_IS_REMOTE | remote);
    }
}

/// Appends `ip` as text: an IPv4 address by hand (the formatting machinery takes ten times as
/// long), an IPv6 one as the standard library writes it (its rules for `::`).
fn ip_text(ip: std::net::IpAddr, out: &mut String) {
    use std::fmt::Write as _;
    match ip {
        std::net::IpAddr::V4(v4) => {
            for (i, octet) in v4.octets().into_iter().enumerate() {
                if i > 0 {
                    out.push('.');
                }
                if octet >= 100 {
                    out.push(char::from(b'0' + octet / 100));
                }
                if octet >= 10 {
                    out.push(char::from(b'0' + octet / 10 % 10));
                }
                out.push(char::from(b'0' + octet % 10));
            }
        }
        std::net::IpAddr::V6(v6) => {
            let _ = write!(out, "{v6}");
        }
    }
}

/// The export request of recorded requests' spans from `resource`, in the scope `scope`.
pub(crate) fn encode_requests(
    resource: &EncodedResource,
    scope: &str,
    records: &[Record],
) -> Vec<u8> {
    // The clients' addresses as text, in one string.
    let mut clients = String::with_capacity(records.len() * 16);
    let ranges: Vec<Option<std::ops::Range<usize>>> = records
        .iter()
        .map(|r| {
            r.client.map(|ip| {
                let start = clients.len();
                ip_text(ip, &mut clients);
                start..clients.len()
            })
        })
        .collect();
    let sized: Vec<RequestSized<'_>> = records
        .iter()
        .zip(&ranges)
        .map(|(r, range)| RequestSized::new(r, range.clone().map(|range| &clients[range])))
        .collect();
    let scope_len = str_field(1, scope);
    let scope_spans_len =
        len_field(1, scope_len) + sized.iter().map(|s| len_field(2, s.len)).sum::<usize>();
    let resource_spans_len = len_field(1, resource.body.len())
        + len_field(2, scope_spans_len)
        + str_field(3, &resource.schema_url);
    let total = len_field(1, resource_spans_len);
    let mut out = Out(Vec::with_capacity(total));
    out.header(1, resource_spans_len);
    out.bytes(1, &resource.body);
    out.header(2, scope_spans_len);
    out.header(1, scope_len);
    out.str(1, scope);
    for s in &sized {
        s.write(&mut out);
    }
    out.str(3, &resource.schema_url);
    debug_assert_eq!(out.0.len(), total, "a size computed wrong");
    out.0
}

/// A resource, written once: `Resource`'s body and the resource's schema URL.
#[derive(Debug, Default)]
pub(crate) struct EncodedResource {
    body: Vec<u8>,
    schema_url: String,
}

impl EncodedResource {
    pub(crate) fn new(resource: &Resource) -> EncodedResource {
        let mut out = Out(Vec::new());
        for (key, value) in resource.iter() {
            write_kv(&mut out, 1, key.as_str(), value);
        }
        EncodedResource {
            body: out.0,
            schema_url: resource.schema_url().unwrap_or_default().to_owned(),
        }
    }
}

/// The export request of `spans` from `resource`: one `ResourceSpans`, a `ScopeSpans` for each
/// instrumentation scope in the order the spans first name them.
pub(crate) fn encode(resource: &EncodedResource, spans: &[SpanData]) -> Vec<u8> {
    // Scopes are few (usually one): a list searched by equality, not a map hashing each.
    let mut scopes: Vec<(&InstrumentationScope, Vec<Sized<'_>>)> = Vec::new();
    for span in spans {
        let sized = Sized::new(span);
        match scopes
            .iter_mut()
            .find(|(scope, _)| **scope == span.instrumentation_scope)
        {
            Some((_, group)) => group.push(sized),
            None => scopes.push((&span.instrumentation_scope, vec![sized])),
        }
    }
    let scope_spans_len = |scope: &InstrumentationScope, group: &[Sized<'_>]| {
        len_field(1, scope_len(scope))
            + group.iter().map(|s| len_field(2, s.len)).sum::<usize>()
            + str_field(3, scope.schema_url().unwrap_or_default())
    };
    let resource_spans_len = len_field(1, resource.body.len())
        + scopes
            .iter()
            .map(|(scope, group)| len_field(2, scope_spans_len(scope, group)))
            .sum::<usize>()
        + str_field(3, &resource.schema_url);
    let total = len_field(1, resource_spans_len);
    let mut out = Out(Vec::with_capacity(total));
    out.header(1, resource_spans_len);
    out.bytes(1, &resource.body);
    for (scope, group) in &scopes {
        out.header(2, scope_spans_len(scope, group));
        out.header(1, scope_len(scope));
        write_scope(&mut out, scope);
        for sized in group {
            sized.write(&mut out);
        }
        out.str(3, scope.schema_url().unwrap_or_default());
    }
    out.str(3, &resource.schema_url);
    debug_assert_eq!(out.0.len(), total, "a size computed wrong");
    out.0
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::time::Duration;

    use opentelemetry::trace::{
        Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId,
    };
    use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::tonic::common::v1::KeyValue as ProtoKeyValue;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use opentelemetry_sdk::Resource;
    use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
    use prost::Message;

    use super::{EncodedResource, encode, varint_len};

    fn context(trace: u128, span: u64, sampled: bool, remote: bool, state: &str) -> SpanContext {
        SpanContext::new(
            TraceId::from(trace),
            SpanId::from(span),
            if sampled {
                TraceFlags::SAMPLED
            } else {
                TraceFlags::default()
            },
            remote,
            state.parse().unwrap(),
        )
    }

    /// Every value kind the SDK has, as attributes.
    fn values() -> Vec<KeyValue> {
        vec![
            KeyValue::new("bool", false),
            KeyValue::new("true", true),
            KeyValue::new("int", -42_i64),
            KeyValue::new("zero", 0_i64),
            KeyValue::new("big", i64::MAX),
            KeyValue::new("float", 2.5_f64),
            KeyValue::new("static", "text"),
            KeyValue::new("owned", "é".repeat(100)),
            KeyValue::new("empty", ""),
            KeyValue::new("", "an empty key"),
            KeyValue::new("bools", Value::Array(Array::Bool(vec![true, false]))),
            KeyValue::new("ints", Value::Array(Array::I64(vec![1, -1, 300]))),
            KeyValue::new("floats", Value::Array(Array::F64(vec![0.0, -1.5]))),
            KeyValue::new(
                "strings",
                Value::Array(Array::String(vec![StringValue::from("a"), "".into()])),
            ),
            KeyValue::new("none", Value::Array(Array::I64(vec![]))),
        ]
    }

    fn span(
        scope: &InstrumentationScope,
        n: u64,
        parent: Option<(u64, bool)>,
        status: Status,
    ) -> SpanData {
        let start = std::time::UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789 + n);
        let mut events = SpanEvents::default();
        let mut links = SpanLinks::default();
        if n.is_multiple_of(2) {
            events.events = vec![
                Event::new("plain", start, vec![], 0),
                Event::new(Cow::Owned(format!("event {n}")), start, values(), 3),
            ];
            events.dropped_count = 2;
            links.links = vec![
                Link::new(context(7, 8, true, true, "k=v,a=b"), values(), 1),
                Link::new(context(9, 10, false, false, ""), vec![], 0),
            ];
            links.dropped_count = 5;
        }
        SpanData {
            span_context: context(
                0x4bf92f3577b34da6a3ce929d0e0e4736,
                n + 1,
                !n.is_multiple_of(3),
                false,
                if n == 1 { "congo=t61rcWkgMzE" } else { "" },
            ),
            parent_span_id: parent.map_or(SpanId::INVALID, |(p, _)| SpanId::from(p)),
            parent_span_is_remote: parent.is_some_and(|(_, remote)| remote),
            span_kind: [
                SpanKind::Server,
                SpanKind::Client,
                SpanKind::Internal,
                SpanKind::Producer,
                SpanKind::Consumer,
            ][n as usize % 5]
                .clone(),
            name: if n == 0 {
                Cow::Borrowed("GET /quotes/{symbol}")
            } else {
                Cow::Owned(format!("span {n}"))
            },
            start_time: start,
            end_time: start + Duration::from_micros(250),
            attributes: if n == 0 { values() } else { vec![] },
            dropped_attributes_count: n as u32 % 2,
            events,
            links,
            status,
            instrumentation_scope: scope.clone(),
        }
    }

    /// The resource's attributes in a stable order (a resource keeps them in a map).
    fn sorted(request: &mut ExportTraceServiceRequest) {
        for rs in &mut request.resource_spans {
            if let Some(r) = &mut rs.resource {
                r.attributes
                    .sort_by(|a: &ProtoKeyValue, b| a.key.cmp(&b.key));
            }
        }
    }

    /// Catches: any field written under the wrong number or wire type, a size computed wrong
    /// (the decoder fails or reads another message), a value kind, an event, a link, a status
    /// or a scope written otherwise than opentelemetry-proto's conversion writes them.
    #[test]
    fn the_request_decodes_to_what_opentelemetry_proto_converts() {
        let ours = InstrumentationScope::builder("ferrowizard").build();
        let other = InstrumentationScope::builder("other")
            .with_version("1.2.3")
            .with_schema_url("https://opentelemetry.io/schemas/1.26.0")
            .with_attributes([KeyValue::new("scope.attr", 7_i64)])
            .build();
        let spans = vec![
            span(&ours, 0, None, Status::Unset),
            span(&other, 1, Some((100, true)), Status::Ok),
            span(&ours, 2, Some((1, false)), Status::error("it broke")),
            span(&other, 3, None, Status::error("")),
            span(&ours, 4, Some((3, true)), Status::Unset),
        ];
        let resource = Resource::builder_empty()
            .with_service_name("quotes")
            .with_schema_url(
                [KeyValue::new("deployment.environment.name", "test")],
                "https://opentelemetry.io/schemas/1.26.0",
            )
            .build();

        let bytes = encode(&EncodedResource::new(&resource), &spans);
        let mut decoded = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
        let mut expected = ExportTraceServiceRequest {
            resource_spans: group_spans_by_resource_and_scope(
                spans,
                &ResourceAttributesWithSchema::from(&resource),
            ),
        };
        // Byte for byte what prost writes of the crate's conversion (both read the resource's
        // attributes in its map's order).
        let theirs = expected.encode_to_vec();
        let first = bytes.iter().zip(&theirs).position(|(a, b)| a != b);
        assert!(
            bytes == theirs,
            "{} bytes against {}, first differing at {first:?}",
            bytes.len(),
            theirs.len()
        );
        sorted(&mut decoded);
        sorted(&mut expected);
        assert_eq!(decoded, expected);
        assert_eq!(decoded.resource_spans[0].scope_spans.len(), 2, "two scopes");
        assert_eq!(decoded.resource_spans[0].scope_spans[0].spans.len(), 3);
    }

    #[test]
    fn a_batch_of_nothing_is_a_resource_without_spans() {
        let resource = Resource::builder_empty().with_service_name("q").build();
        let bytes = encode(&EncodedResource::new(&resource), &[]);
        let decoded = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
        assert!(decoded.resource_spans[0].scope_spans.is_empty());
    }

    #[test]
    fn addresses_read_as_the_standard_library_writes_them() {
        for ip in [
            "0.0.0.0",
            "127.0.0.1",
            "10.20.255.9",
            "192.168.100.99",
            "::1",
            "2001:db8::ff00:42:8329",
            "::ffff:10.0.0.1",
        ] {
            let ip: std::net::IpAddr = ip.parse().unwrap();
            let mut text = String::new();
            super::ip_text(ip, &mut text);
            assert_eq!(text, ip.to_string());
        }
    }

    #[test]
    fn varints_take_the_bytes_protobuf_gives_them() {
        for (v, len) in [
            (0, 1),
            (127, 1),
            (128, 2),
            (16_383, 2),
            (16_384, 3),
            (u64::MAX, 10),
        ] {
            assert_eq!(varint_len(v), len, "{v}");
        }
    }
}
