//! OpenTelemetry export against real OTLP receivers: a gRPC one built on `opentelemetry-proto`'s
//! generated service definitions (tonic), and an HTTP/protobuf one decoding the same messages.
//! The spans of a run carry the `traceparent` sent, the ids the request log wrote, the request
//! IDs, OpenTelemetry's HTTP attributes and the configured resource; log events come with
//! their request's trace; a collector that is down costs requests nothing and what is dropped
//! is counted.

mod common;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{connect, request, signal, start, wait_exit, write_config};
use opentelemetry_proto::tonic::collector::logs::v1::logs_service_server::{
    LogsService, LogsServiceServer,
};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_server::{
    TraceService, TraceServiceServer,
};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{KeyValue, any_value};
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// A span with its resource's attributes.
type ResourceSpan = (Vec<KeyValue>, Span);

/// What a receiver got: spans and log records with their resource's attributes, and the
/// `authorization` header of each export.
#[derive(Clone, Default)]
struct Received {
    spans: Arc<Mutex<Vec<ResourceSpan>>>,
    logs: Arc<Mutex<Vec<LogRecord>>>,
    /// The resource of each batch of log records.
    log_resources: Arc<Mutex<Vec<Vec<KeyValue>>>>,
    authorization: Arc<Mutex<Vec<String>>>,
}

impl Received {
    fn traces(&self, request: ExportTraceServiceRequest) {
        for rs in request.resource_spans {
            let resource = rs.resource.map(|r| r.attributes).unwrap_or_default();
            for ss in rs.scope_spans {
                for span in ss.spans {
                    self.spans.lock().unwrap().push((resource.clone(), span));
                }
            }
        }
    }

    fn log_records(&self, request: ExportLogsServiceRequest) {
        for rl in request.resource_logs {
            let resource = rl.resource.map(|r| r.attributes).unwrap_or_default();
            self.log_resources.lock().unwrap().push(resource);
            for sl in rl.scope_logs {
                self.logs.lock().unwrap().extend(sl.log_records);
            }
        }
    }

    /// Notes an HTTP export's `authorization` header (empty when it has none).
    fn authorized(&self, headers: &axum::http::HeaderMap) {
        let value = headers
            .get("authorization")
            .map(|v| v.to_str().unwrap_or_default().to_owned())
            .unwrap_or_default();
        self.authorization.lock().unwrap().push(value);
    }

    fn spans(&self) -> Vec<ResourceSpan> {
        self.spans.lock().unwrap().clone()
    }
}

#[tonic::async_trait]
impl TraceService for Received {
    async fn export(
        &self,
        request: tonic::Request<ExportTraceServiceRequest>,
    ) -> Result<tonic::Response<ExportTraceServiceResponse>, tonic::Status> {
        if let Some(v) = request.metadata().get("authorization") {
            let v = v.to_str().unwrap_or_default().to_owned();
            self.authorization.lock().unwrap().push(v);
        }
        self.traces(request.into_inner());
        Ok(tonic::Response::new(ExportTraceServiceResponse {
            partial_success: None,
        }))
    }
}

#[tonic::async_trait]
impl LogsService for Received {
    async fn export(
        &self,
        request: tonic::Request<ExportLogsServiceRequest>,
    ) -> Result<tonic::Response<ExportLogsServiceResponse>, tonic::Status> {
        self.log_records(request.into_inner());
        Ok(tonic::Response::new(ExportLogsServiceResponse {
            partial_success: None,
        }))
    }
}

/// A runtime of the receiver's own, and a listener on 127.0.0.1.
fn bound() -> (tokio::runtime::Runtime, tokio::net::TcpListener, SocketAddr) {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    (runtime, listener, addr)
}

/// A gRPC OTLP receiver on 127.0.0.1, on a runtime of its own.
fn grpc_receiver() -> (tokio::runtime::Runtime, SocketAddr, Received) {
    let (runtime, listener, addr) = bound();
    let received = Received::default();
    let service = received.clone();
    runtime.spawn(async move {
        tonic::transport::Server::builder()
            .add_service(TraceServiceServer::new(service.clone()))
            .add_service(LogsServiceServer::new(service))
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
            .await
    });
    (runtime, addr, received)
}

/// An HTTP/protobuf OTLP receiver (`POST /v1/traces`, `/v1/logs`) on 127.0.0.1.
fn http_receiver() -> (tokio::runtime::Runtime, SocketAddr, Received) {
    use axum::body::Bytes;
    use axum::routing::post;
    let (runtime, listener, addr) = bound();
    let received = Received::default();
    let (traces, logs) = (received.clone(), received.clone());
    let app = axum::Router::new()
        .route(
            "/v1/traces",
            post(
                move |headers: axum::http::HeaderMap, body: Bytes| async move {
                    assert_eq!(headers["content-type"], "application/x-protobuf");
                    traces.authorized(&headers);
                    traces.traces(ExportTraceServiceRequest::decode(body).unwrap());
                    ExportTraceServiceResponse::default().encode_to_vec()
                },
            ),
        )
        .route(
            "/v1/logs",
            post(
                move |headers: axum::http::HeaderMap, body: Bytes| async move {
                    logs.authorized(&headers);
                    logs.log_records(ExportLogsServiceRequest::decode(body).unwrap());
                    ExportLogsServiceResponse::default().encode_to_vec()
                },
            ),
        );
    runtime.spawn(async move { axum::serve(listener, app).await });
    (runtime, addr, received)
}

fn attribute<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a any_value::Value> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref())
        .and_then(|v| v.value.as_ref())
}

fn text<'a>(attributes: &'a [KeyValue], key: &str) -> Option<&'a str> {
    match attribute(attributes, key) {
        Some(any_value::Value::StringValue(s)) => Some(s),
        _ => None,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The JSON lines of the request log at `path` once it has `count`.
fn access_lines(path: &Path, count: usize) -> Vec<serde_json::Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        // Only whole lines: the last one may be half written.
        let whole = &text[..text.rfind('\n').map_or(0, |i| i + 1)];
        let lines: Vec<serde_json::Value> = whole
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= count || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn config(dir: &Path, opentelemetry: &str) -> String {
    format!(
        "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
         adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
         requestId: {{enabled: true}}\n  traceContext: {{enabled: true}}\n  \
         requestLog: {{appenders: [{{type: file, currentLogFilename: {}, archive: false, \
         layout: {{type: access-json, includes: [requestUri, requestId, traceId, spanId]}}}}]}}\n\
         logging: {{level: INFO, loggers: {{realtime: TRACE}}, appenders: []}}\n\
         opentelemetry: {opentelemetry}\n",
        dir.join("access.json").display()
    )
}

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
const UNSAMPLED: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00";

/// Sends the run's three requests: a sampled caller's, a new trace's, an unsampled caller's;
/// then an event in the sampled caller's trace and one in the unsampled caller's (their
/// handler has a span of its own).
fn send(app: SocketAddr) {
    let mut conn = connect(app);
    for headers in [
        vec![("traceparent", PARENT), ("X-Request-Id", "req-otlp-1")],
        vec![],
        vec![("traceparent", UNSAMPLED)],
    ] {
        let r = request(&mut conn, "GET", "/realtime/quotes/ACME", &headers, b"").unwrap();
        assert_eq!(r.status, 200);
    }
    let event = br#"{"symbol":"ACME","kind":"alert","quantity":1}"#;
    for parent in [PARENT, UNSAMPLED] {
        let headers = [
            ("traceparent", parent),
            ("Content-Type", "application/json"),
        ];
        let r = request(&mut conn, "POST", "/realtime/events", &headers, event).unwrap();
        assert!(r.status < 300, "{}", r.body);
    }
}

/// Catches: the caller's trace or span lost (another trace id, no parent), ids that differ
/// from the request log's (a log line would lead nowhere), the request ID missing, the HTTP
/// attributes or the span's name and kind wrong, an unsampled caller's trace exported, the
/// resource or the headers ignored, log events exported without their request's trace (a
/// recorded request's or not), spans
/// made inside an unsampled request exported as traces of their own, and spans still queued
/// at SIGTERM lost.
#[test]
fn spans_and_logs_reach_a_grpc_collector_with_the_requests_ids() {
    let (_runtime, addr, received) = grpc_receiver();
    let dir = tempfile::tempdir().unwrap();
    let otel = format!(
        "{{enabled: true, endpoint: 'http://{addr}', serviceName: quotes, \
         resourceAttributes: {{deployment.environment.name: test}}, \
         headers: {{authorization: Bearer t0ken}}, timeout: 5s}}"
    );
    let mut service = start(&write_config(dir.path(), &config(dir.path(), &otel)));
    send(service.app);
    let access = access_lines(&dir.path().join("access.json"), 5);
    signal(&service.child, "TERM");
    assert!(wait_exit(&mut service.child).success());

    let spans = received.spans();
    let requests: Vec<&ResourceSpan> = spans
        .iter()
        .filter(|(_, s)| s.name.starts_with("GET "))
        .collect();
    // The handler's own span: a child of its request's span in the sampled caller's trace;
    // none in the unsampled caller's (dropped as a child, not exported as a trace of its own).
    let validate: Vec<&Span> = spans
        .iter()
        .map(|(_, s)| s)
        .filter(|s| s.name == "validate")
        .collect();
    assert_eq!(validate.len(), 1, "{spans:?}");
    let event = spans
        .iter()
        .map(|(_, s)| s)
        .find(|s| s.name.starts_with("POST "))
        .expect("the sampled event's request span");
    assert_eq!(validate[0].parent_span_id, event.span_id);
    assert_eq!(
        hex(&validate[0].trace_id),
        "4bf92f3577b34da6a3ce929d0e0e4736"
    );
    assert_eq!(access[3]["spanId"], hex(&event.span_id));
    assert!(
        spans
            .iter()
            .all(|(_, s)| hex(&s.trace_id) != "0af7651916cd43dd8448eb211c80319c"),
        "nothing of the unsampled caller's trace"
    );
    assert_eq!(
        spans.len(),
        4,
        "two quotes, one event and its span: {spans:?}"
    );
    assert_eq!(
        requests.len(),
        2,
        "the unsampled caller's is not exported: {spans:?}"
    );
    let (resource, child) = requests
        .iter()
        .find(|(_, s)| hex(&s.trace_id) == "4bf92f3577b34da6a3ce929d0e0e4736")
        .expect("the caller's trace");
    assert_eq!(hex(&child.parent_span_id), "00f067aa0ba902b7");
    assert_eq!(access[0]["traceId"], hex(&child.trace_id));
    assert_eq!(
        access[0]["spanId"],
        hex(&child.span_id),
        "the request log's span id"
    );
    assert_eq!(access[0]["requestId"], "req-otlp-1");
    assert_eq!(text(&child.attributes, "request.id"), Some("req-otlp-1"));
    assert_eq!(child.name, "GET /realtime/quotes/{symbol}");
    assert_eq!(
        child.kind,
        opentelemetry_proto::tonic::trace::v1::span::SpanKind::Server as i32
    );
    assert_eq!(
        text(&child.attributes, "http.route"),
        Some("/realtime/quotes/{symbol}")
    );
    assert_eq!(text(&child.attributes, "http.request.method"), Some("GET"));
    assert_eq!(
        text(&child.attributes, "url.path"),
        Some("/realtime/quotes/ACME")
    );
    assert!(
        matches!(
            attribute(&child.attributes, "http.response.status_code"),
            Some(any_value::Value::IntValue(200))
        ),
        "{:?}",
        child.attributes
    );
    assert_eq!(text(resource, "service.name"), Some("quotes"));
    assert_eq!(text(resource, "deployment.environment.name"), Some("test"));
    // The spans handlers make and the log records, exported by the SDK, carry it too.
    let (resource, _) = spans
        .iter()
        .find(|(_, s)| s.name == "validate")
        .expect("the handler's span");
    assert_eq!(text(resource, "service.name"), Some("quotes"));
    assert_eq!(text(resource, "deployment.environment.name"), Some("test"));
    let log_resources = received.log_resources.lock().unwrap().clone();
    assert!(!log_resources.is_empty(), "no log records exported");
    for resource in &log_resources {
        assert_eq!(text(resource, "service.name"), Some("quotes"));
        assert_eq!(text(resource, "deployment.environment.name"), Some("test"));
    }
    // The new trace: the ids the request log wrote, and its generated request ID.
    let (_, root) = requests
        .iter()
        .find(|(_, s)| s.parent_span_id.is_empty())
        .expect("the new trace's span");
    assert_eq!(access[1]["traceId"], hex(&root.trace_id));
    assert_eq!(access[1]["spanId"], hex(&root.span_id));
    assert_eq!(
        text(&root.attributes, "request.id"),
        access[1]["requestId"].as_str()
    );
    // Every export carries the configured header, and there was at least one.
    let authorization = received.authorization.lock().unwrap().clone();
    assert!(
        !authorization.is_empty() && authorization.iter().all(|a| a == "Bearer t0ken"),
        "headers: {authorization:?}"
    );
    // The handler's DEBUG event, with its request's trace and span.
    let logs = received.logs.lock().unwrap().clone();
    let quoted = logs
        .iter()
        .find(|l| {
            hex(&l.trace_id) == "4bf92f3577b34da6a3ce929d0e0e4736"
                && format!("{:?}", l.body).contains("quote requested")
        })
        .unwrap_or_else(|| panic!("no log record of the caller's quote: {logs:?}"));
    assert_eq!(hex(&quoted.span_id), hex(&child.span_id));
    assert!(
        format!("{:?}", quoted.body).contains("quote requested"),
        "{quoted:?}"
    );
    // The unsampled caller's: not exported as spans, its log records carry its ids all the
    // same (the request log's third line).
    let unsampled = logs
        .iter()
        .find(|l| {
            hex(&l.trace_id) == "0af7651916cd43dd8448eb211c80319c"
                && format!("{:?}", l.body).contains("quote requested")
        })
        .unwrap_or_else(|| panic!("no log record of the unsampled caller's quote: {logs:?}"));
    assert_eq!(access[2]["traceId"], "0af7651916cd43dd8448eb211c80319c");
    assert_eq!(access[2]["spanId"], hex(&unsampled.span_id));
    assert_eq!(unsampled.flags & 1, 0, "not sampled: {unsampled:?}");
    // An event inside a span the handler made: the sampled request's carries that span's ids;
    // the unsampled one's its request's (its span, dropped, belongs to no trace).
    let validating = |trace: &str| {
        logs.iter()
            .find(|l| hex(&l.trace_id) == trace && format!("{:?}", l.body).contains("validating"))
            .unwrap_or_else(|| panic!("no `validating` record in trace {trace}: {logs:?}"))
    };
    let sampled = validating("4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(sampled.span_id, validate[0].span_id);
    assert_eq!(sampled.flags & 1, 1);
    let dropped = validating("0af7651916cd43dd8448eb211c80319c");
    assert_eq!(access[4]["spanId"], hex(&dropped.span_id));
    assert_eq!(dropped.flags & 1, 0);
}

/// Catches: `protocol`, `sampling`, `logs` or `headers` ignored (spans not POSTed as protobuf,
/// a new trace recorded at sampling 0, log records sent with `logs: false`, an export of the
/// requests' spans or of the handlers' without the configured header), and the requests'
/// spans lost when the logging levels leave INFO out.
#[test]
fn http_protobuf_follows_sampling_and_sends_no_logs_when_told() {
    let (_runtime, addr, received) = http_receiver();
    let dir = tempfile::tempdir().unwrap();
    let otel = format!(
        "{{enabled: true, protocol: http/protobuf, endpoint: 'http://{addr}', sampling: 0.0, \
         logs: false, headers: {{authorization: Bearer h77p}}, timeout: 5s}}"
    );
    // Logging at WARN: the requests' INFO spans are the export's all the same. The handlers'
    // DEBUG events and spans pass the levels (their loggers are at DEBUG), so that `logs:
    // false` is what keeps the events from the collector, and the event handler's span is
    // exported (by the SDK's exporter, beside the requests' own).
    let text = config(dir.path(), &otel).replace(
        "logging: {level: INFO, loggers: {realtime: TRACE}, appenders: []}",
        "logging: {level: WARN, loggers: {'realtime::quotes': DEBUG, 'realtime::events': DEBUG}, \
         appenders: []}",
    );
    let mut service = start(&write_config(dir.path(), &text));
    send(service.app);
    access_lines(&dir.path().join("access.json"), 5);
    signal(&service.child, "TERM");
    assert!(wait_exit(&mut service.child).success());
    let spans = received.spans();
    let traces: Vec<String> = spans.iter().map(|(_, s)| hex(&s.trace_id)).collect();
    assert_eq!(
        traces, ["4bf92f3577b34da6a3ce929d0e0e4736"; 3],
        "only the sampled caller's trace (its quote, its event and the event's handler span), \
         at sampling 0: {spans:?}"
    );
    assert!(
        spans.iter().any(|(_, s)| s.name == "validate"),
        "the handler's span: {spans:?}"
    );
    assert!(received.logs.lock().unwrap().is_empty(), "logs: false");
    // Every export carries the configured header.
    let authorization = received.authorization.lock().unwrap().clone();
    assert!(
        !authorization.is_empty() && authorization.iter().all(|a| a == "Bearer h77p"),
        "headers: {authorization:?}"
    );
}

/// Over http/protobuf, log records are POSTed to `/v1/logs` with the configured headers, as
/// the spans are.
///
/// Catches: the log exporter built without `headers` (its exports unauthorised).
#[test]
fn http_protobuf_sends_log_records_with_the_headers() {
    let (_runtime, addr, received) = http_receiver();
    let dir = tempfile::tempdir().unwrap();
    let otel = format!(
        "{{enabled: true, protocol: http/protobuf, endpoint: 'http://{addr}', \
         headers: {{authorization: Bearer l0gs}}, timeout: 5s}}"
    );
    let mut service = start(&write_config(dir.path(), &config(dir.path(), &otel)));
    send(service.app);
    access_lines(&dir.path().join("access.json"), 5);
    signal(&service.child, "TERM");
    assert!(wait_exit(&mut service.child).success());
    assert!(
        !received.logs.lock().unwrap().is_empty(),
        "the handlers' events as log records"
    );
    let authorization = received.authorization.lock().unwrap().clone();
    assert!(
        !authorization.is_empty() && authorization.iter().all(|a| a == "Bearer l0gs"),
        "headers: {authorization:?}"
    );
}

/// The admin port's metrics, as JSON.
fn metrics(admin: SocketAddr) -> serde_json::Value {
    let mut conn = connect(admin);
    let r = request(&mut conn, "GET", "/metrics", &[], b"").unwrap();
    serde_json::from_str(&r.body).unwrap()
}

/// A collector on 127.0.0.1 that accepts connections and never reads from them nor answers:
/// an export to it waits for its whole `timeout`. Its connections stay open until the test
/// process ends.
fn silent_collector() -> SocketAddr {
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for conn in silent.incoming().flatten() {
            held.push(conn);
        }
    });
    addr
}

/// The spans the export dropped, from the admin port's metrics.
fn dropped_spans(admin: SocketAddr) -> f64 {
    dropped(admin, "spans")
}

/// The `signal`s (`spans`, `logs`) the export dropped, from the admin port's metrics.
fn dropped(admin: SocketAddr, signal: &str) -> f64 {
    let gauges = metrics(admin);
    gauges["gauges"][format!("ferrowizard.opentelemetry.{signal}.dropped")]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("{gauges}"))
}

/// With a collector that never answers, each of the export's queues (the requests' spans,
/// the spans handlers make, the log records) holds `queueSize` and drops the rest, counting
/// them; a stop waits for the collector `timeout` long, not more.
///
/// Catches: a queue that grows past `queueSize`, drops not counted (the requests' spans',
/// the handlers' spans' or the log records'), and an exit that waits past `timeout` for the
/// collector.
#[test]
fn a_collector_that_never_answers_has_its_drops_counted_and_holds_a_stop_only_its_timeout() {
    let addr = silent_collector();
    let dir = tempfile::tempdir().unwrap();
    let otel = format!("{{enabled: true, endpoint: 'http://{addr}', queueSize: 8, timeout: 1s}}");
    let mut service = start(&write_config(dir.path(), &config(dir.path(), &otel)));
    let mut conn = connect(service.app);
    let sending = Instant::now();
    for i in 0..300 {
        let r = request(&mut conn, "GET", "/realtime/quotes/ACME", &[], b"").unwrap();
        assert_eq!(r.status, 200, "request {i}");
    }
    // Each event's handler makes a span of its own (`validate`), exported by the SDK's
    // processor behind the same bound.
    let event = br#"{"symbol":"ACME","kind":"alert","quantity":1}"#;
    for i in 0..100 {
        let headers = [("Content-Type", "application/json")];
        let r = request(&mut conn, "POST", "/realtime/events", &headers, event).unwrap();
        assert!(r.status < 300, "event {i}: {}", r.body);
    }
    // What can get through each queue: the queue (8), and a batch taken for export for each
    // second the requests took (each export is held for the 1 s timeout).
    let through = 8.0 + 8.0 * (sending.elapsed().as_secs_f64().ceil() + 1.0);
    // 400 requests' spans and 100 handlers' spans, through two queues.
    let spans = dropped_spans(service.admin);
    assert!(
        spans >= 500.0 - 2.0 * through,
        "{spans} of 500 spans dropped"
    );
    // Every request logs at least one record (`realtime` at TRACE): 400 at the least.
    let logs = dropped(service.admin, "logs");
    assert!(
        logs >= 400.0 - through,
        "{logs} of 400 and more log records dropped"
    );
    let stopped = Instant::now();
    signal(&service.child, "TERM");
    assert!(wait_exit(&mut service.child).success());
    // The export's shutdown waits for its timeout (1 s a signal), not the default 10 s.
    assert!(
        stopped.elapsed() < Duration::from_secs(8),
        "{:?}",
        stopped.elapsed()
    );
}

/// Every request is answered within a few seconds while the collector never answers and
/// the export's queue is full: each request is recorded (`sampling: 1.0`), the queue holds 8
/// (`queueSize: 8`), and each export waits `timeout: 30s` for the collector, so from the
/// 17th request on (a batch of 8 held by the export, 8 more queued) every request's span
/// finds the queue full, as the drops counted show. A request that waited for room in the
/// queue would wait for an export to give up, ten times the bound.
///
/// Catches: a request held until the export's queue has room (or until the export is done)
/// instead of its span dropped and counted.
#[test]
fn a_collector_that_never_answers_costs_requests_nothing() {
    const TIMEOUT: Duration = Duration::from_secs(30);
    // Far above what a request on loopback takes, far below the export's timeout.
    const BOUND: Duration = Duration::from_secs(3);
    const REQUESTS: u32 = 200;
    const QUEUE: u32 = 8;
    let addr = silent_collector();
    let dir = tempfile::tempdir().unwrap();
    let otel = format!(
        "{{enabled: true, endpoint: 'http://{addr}', sampling: 1.0, queueSize: {QUEUE}, \
         timeout: {}s}}",
        TIMEOUT.as_secs()
    );
    // Stopped by the drop's kill: a stop would wait for the collector.
    let service = start(&write_config(dir.path(), &config(dir.path(), &otel)));
    let mut conn = connect(service.app);
    // A request held that long is no answer: the test fails at twice the bound, not at the
    // export's timeout.
    conn.get_ref().set_read_timeout(Some(BOUND * 2)).unwrap();
    let sending = Instant::now();
    let mut slowest = Duration::ZERO;
    for i in 0..REQUESTS {
        let asked = Instant::now();
        let answer = request(&mut conn, "GET", "/realtime/quotes/ACME", &[], b"");
        let took = asked.elapsed();
        let r = answer.unwrap_or_else(|e| {
            panic!("request {i}: no answer in {took:?} ({e}), with the export's queue full")
        });
        assert_eq!(r.status, 200, "request {i}");
        assert!(
            took < BOUND,
            "request {i} took {took:?} with the export's queue full (its timeout: {TIMEOUT:?})"
        );
        slowest = slowest.max(took);
    }
    let elapsed = sending.elapsed();
    // The queue was full: what got through is the queue and a batch taken for export for
    // each timeout the requests lasted; the rest was dropped.
    let exports = (elapsed.as_secs_f64() / TIMEOUT.as_secs_f64()).ceil() + 1.0;
    let through = f64::from(QUEUE) * (1.0 + exports);
    let dropped = dropped_spans(service.admin);
    assert!(
        dropped >= f64::from(REQUESTS) - through,
        "{dropped} of {REQUESTS} dropped in {elapsed:?}: the queue was not full"
    );
    eprintln!("{REQUESTS} requests in {elapsed:?}, the slowest {slowest:?}");
}

/// Catches: `enabled` without the spans it exports (no trace context) accepted and ignored.
#[test]
fn export_without_trace_context_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let text = config(dir.path(), "{enabled: true}").replace(
        "traceContext: {enabled: true}",
        "traceContext: {enabled: false}",
    );
    let (status, stderr) = common::fail_to_start(&write_config(dir.path(), &text));
    assert!(!status.success());
    assert!(
        stderr.contains("opentelemetry.enabled needs server.traceContext.enabled: true"),
        "{stderr}"
    );
}
