//! Request IDs on real sockets: the client's well-formed `X-Request-Id` kept, any other
//! replaced by a fresh one, returned in every response (404s included), in place while the
//! handler runs and in its log events (`%X{requestId}`); `requestId.headerName` and
//! `requestId.enabled` change what happens.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use ferrowizard::config::{ServerFactory, load_str};
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::{Routes, Server};
use ferrowizard_logging::context::Context;

/// Status line and headers (lower-case names), and body, of `GET path` with `headers`.
fn get_with(addr: SocketAddr, path: &str, headers: &str) -> (Vec<(String, String)>, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: t\r\n{headers}Connection: close\r\n\r\n").as_bytes(),
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    let (head, body) = out.split_once("\r\n\r\n").unwrap();
    let headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (headers, body.to_owned())
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

fn generated(id: &str) -> bool {
    id.len() == 32
        && id
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

async fn start(request_id: &str) -> (Server, SocketAddr) {
    start_logging(request_id, "{appenders: []}").await
}

async fn start_logging(request_id: &str, request_log: &str) -> (Server, SocketAddr) {
    let yaml = format!(
        "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
         adminConnectors: []\n  requestLog: {request_log}\n  {request_id}\n"
    );
    let config: ferrowizard::config::FrameworkConfiguration =
        load_str("config.yaml", &yaml, &[]).unwrap();
    let factory: &ServerFactory = ferrowizard::config::Configuration::server(&config);
    let routes = Routes::new().merge(Router::new().route(
        "/who",
        get(|| async {
            tracing::info!(target: "app", "handled");
            Context::current_value("requestId").unwrap_or_else(|| "none".to_owned())
        }),
    ));
    let server = Server::start(
        factory,
        routes,
        Router::new(),
        &MetricRegistry::new(),
        "test",
    )
    .await
    .unwrap();
    let addr = server.bound()[0].addr;
    (server, addr)
}

async fn fetch(addr: SocketAddr, path: &str, headers: &str) -> (Vec<(String, String)>, String) {
    let (path, headers) = (path.to_owned(), headers.to_owned());
    tokio::task::spawn_blocking(move || get_with(addr, &path, &headers))
        .await
        .unwrap()
}

/// Catches: no ID generated, a client's ID dropped or a malformed one kept (a space or a
/// 129-character one would reach the logs), the ID missing from 404s, the handler's events
/// without it (the context not in place while the handler is polled), `headerName` or
/// `enabled` ignored, access-json's `requestId` missing or another request's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_carry_an_id_from_the_client_or_generated() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let logging: ferrowizard_logging::LoggingFactory = ferrowizard_config::Loader::new()
        .load_str(
            "logging.yaml",
            &format!(
                "level: INFO\nappenders:\n  - {{type: file, currentLogFilename: {}, archive: false, \
                 logFormat: '%X{{requestId}} %m%n'}}\n",
                log.display()
            ),
        )
        .unwrap();
    let (logging, subscriber) = logging.build("request-id-test").unwrap();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let (_server, addr) = start("requestId: {enabled: true}").await;
    let (headers, body) = fetch(addr, "/who", "").await;
    let id = header(&headers, "x-request-id").unwrap().to_owned();
    assert!(generated(&id), "{id}");
    assert_eq!(body, id, "the handler sees its request's ID");
    let (headers, body) = fetch(addr, "/who", "X-Request-Id: client-42:a/b=\r\n").await;
    assert_eq!(header(&headers, "x-request-id"), Some("client-42:a/b="));
    assert_eq!(body, "client-42:a/b=");
    for bad in ["a b".to_owned(), "x".repeat(129), "\"quoted\"".to_owned()] {
        let (headers, _) = fetch(addr, "/who", &format!("X-Request-Id: {bad}\r\n")).await;
        let got = header(&headers, "x-request-id").unwrap();
        assert!(generated(got), "{bad:?} gave {got:?}");
    }
    let (headers, _) = fetch(addr, "/nowhere", "X-Request-Id: missing-1\r\n").await;
    assert_eq!(header(&headers, "x-request-id"), Some("missing-1"));

    let (_renamed, addr) = start("requestId: {enabled: true, headerName: X-Correlation-Id}").await;
    let (headers, body) = fetch(
        addr,
        "/who",
        "X-Correlation-Id: corr-7\r\nX-Request-Id: other\r\n",
    )
    .await;
    assert_eq!(header(&headers, "x-correlation-id"), Some("corr-7"));
    assert_eq!(header(&headers, "x-request-id"), None);
    assert_eq!(body, "corr-7");

    // Off by default.
    let (_off, addr) = start("").await;
    let (headers, body) = fetch(addr, "/who", "X-Request-Id: ignored\r\n").await;
    assert_eq!(header(&headers, "x-request-id"), None);
    assert_eq!(body, "none");

    // access-json's `requestId`: the response's ID, on the line of its request.
    let access = dir.path().join("access.json");
    let (server, addr) = start_logging(
        "requestId: {enabled: true}",
        &format!(
            "{{appenders: [{{type: file, currentLogFilename: {}, archive: false, \
             layout: {{type: access-json, includes: [requestId, requestUri]}}}}]}}",
            access.display()
        ),
    )
    .await;
    let (headers, _) = fetch(addr, "/who", "X-Request-Id: logged-1\r\n").await;
    assert_eq!(header(&headers, "x-request-id"), Some("logged-1"));
    let (headers, _) = fetch(addr, "/who", "").await;
    let fresh = header(&headers, "x-request-id").unwrap().to_owned();
    drop(server);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let lines: Vec<serde_json::Value> = loop {
        let text = std::fs::read_to_string(&access).unwrap_or_default();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        if lines.len() >= 2 || std::time::Instant::now() > deadline {
            break lines;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(lines[0]["requestId"], "logged-1", "{lines:?}");
    assert_eq!(lines[1]["requestId"], fresh.as_str(), "{lines:?}");

    logging.shutdown(Duration::from_secs(5));
    let lines = std::fs::read_to_string(&log).unwrap();
    let handled: Vec<&str> = lines.lines().filter(|l| l.ends_with(" handled")).collect();
    assert!(
        handled.contains(&format!("{id} handled").as_str()),
        "{lines}"
    );
    assert!(handled.contains(&"client-42:a/b= handled"), "{lines}");
    assert!(handled.contains(&"corr-7 handled"), "{lines}");
    assert!(
        handled.contains(&" handled"),
        "with IDs off, no ID: {lines}"
    );
}
