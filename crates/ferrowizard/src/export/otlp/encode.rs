//! OTLP's trace export request (`ExportTraceServiceRequest`, opentelemetry-proto's type, which
//! prost writes): from the SDK's spans (those made inside requests) by that crate's own
//! conversion, and from the requests' own spans ([`Record`]s) field by field.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, InstrumentationScope, KeyValue, any_value};
use opentelemetry_proto::tonic::resource::v1::Resource;
use opentelemetry_proto::tonic::trace::v1::span::SpanKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use opentelemetry_proto::tonic::trace::v1::{ResourceSpans, ScopeSpans, Span, SpanFlags, Status};
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
use opentelemetry_sdk::trace::SpanData;

use super::record::Record;

/// The export request of `spans` from `resource`: one `ResourceSpans`, a `ScopeSpans` for each
/// instrumentation scope.
pub(super) fn sdk_spans(
    resource: &ResourceAttributesWithSchema,
    spans: Vec<SpanData>,
) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: group_spans_by_resource_and_scope(spans, resource),
    }
}

/// The export request of recorded requests' spans from `resource`, in the scope `scope`.
pub(super) fn recorded(
    resource: &ResourceAttributesWithSchema,
    scope: &str,
    records: &[Record],
) -> ExportTraceServiceRequest {
    ExportTraceServiceRequest {
        resource_spans: vec![ResourceSpans {
            resource: Some(Resource {
                attributes: resource.attributes.0.clone(),
                dropped_attributes_count: 0,
                entity_refs: Vec::new(),
            }),
            scope_spans: vec![ScopeSpans {
                scope: Some(InstrumentationScope {
                    name: scope.to_owned(),
                    ..InstrumentationScope::default()
                }),
                spans: records.iter().map(span).collect(),
                schema_url: String::new(),
            }],
            schema_url: resource.schema_url.clone().unwrap_or_default(),
        }],
    }
}

/// A recorded request's span: OpenTelemetry's HTTP server span with the semantic conventions'
/// attributes, as the observe stage's `http.server.request` span has them.
fn span(record: &Record) -> Span {
    let (path, query, request_id, route) = record.parts();
    let known = known_method(&record.method);
    let mut attributes = Vec::with_capacity(9);
    let mut add = |key: &str, value: any_value::Value| {
        attributes.push(KeyValue {
            key: key.to_owned(),
            value: Some(AnyValue { value: Some(value) }),
            ..KeyValue::default()
        });
    };
    let text = |s: &str| any_value::Value::StringValue(s.to_owned());
    add("http.request.method", text(known.unwrap_or("_OTHER")));
    if known.is_none() {
        add("http.request.method_original", text(record.method.as_str()));
    }
    if let Some(route) = route {
        add("http.route", text(route));
    }
    add("url.path", text(path));
    if let Some(query) = query {
        add("url.query", text(query));
    }
    add("network.protocol.version", text(record.version));
    if let Some(client) = record.client {
        add(
            "client.address",
            any_value::Value::StringValue(client.to_string()),
        );
    }
    if let Some(id) = request_id {
        add("request.id", text(id));
    }
    if let Some(status) = record.status {
        add(
            "http.response.status_code",
            any_value::Value::IntValue(i64::from(status)),
        );
    }
    let code = match record.status {
        Some(status) if status >= 500 => StatusCode::Error,
        _ => StatusCode::Unset,
    };
    // Recorded spans are sampled; whether the parent is remote is known, and it is when the
    // request came with one.
    let mut flags = 1 | SpanFlags::ContextHasIsRemoteMask as u32;
    if record.parent.is_some() {
        flags |= SpanFlags::ContextIsRemoteMask as u32;
    }
    Span {
        trace_id: record.trace_id.to_vec(),
        span_id: record.span_id.to_vec(),
        trace_state: record
            .state
            .as_ref()
            .and_then(|s| s.to_str().ok())
            .unwrap_or_default()
            .to_owned(),
        parent_span_id: record.parent.map(|p| p.to_vec()).unwrap_or_default(),
        flags,
        name: match route {
            Some(route) => format!("{} {route}", record.method),
            None => record.method.as_str().to_owned(),
        },
        kind: SpanKind::Server as i32,
        start_time_unix_nano: nanos(record.start),
        end_time_unix_nano: nanos(record.end),
        attributes,
        status: Some(Status {
            message: String::new(),
            code: code as i32,
        }),
        ..Span::default()
    }
}

/// `http.request.method`: the name when the conventions know it, else `None` (written as
/// `_OTHER`, with the name as `http.request.method_original`).
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

/// Nanoseconds since the epoch, as OTLP counts them (0 before it).
fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
