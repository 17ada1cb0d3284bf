//! One request followed across two services: orders, run as a process, prices an order with a
//! quote from realtime, another process, through its HTTP client. volley drives it with the
//! example's scenario (log in, place an order, price it with the token). Both services log
//! their requests and export their spans to one collector in this test: the pricing request
//! carries the same request ID in both request logs, and its spans are one trace, realtime's
//! request a child of orders' call.

#[path = "support/collector.rs"]
mod collector;
#[path = "support/process.rs"]
mod process;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use collector::hex;
use opentelemetry_proto::tonic::trace::v1::Span;
use process::Service;
use serde_json::Value;

/// The server sections both services share: free ports, request IDs, trace context, a
/// JSON request log in `log`, the export to `collector`.
fn server(log: &Path, collector: &str) -> String {
    format!(
        "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
         adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
         requestId: {{enabled: true}}\n  traceContext: {{enabled: true}}\n  \
         requestLog: {{appenders: [{{type: file, currentLogFilename: {}, archive: false, \
         layout: {{type: access-json, includes: [method, requestUri, statusCode, requestId, traceId, \
         remoteUser]}}}}]}}\n\
         logging: {{level: INFO, appenders: []}}\n\
         opentelemetry: {{enabled: true, protocol: http/protobuf, endpoint: '{collector}', \
         sampling: 1.0, logs: false}}\n",
        log.display()
    )
}

/// A service's binary: `name` beside orders' (the workspace's build makes both), built when
/// missing.
fn binary(name: &str) -> PathBuf {
    let orders = assert_cmd::cargo::cargo_bin("orders");
    let path = orders.with_file_name(name);
    if !path.exists() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let built = Command::new(cargo)
            .args(["build", "-q", "-p", name, "--bin", name])
            .status()
            .unwrap();
        assert!(built.success(), "cargo build -p {name}");
    }
    path
}

/// The request log's lines.
fn lines(file: &Path) -> Vec<Value> {
    std::fs::read_to_string(file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// Catches: the request ID or the trace not passed on by the client, the client's span not a
/// child of the request's, the callee's request not a child of the client's span, a login or
/// a token refused, and the user missing from the request log.
#[test]
fn a_priced_order_is_one_request_id_and_one_trace_across_both_services() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (endpoint, spans) = collector::start(&runtime);
    let dir = tempfile::tempdir().unwrap();

    let realtime_config = dir.path().join("realtime.yaml");
    std::fs::write(
        &realtime_config,
        server(&dir.path().join("realtime.json"), &endpoint),
    )
    .unwrap();
    let realtime = Service::start(&binary("realtime"), &realtime_config);

    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let orders_config = dir.path().join("orders.yaml");
    std::fs::write(
        &orders_config,
        format!(
            "{}database:\n  url: sqlite:{}\n  migrations: {}\n\
             users: {{ada: ada-password}}\n\
             jwt:\n  keys: [{{algorithm: HS256, secret: a-test-secret-of-at-least-32-bytes!!}}]\n  \
             issuer: orders\n  audience: [orders]\n\
             quotes: {{keepAlive: 30s, timeout: 2s}}\nquotesUrl: {}\n",
            server(&dir.path().join("orders.json"), &endpoint),
            dir.path().join("o.db").display(),
            migrations.display(),
            realtime.1,
        ),
    )
    .unwrap();
    let orders_bin = binary("orders");
    let migrated = Command::new(&orders_bin)
        .args(["db", "migrate"])
        .arg(&orders_config)
        .output()
        .unwrap();
    assert!(migrated.status.success(), "{migrated:?}");
    let orders = Service::start(&orders_bin, &orders_config);

    // The example's scenario, one user, its pricing request under a known ID.
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("load/priced.yaml"))
            .unwrap()
            .replace("http://127.0.0.1:8090", &orders.1)
            .replace("{constantUsersPerSec: 20, during: 20s}", "{atOnceUsers: 1}")
            .replace(
                "headers: {Authorization: 'Bearer ${token}'}",
                "headers: {Authorization: 'Bearer ${token}', X-Request-Id: priced-order-1}",
            );
    let simulation = volley::scenario::load_str("priced.yaml", &text).unwrap();
    let stats = runtime.block_on(async {
        let run = volley::engine::prepare(&simulation, dir.path()).unwrap();
        assert!(volley::engine::execute(run.clone(), &simulation).await);
        run.snapshot()
    });
    assert_eq!((stats.global.requests, stats.global.kos), (4, 0));

    orders.stop();
    realtime.stop();

    // The same request ID in both request logs, with one trace id.
    let ours = lines(&dir.path().join("orders.json"));
    let priced = ours
        .iter()
        .find(|l| l["requestId"] == "priced-order-1")
        .unwrap_or_else(|| panic!("{ours:?}"));
    assert!(priced.to_string().contains("/price"), "{priced}");
    assert_eq!(priced["status"], 200, "{priced}");
    assert_eq!(priced["remoteUser"], "ada", "{priced}");
    let theirs = lines(&dir.path().join("realtime.json"));
    let quoted = theirs
        .iter()
        .find(|l| l["requestId"] == "priced-order-1")
        .unwrap_or_else(|| panic!("{theirs:?}"));
    assert!(
        quoted.to_string().contains("/realtime/quotes/ACME"),
        "{quoted}"
    );
    assert_eq!(quoted["traceId"], priced["traceId"]);

    // One trace at the collector: orders' request, its call, realtime's request.
    let trace = priced["traceId"].as_str().unwrap().to_owned();
    let deadline = Instant::now() + Duration::from_secs(10);
    let (server, client, callee) = loop {
        let all: Vec<Span> = spans
            .lock()
            .unwrap()
            .iter()
            .filter(|s| hex(&s.trace_id) == trace)
            .cloned()
            .collect();
        let server = all.iter().find(|s| s.name.ends_with("/price")).cloned();
        let client = all.iter().find(|s| s.name == "GET").cloned();
        let callee = all
            .iter()
            .find(|s| s.name.starts_with("GET /realtime"))
            .cloned();
        if let (Some(a), Some(b), Some(c)) = (server, client, callee) {
            break (a, b, c);
        }
        assert!(Instant::now() < deadline, "spans of the trace: {all:?}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        client.parent_span_id, server.span_id,
        "the call is the request's child"
    );
    assert_eq!(
        callee.parent_span_id, client.span_id,
        "the callee's request is the call's child"
    );
    assert_eq!(client.kind, 3, "SPAN_KIND_CLIENT");
}
