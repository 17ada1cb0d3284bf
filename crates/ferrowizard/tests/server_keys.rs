//! `server:` and `admin:` keys shown on real sockets in process, where the realtime binary
//! cannot show them: an https connector's TLS versions, and admin tasks' `maxBodySize` and
//! `printStackTraceOnError` (a connector's listen backlog and `SO_REUSEADDR` are tested next to
//! `bind`, in `src/server/connection/accept.rs`).

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use axum::Router;
use ferrowizard::admin::Admin;
use ferrowizard::config::{AdminFactory, ServerFactory, Size};
use ferrowizard::config::{
    ConnectorCommon, ConnectorFactory, DefaultServerFactory, HttpConnectorFactory,
    HttpsConnectorFactory, TlsProtocol,
};
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::Server;
use ferrowizard::{Task, TaskError, TaskParams, Tasks};
use ferrowizard_logging::sink::tls::TlsSettings;

/// A certificate and key for `localhost`, as PEM files in `dir`.
fn certificate(dir: &std::path::Path) -> (String, String) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let (c, k) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&c, cert.cert.pem()).unwrap();
    std::fs::write(&k, cert.signing_key.serialize_pem()).unwrap();
    (c.display().to_string(), k.display().to_string())
}

/// Whether a client speaking only `version` completes a handshake with `addr`.
fn handshake(addr: SocketAddr, version: &'static rustls::SupportedProtocolVersion) -> bool {
    let config = ferrowizard_logging::sink::tls::client_config(&TlsSettings {
        ca_file: None,
        validate_certs: false,
        validate_server_hostname: false,
        tls12: version == &rustls::version::TLS12,
        tls13: version == &rustls::version::TLS13,
    })
    .unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let mut conn = rustls::ClientConnection::new(config, name).unwrap();
    let mut sock = TcpStream::connect(addr).unwrap();
    sock.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    while conn.is_handshaking() {
        if conn.complete_io(&mut sock).is_err() {
            return false;
        }
    }
    true
}

async fn https(dir: &std::path::Path, versions: Vec<TlsProtocol>) -> (Server, SocketAddr) {
    let (cert, key) = certificate(dir);
    let mut f = DefaultServerFactory {
        application_connectors: vec![ConnectorFactory::Https(HttpsConnectorFactory {
            common: ConnectorCommon {
                port: 0,
                bind_host: Some("127.0.0.1".into()),
                ..Default::default()
            },
            cert_path: Some(cert),
            key_path: Some(key),
            supported_protocols: versions,
        })],
        admin_connectors: Vec::new(),
        ..Default::default()
    };
    f.common.request_log.appenders = Vec::new();
    common::serve(&ServerFactory::Default(f), Router::new()).await
}

/// An https connector's `supportedProtocols`: a version left out is refused at the handshake.
///
/// Catches: the list ignored (both versions always offered), or read the wrong way round.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_connector_speaks_only_its_supported_protocols() {
    let dir = tempfile::tempdir().unwrap();
    for (versions, tls12, tls13) in [
        (vec![TlsProtocol::TlsV12, TlsProtocol::TlsV13], true, true),
        (vec![TlsProtocol::TlsV13], false, true),
        (vec![TlsProtocol::TlsV12], true, false),
    ] {
        let (server, addr) = https(dir.path(), versions.clone()).await;
        let got = tokio::task::spawn_blocking(move || {
            (
                handshake(addr, &rustls::version::TLS12),
                handshake(addr, &rustls::version::TLS13),
            )
        })
        .await
        .unwrap();
        assert_eq!(got, (tls12, tls13), "{versions:?}");
        server.shutdown().await;
    }
}

/// A task that fails with a chain of causes.
fn failing() -> impl Task {
    |_: TaskParams| async move {
        let io = std::io::Error::other("disk on fire");
        let outer: Box<dyn std::error::Error + Send + Sync> =
            Box::new(Wrapped("cannot rotate the archive", io));
        Err::<String, _>(TaskError::Failed(outer))
    }
}

#[derive(Debug)]
struct Wrapped(&'static str, std::io::Error);

impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

impl std::error::Error for Wrapped {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.1)
    }
}

/// An admin side with a `fail` task and an `echo` task (which answers the size of its body),
/// on its own connector.
async fn admin(config: AdminFactory) -> (Server, SocketAddr) {
    let echo = |params: TaskParams| async move {
        Ok(format!(
            "got {} bytes\n",
            params.get("pad").map_or(0, str::len)
        ))
    };
    let admin = Admin {
        config,
        health_checks: Default::default(),
        tasks: {
            let mut tasks = Tasks::default();
            tasks.add("fail", failing()).add("echo", echo);
            tasks
        },
        metrics: MetricRegistry::new(),
        logging: None,
        runtime: tokio::runtime::Handle::current(),
    };
    let connector = |port| {
        ConnectorFactory::Http(HttpConnectorFactory {
            common: ConnectorCommon {
                port,
                bind_host: Some("127.0.0.1".into()),
                ..Default::default()
            },
        })
    };
    let mut f = DefaultServerFactory {
        application_connectors: vec![connector(0)],
        admin_connectors: vec![connector(0)],
        ..Default::default()
    };
    f.common.request_log.appenders = Vec::new();
    f.common.max_request_body_size = Size::mebibytes(16);
    let server = Server::start(
        &ServerFactory::Default(f),
        Router::new(),
        admin.router(),
        &MetricRegistry::new(),
        "test",
    )
    .await
    .unwrap();
    let addr = server.bound()[1].addr;
    (server, addr)
}

/// POSTs `body` (a form) to `path`; the status and the body of the answer.
fn post(addr: SocketAddr, path: &str, body: &[u8]) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let _ = s.write_all(body);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_owned();
    (status, body)
}

/// `admin.tasks.maxBodySize` bounds a task's body, above axum's own 2 MiB too.
///
/// Catches: the size ignored, and axum's default limit left in place (a 3 MiB body would
/// get axum's 413 under a 4 MiB `maxBodySize`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn max_body_size_bounds_a_tasks_body() {
    let body = |n: usize| format!("pad={}", "a".repeat(n)).into_bytes();
    let mut config = AdminFactory::default();
    config.tasks.max_body_size = Size::mebibytes(4);
    let (server, addr) = admin(config).await;
    let (ok, too_big) = tokio::task::spawn_blocking(move || {
        (
            post(addr, "/tasks/echo", &body(3 << 20)),
            post(addr, "/tasks/echo", &body(5 << 20)),
        )
    })
    .await
    .unwrap();
    assert_eq!(ok, (200, format!("got {} bytes\n", 3 << 20)));
    assert_eq!(too_big.0, 413, "{}", too_big.1);
    server.shutdown().await;

    // The default, 64 KiB.
    let (server, addr) = admin(AdminFactory::default()).await;
    let (ok, too_big) = tokio::task::spawn_blocking(move || {
        (
            post(addr, "/tasks/echo", &body(60 << 10)).0,
            post(addr, "/tasks/echo", &body(70 << 10)).0,
        )
    })
    .await
    .unwrap();
    assert_eq!((ok, too_big), (200, 413));
    server.shutdown().await;
}

/// `admin.tasks.printStackTraceOnError` adds a failed task's causes to its reply.
///
/// Catches: the causes always or never printed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn print_stack_trace_on_error_shows_a_failed_tasks_causes() {
    for print in [false, true] {
        let mut config = AdminFactory::default();
        config.tasks.print_stack_trace_on_error = print;
        let (server, addr) = admin(config).await;
        let (status, body) = tokio::task::spawn_blocking(move || post(addr, "/tasks/fail", b""))
            .await
            .unwrap();
        assert_eq!(status, 500);
        let mut want = "task fail failed: cannot rotate the archive\n".to_owned();
        if print {
            want.push_str("Caused by: disk on fire\n");
        }
        assert_eq!(body, want, "printStackTraceOnError {print}");
        server.shutdown().await;
    }
}
