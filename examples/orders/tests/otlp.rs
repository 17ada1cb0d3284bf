//! A query's span joins its request's trace: the orders binary exporting over OTLP
//! (HTTP/protobuf) to a receiver in this test, a request sent with a sampled `traceparent`.

#[path = "support/collector.rs"]
mod collector;
#[path = "support/process.rs"]
mod process;

use std::io::{Read, Write};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use collector::hex;
use opentelemetry_proto::tonic::common::v1::any_value;
use opentelemetry_proto::tonic::trace::v1::Span;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn text(span: &Span, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| match kv.value.as_ref()?.value.as_ref()? {
            any_value::Value::StringValue(s) => Some(s.clone()),
            _ => None,
        })
}

/// Catches: a query's span exported as a trace of its own, outside its request's, or without
/// the database's attributes.
#[test]
fn a_querys_span_is_a_child_of_its_requests_span() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (endpoint, spans) = collector::start(&runtime);

    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
             adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
             traceContext: {{enabled: true}}\n  requestLog: {{appenders: []}}\n\
             logging: {{level: INFO, appenders: []}}\n\
             opentelemetry: {{enabled: true, protocol: http/protobuf, endpoint: '{endpoint}', \
             sampling: 1.0, logs: false}}\n\
             database:\n  url: sqlite:{}\n  migrations: {}\n",
            dir.path().join("o.db").display(),
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("migrations")
                .display()
        ),
    )
    .unwrap();
    let orders = assert_cmd::cargo::cargo_bin("orders");
    let migrated = Command::new(&orders)
        .args(["db", "migrate"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        migrated.status.success(),
        "{}",
        String::from_utf8_lossy(&migrated.stderr)
    );
    let service = process::Service::start(&orders, &config);
    let app = service.1.trim_start_matches("http://").to_owned();
    let mut conn = std::net::TcpStream::connect(&app).unwrap();
    write!(
        conn,
        "GET /orders/none HTTP/1.1\r\nHost: x\r\ntraceparent: {PARENT}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    service.stop();

    let deadline = Instant::now() + Duration::from_secs(10);
    let (request, query) = loop {
        let all = spans.lock().unwrap().clone();
        let request = all.iter().find(|s| s.name.starts_with("GET ")).cloned();
        let query = all.iter().find(|s| s.name == "db.query").cloned();
        if let (Some(r), Some(q)) = (request, query) {
            break (r, q);
        }
        assert!(Instant::now() < deadline, "spans received: {all:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(hex(&request.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(query.trace_id, request.trace_id);
    assert_eq!(query.parent_span_id, request.span_id);
    assert_eq!(text(&query, "db.system").as_deref(), Some("sqlite"));
    assert_eq!(text(&query, "db.namespace").as_deref(), Some("orders"));
    assert_eq!(
        text(&query, "db.operation.name").as_deref(),
        Some("orders.by_id")
    );
}
