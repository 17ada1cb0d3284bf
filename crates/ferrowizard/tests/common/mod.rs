//! What the server tests share: a server started from a `server:` section on a real socket,
//! and a raw HTTP/1.1 client that shows the response's headers as sent.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use axum::Router;
use ferrowizard::config::{FrameworkConfiguration, ServerFactory, load_str};
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::{Routes, Server};

/// A server of one HTTP connector on 127.0.0.1 (no admin connector) serving `routes`, with
/// `server_yaml`'s lines added to its `server:` section (each indented by two spaces).
pub async fn start(server_yaml: &str, routes: Routes) -> (Server, SocketAddr) {
    let mut yaml = String::from(
        "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
         adminConnectors: []\n",
    );
    for line in server_yaml.lines() {
        yaml.push_str("  ");
        yaml.push_str(line);
        yaml.push('\n');
    }
    let config: FrameworkConfiguration = load_str("config.yaml", &yaml, &[]).unwrap();
    serve(ferrowizard::config::Configuration::server(&config), routes).await
}

/// The server `factory` describes, serving `routes` (no admin routes), and its first
/// connector's address.
pub async fn serve(factory: &ServerFactory, routes: impl Into<Routes>) -> (Server, SocketAddr) {
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

/// The headers (lower-case names, in order) and body of `GET path` with `headers` (each
/// ending in CRLF), over a connection of its own.
pub async fn get(addr: SocketAddr, path: &str, headers: &str) -> (Vec<(String, String)>, String) {
    let (path, headers) = (path.to_owned(), headers.to_owned());
    tokio::task::spawn_blocking(move || get_blocking(addr, &path, &headers))
        .await
        .unwrap()
}

fn get_blocking(addr: SocketAddr, path: &str, headers: &str) -> (Vec<(String, String)>, String) {
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

/// The first value of header `name` (lower case).
pub fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// The JSON lines of `path` once it has `count` of them (or what it has after 10 s).
pub async fn json_lines(path: &Path, count: usize) -> Vec<serde_json::Value> {
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
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
