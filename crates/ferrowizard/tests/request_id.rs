//! Request IDs on real sockets: the client's well-formed `X-Request-Id` kept, any other
//! replaced by a fresh one, returned in every response (404s included), in place while the
//! handler runs and in its log events (`%X{requestId}`); `requestId.headerName` and
//! `requestId.enabled` change what happens.

mod common;

use std::time::Duration;

use axum::Router;
use axum::routing::get;
use common::header;
use ferrowizard::server::{Routes, Server};
use ferrowizard_logging::context::Context;
use std::net::SocketAddr;

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
    let routes = Routes::new().merge(Router::new().route(
        "/who",
        get(|| async {
            tracing::info!(target: "app", "handled");
            Context::current_value("requestId").unwrap_or_else(|| "none".to_owned())
        }),
    ));
    common::start(&format!("requestLog: {request_log}\n{request_id}"), routes).await
}

async fn fetch(addr: SocketAddr, path: &str, headers: &str) -> (Vec<(String, String)>, String) {
    common::get(addr, path, headers).await
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
    let lines = common::json_lines(&access, 2).await;
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
