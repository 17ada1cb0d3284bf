//! Errors on real sockets: the server's own errors in DropWizard's JSON shape for clients
//! that accept JSON and as plain text for the rest, handlers' own errors untouched, and
//! `Valid`'s 400, 415 and 422.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use axum::Router;
use axum::http::StatusCode;
use axum::routing::{get, post};
use ferrowizard::ErrorMessage;
use ferrowizard::config::{
    ConnectorCommon, ConnectorFactory, DefaultServerFactory, HttpConnectorFactory,
};
use ferrowizard::config::{ServerFactory, Size};
use ferrowizard::extract::Valid;
use ferrowizard::server::Server;
use tokio::sync::Semaphore;

const JSON: &str = "Accept: application/json\r\n";

/// One connector on 127.0.0.1, bodies up to 1 KiB, `max_threads` running and none queued.
fn factory(max_threads: usize) -> ServerFactory {
    let mut f = DefaultServerFactory {
        application_connectors: vec![ConnectorFactory::Http(HttpConnectorFactory {
            common: ConnectorCommon {
                port: 0,
                bind_host: Some("127.0.0.1".into()),
                ..Default::default()
            },
        })],
        admin_connectors: Vec::new(),
        ..Default::default()
    };
    f.common.max_threads = max_threads;
    f.common.max_queued_requests = 0;
    f.common.max_request_body_size = Size::kibibytes(1);
    f.common.request_log.appenders = Vec::new();
    ServerFactory::Default(f)
}

/// A response as read off the socket.
#[derive(Debug)]
struct Answer {
    status: u16,
    /// The head, lower-cased.
    head: String,
    body: String,
}

impl Answer {
    /// Whether a `Vary` header names `Accept` (not `Accept-Encoding`).
    fn varies_by_accept(&self) -> bool {
        self.head
            .lines()
            .filter_map(|l| l.strip_prefix("vary:"))
            .any(|v| v.split(',').any(|v| v.trim() == "accept"))
    }

    fn json(&self) -> serde_json::Value {
        assert!(
            self.head.contains("content-type: application/json"),
            "not JSON: {self:?}"
        );
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {self:?}"))
    }
}

/// Sends `method path` with the extra header lines `headers` and `body`, on a connection of
/// its own.
fn ask(addr: SocketAddr, method: &str, path: &str, headers: &str, body: &str) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let length = if body.is_empty() && method == "GET" {
        String::new()
    } else {
        format!("Content-Length: {}\r\n", body.len())
    };
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n{headers}{length}\r\n{body}"
    );
    let _ = s.write_all(request.as_bytes());
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = out.split_once("\r\n\r\n").unwrap_or((&out, ""));
    Answer {
        status: head
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0),
        head: head.to_ascii_lowercase(),
        body: body.to_owned(),
    }
}

#[derive(serde::Deserialize, garde::Validate)]
struct Order {
    #[garde(length(min = 1))]
    customer: String,
    #[garde(length(min = 1), dive)]
    lines: Vec<Line>,
}

#[derive(serde::Deserialize, garde::Validate)]
struct Line {
    #[garde(ascii, length(min = 1, max = 8))]
    symbol: String,
    #[garde(range(min = 1, max = 1000))]
    quantity: u32,
}

async fn order(Valid(order): Valid<Order>) -> String {
    format!("{} lines for {}\n", order.lines.len(), order.customer)
}

async fn panics() -> &'static str {
    panic!("the handler broke")
}

/// Set once `/slow` is running.
static SLOW_RUNNING: AtomicBool = AtomicBool::new(false);

fn app(gate: Arc<Semaphore>) -> Router {
    Router::new()
        .route("/fast", get(|| async { "fast\n" }))
        .route("/echo", post(|body: String| async move { body }))
        .route("/panic", get(panics))
        .route(
            "/own-text",
            get(|| async { (StatusCode::NOT_FOUND, "no such quote\n") }),
        )
        .route(
            "/own-json",
            get(|| async { ErrorMessage::new(StatusCode::NOT_FOUND, "no quote for XYZ") }),
        )
        .route("/orders", post(order))
        .route(
            "/slow",
            get(move || {
                let gate = gate.clone();
                async move {
                    SLOW_RUNNING.store(true, Ordering::SeqCst);
                    let _permit = gate.acquire().await;
                    "slow\n"
                }
            }),
        )
}

async fn start(max_threads: usize, gate: Arc<Semaphore>) -> (Server, SocketAddr) {
    common::serve(&factory(max_threads), app(gate)).await
}

/// Catches: a server error answered as text (or with an empty body) to a client that asked
/// for JSON, a JSON error given to a client that did not (curl's `*/*`, no `Accept`), a
/// message other than DropWizard's `HTTP <code> <reason>`, such an error without
/// `Vary: Accept` (a cache would hand one client's 404 to the other), and a rewritten
/// response that a handler built itself (its text or its own JSON).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_are_json_for_json_clients_and_text_for_the_rest() {
    let (server, addr) = start(16, Arc::new(Semaphore::new(100))).await;
    tokio::task::spawn_blocking(move || {
        let big = "b".repeat(4096);
        // (method, path, body, status, the text a client without Accept gets)
        let cases = [
            // axum's own: no route, and a route without the method.
            ("GET", "/nowhere", "", 404, ""),
            ("POST", "/fast", "", 405, ""),
            // The pipeline's own: allowedMethods, maxRequestBodySize.
            ("TRACE", "/fast", "", 405, "Method Not Allowed\n"),
            ("POST", "/echo", big.as_str(), 413, "Payload Too Large\n"),
            // A panicking handler.
            ("GET", "/panic", "", 500, "Internal Server Error\n"),
        ];
        for (method, path, body, status, text) in cases {
            let json = ask(addr, method, path, JSON, body);
            assert_eq!(json.status, status, "{method} {path}: {json:?}");
            let reason = StatusCode::from_u16(status)
                .unwrap()
                .canonical_reason()
                .unwrap();
            assert_eq!(
                json.json(),
                serde_json::json!({ "code": status, "message": format!("HTTP {status} {reason}") }),
                "{method} {path}"
            );
            assert!(json.varies_by_accept(), "{method} {path}: {json:?}");
            for headers in ["", "Accept: */*\r\n", "Accept: text/html,*/*;q=0.8\r\n"] {
                let plain = ask(addr, method, path, headers, body);
                assert_eq!(plain.status, status, "{method} {path}: {plain:?}");
                assert_eq!(plain.body, text, "{method} {path} {headers:?}");
                assert!(
                    !plain.head.contains("application/json"),
                    "{method} {path} {headers:?}: {plain:?}"
                );
                assert!(plain.varies_by_accept(), "{method} {path}: {plain:?}");
            }
        }
        // axum's 405 keeps its `Allow` header.
        let post = ask(addr, "POST", "/fast", JSON, "");
        assert!(post.head.contains("allow: get,head"), "{post:?}");
        // Through compression (the client accepts gzip) the same.
        let gzip = ask(
            addr,
            "GET",
            "/nowhere",
            "Accept: application/json\r\nAccept-Encoding: gzip\r\n",
            "",
        );
        assert_eq!(gzip.json()["code"], 404, "{gzip:?}");
        // A handler's own 404s, text and JSON, as the handler wrote them.
        let own = ask(addr, "GET", "/own-text", JSON, "");
        assert_eq!((own.status, own.body.as_str()), (404, "no such quote\n"));
        assert!(own.head.contains("content-type: text/plain"), "{own:?}");
        let own = ask(addr, "GET", "/own-json", JSON, "");
        assert_eq!(
            own.json(),
            serde_json::json!({ "code": 404, "message": "no quote for XYZ" })
        );
        assert!(!own.varies_by_accept(), "{own:?}");
        // Success is untouched.
        let fast = ask(addr, "GET", "/fast", JSON, "");
        assert_eq!((fast.status, fast.body.as_str()), (200, "fast\n"));
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// Catches: the overload 503 (answered by admission before the router, on a path of its
/// own) left as text for a JSON client, or turned into JSON for a client without `Accept`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_full_servers_503_is_json_for_json_clients() {
    let gate = Arc::new(Semaphore::new(0));
    let (server, addr) = start(1, gate.clone()).await;
    let held = tokio::task::spawn_blocking(move || ask(addr, "GET", "/slow", "", ""));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !SLOW_RUNNING.load(Ordering::SeqCst) {
        assert!(tokio::time::Instant::now() < deadline, "/slow never ran");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (json, plain) = tokio::task::spawn_blocking(move || {
        (
            ask(addr, "GET", "/fast", JSON, ""),
            ask(addr, "GET", "/fast", "", ""),
        )
    })
    .await
    .unwrap();
    assert_eq!(
        json.json(),
        serde_json::json!({ "code": 503, "message": "HTTP 503 Service Unavailable" })
    );
    assert_eq!(json.status, 503);
    assert_eq!(
        (plain.status, plain.body.as_str()),
        (503, "Service Unavailable: the server is at capacity\n")
    );
    gate.add_permits(1);
    assert_eq!(held.await.unwrap().status, 200);
    server.shutdown().await;
}

/// Catches: malformed JSON answered without serde_json's position (or as text), a body of
/// the wrong type reaching the handler instead of 415, and a 422 that stops at the first
/// violation or drops a field's path (nested and indexed paths included).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn valid_answers_400_415_and_422_with_every_violation() {
    let (server, addr) = start(16, Arc::new(Semaphore::new(100))).await;
    tokio::task::spawn_blocking(move || {
        let ct = "Content-Type: application/json\r\n";
        let ok = ask(
            addr,
            "POST",
            "/orders",
            ct,
            r#"{"customer":"ann","lines":[{"symbol":"ACME","quantity":5}]}"#,
        );
        assert_eq!((ok.status, ok.body.as_str()), (200, "1 lines for ann\n"), "{ok:?}");

        // Malformed: the message says what and where.
        let bad = ask(addr, "POST", "/orders", ct, "{\n  \"customer\": \"ann\",\n  lines: []\n}");
        assert_eq!(bad.status, 400, "{bad:?}");
        assert_eq!(
            bad.json(),
            serde_json::json!({ "code": 400, "message": "key must be a string at line 3 column 3" })
        );
        // JSON that does not fit the type: 400 too, with the position.
        let wrong = ask(addr, "POST", "/orders", ct, r#"{"customer":7,"lines":[]}"#);
        assert_eq!(wrong.status, 400, "{wrong:?}");
        let message = wrong.json()["message"].as_str().unwrap().to_owned();
        assert!(message.contains("invalid type") && message.contains("line 1 column 13"), "{message}");

        // Not JSON: 415, whatever the body.
        for headers in ["", "Content-Type: text/plain\r\n", "Content-Type: text/json\r\n"] {
            let not_json = ask(addr, "POST", "/orders", headers, r#"{"customer":"ann","lines":[]}"#);
            assert_eq!(not_json.status, 415, "{headers:?}: {not_json:?}");
            assert_eq!(
                not_json.json(),
                serde_json::json!({ "code": 415, "message": "HTTP 415 Unsupported Media Type" })
            );
        }

        // Invalid: every violation, each with its path.
        let invalid = ask(
            addr,
            "POST",
            "/orders",
            "Content-Type: application/json; charset=utf-8\r\n",
            r#"{"customer":"","lines":[{"symbol":"ACME","quantity":5},{"symbol":"TOOLONGNAME","quantity":0}]}"#,
        );
        assert_eq!(invalid.status, 422, "{invalid:?}");
        assert_eq!(
            invalid.json(),
            serde_json::json!({ "code": 422, "errors": [
                "customer: length is lower than 1",
                "lines[1].quantity: lower than 1",
                "lines[1].symbol: length is greater than 8",
            ]})
        );
        let empty = ask(addr, "POST", "/orders", ct, r#"{"customer":"ann","lines":[]}"#);
        assert_eq!(
            empty.json(),
            serde_json::json!({ "code": 422, "errors": ["lines: length is lower than 1"] })
        );
    })
    .await
    .unwrap();
    server.shutdown().await;
}
