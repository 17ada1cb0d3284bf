//! `Environment::layer` on real sockets: a tower layer wraps every application route, added
//! before or after it, and the 404s; the server's own stages (route timers, request log,
//! admission) still see every request, those a layer answers itself included.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};

use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ferrowizard::config::{ServerFactory, load_str};
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::{Routes, Server};
use tower_http::set_header::SetResponseHeaderLayer;

fn get_close(addr: SocketAddr, path: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes())
        .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}

/// Answers 401 to `/secret` without calling the route, as an authentication layer would.
async fn guard(request: Request, next: Next) -> Response {
    if request.uri().path() == "/secret" {
        return StatusCode::UNAUTHORIZED.into_response();
    }
    next.run(request).await
}

/// Catches: a layer applied only to the routes added before it (axum's `Router::layer` on the
/// spot), not to the 404s, or a request a layer answers itself missing from the request log
/// or the route timers (a layer outside ferrowizard's stages).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_layer_wraps_every_route_and_the_server_still_sees_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.log");
    let yaml = format!(
        "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
         adminConnectors: []\n  requestLog:\n    appenders:\n      - type: file\n        \
         currentLogFilename: {}\n        archive: false\n",
        log.display()
    );
    let config: ferrowizard::config::FrameworkConfiguration =
        load_str("config.yaml", &yaml, &[]).unwrap();
    let factory: &ServerFactory = ferrowizard::config::Configuration::server(&config);
    let routes = Routes::new()
        .merge(
            Router::new()
                .route("/open", get(|| async { "open\n" }))
                .route("/secret", get(|| async { "secret\n" })),
        )
        .layer(middleware::from_fn(guard))
        .layer(SetResponseHeaderLayer::overriding(
            axum::http::header::HeaderName::from_static("x-layered"),
            HeaderValue::from_static("yes"),
        ))
        // Added after the layers: wrapped all the same.
        .route("/late", get(|| async { "late\n" }));
    let metrics = MetricRegistry::new();
    let server = Server::start(factory, routes, Router::new(), &metrics, "test")
        .await
        .unwrap();
    let addr = server.bound()[0].addr;
    for (path, status) in [
        ("/open", 200),
        ("/late", 200),
        ("/secret", 401),
        ("/nowhere", 404),
    ] {
        let response = tokio::task::spawn_blocking(move || get_close(addr, path))
            .await
            .unwrap();
        assert!(
            response.starts_with(&format!("HTTP/1.1 {status} ")),
            "{path}: {response}"
        );
        assert!(
            response.to_ascii_lowercase().contains("x-layered: yes"),
            "{path} not wrapped by the outer layer: {response}"
        );
    }
    server.shutdown().await;

    let m: serde_json::Value = serde_json::from_str(&metrics.render_json(false)).unwrap();
    for route in ["GET./open", "GET./late", "GET./secret"] {
        let name = format!("ferrowizard.routes.{route}");
        assert_eq!(m["timers"][&name]["count"], 1, "{name}: {m}");
    }
    assert_eq!(m["timers"]["ferrowizard.requests"]["count"], 4, "{m}");
    let lines = std::fs::read_to_string(&log).unwrap();
    let statuses: Vec<&str> = lines
        .lines()
        .map(|l| {
            l.split('"')
                .nth(2)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
        })
        .collect();
    assert_eq!(statuses, ["200", "200", "401", "404"], "{lines}");
}
