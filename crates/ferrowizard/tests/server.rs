//! The server's protections, on real sockets: overload, hostile clients, panics, TLS.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::routing::{get, post};
use ferrowizard::admin::Admin;
use ferrowizard::config::{AdminFactory, Duration as ConfigDuration, ServerFactory, Size};
use ferrowizard::config::{
    ConnectorCommon, ConnectorFactory, DefaultServerFactory, HttpConnectorFactory,
    HttpsConnectorFactory, SimpleServerFactory,
};
use ferrowizard::health::{Health, HealthChecks};
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::{Routes, Server};
use tokio::sync::Semaphore;

fn http(port: u16, header_timeout_ms: u64) -> ConnectorFactory {
    ConnectorFactory::Http(HttpConnectorFactory {
        common: ConnectorCommon {
            port,
            bind_host: Some("127.0.0.1".into()),
            header_read_timeout: ConfigDuration::milliseconds(header_timeout_ms),
            ..Default::default()
        },
    })
}

fn server(max_threads: usize, max_queued: usize, app: Vec<ConnectorFactory>) -> ServerFactory {
    let mut f = DefaultServerFactory {
        application_connectors: app,
        admin_connectors: vec![ConnectorFactory::Http(HttpConnectorFactory {
            common: ConnectorCommon {
                port: 0,
                bind_host: Some("127.0.0.1".into()),
                ..Default::default()
            },
        })],
        ..Default::default()
    };
    f.common.max_threads = max_threads;
    f.common.max_queued_requests = max_queued;
    f.common.max_request_body_size = Size::kibibytes(1);
    f.common.request_log.appenders = Vec::new();
    f.common.shutdown_grace_period = ConfigDuration::seconds(2);
    ServerFactory::Default(f)
}

/// Sends raw bytes, returns the raw response (until the server closes or 5 s pass).
fn raw(addr: SocketAddr, request: &[u8]) -> String {
    raw_within(addr, request, Duration::from_secs(5))
}

/// [`raw`], waiting at most `wait` for the answer.
fn raw_within(addr: SocketAddr, request: &[u8], wait: Duration) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(wait)).unwrap();
    let _ = s.write_all(request);
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn status(response: &str) -> u16 {
    response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

fn get_close(addr: SocketAddr, path: &str) -> String {
    raw(
        addr,
        format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

/// `/block` handlers blocking their worker now.
static BLOCKING: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

fn routes(gate: Arc<Semaphore>) -> Router {
    Router::new()
        .route("/fast", get(|| async { "fast\n" }))
        .route("/big", get(|| async { "x".repeat(4096) }))
        .route("/echo", post(|body: String| async move { body }))
        .route("/panic", get(panics))
        // A handler that blocks its worker thread, as a careless synchronous call would.
        .route(
            "/block",
            get(|| async {
                BLOCKING.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(2500));
                BLOCKING.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                "unblocked\n"
            }),
        )
        .route(
            "/slow",
            get(move || {
                let gate = gate.clone();
                async move {
                    let _permit = gate.acquire().await;
                    "slow\n"
                }
            }),
        )
}

async fn panics() -> &'static str {
    panic!("the handler broke: {}", 42)
}

/// Starts a server with no admin routes on the given settings and application.
async fn start(factory: &ServerFactory, app: Router, metrics: &MetricRegistry) -> Server {
    Server::start(factory, app, Router::new(), metrics, "test")
        .await
        .unwrap()
}

fn app_addr(s: &Server) -> SocketAddr {
    s.bound()
        .iter()
        .find(|b| b.role == "application")
        .unwrap()
        .addr
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload_gets_503_at_once_and_the_rest_are_served() {
    let gate = Arc::new(Semaphore::new(0));
    let metrics = MetricRegistry::new();
    let server = start(
        &server(4, 0, vec![http(0, 10_000)]),
        routes(gate.clone()),
        &metrics,
    )
    .await;
    let addr = app_addr(&server);
    // Ten requests while the handler is held: four run, six are turned away.
    let requests: Vec<_> = (0..10)
        .map(|_| tokio::task::spawn_blocking(move || get_close(addr, "/slow")))
        .collect();
    // The six 503s arrive while the four are still held (nothing has been let through yet).
    let mut rejected = 0;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while server.rejected()[0] < 6 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "503s did not come at once: {:?}",
            server.rejected()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    gate.add_permits(10);
    let mut ok = 0;
    for r in requests {
        match status(&r.await.unwrap()) {
            200 => ok += 1,
            503 => rejected += 1,
            s => panic!("unexpected status {s}"),
        }
    }
    assert_eq!((ok, rejected), (4, 6));
    // The 503s are in the 5xx meter and the overload counter, the 200s in 2xx.
    let m: serde_json::Value = serde_json::from_str(&metrics.render_json(false)).unwrap();
    assert_eq!(m["meters"]["ferrowizard.responses.5xx"]["count"], 6, "{m}");
    assert_eq!(m["meters"]["ferrowizard.responses.2xx"]["count"], 4, "{m}");
    assert_eq!(
        m["counters"]["ferrowizard.overload.rejected.application[0]"]["count"], 6,
        "{m}"
    );
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_requests_wait_for_a_slot_and_are_served() {
    let gate = Arc::new(Semaphore::new(0));
    let metrics = MetricRegistry::new();
    let server = start(
        &server(2, 3, vec![http(0, 10_000)]),
        routes(gate.clone()),
        &metrics,
    )
    .await;
    let addr = app_addr(&server);
    // Two run, three wait, three are turned away.
    let requests: Vec<_> = (0..8)
        .map(|_| tokio::task::spawn_blocking(move || get_close(addr, "/slow")))
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while server.rejected()[0] < 3 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no 503s: {:?}",
            server.rejected()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Being handled: the two running and the three waiting, not the three turned away.
    let active = || {
        let m: serde_json::Value = serde_json::from_str(&metrics.render_json(false)).unwrap();
        m["gauges"]["ferrowizard.requests.active"]["value"].clone()
    };
    assert_eq!(active(), 5.0);
    // Let them through one at a time: each freed slot goes to a waiter.
    for _ in 0..5 {
        gate.add_permits(1);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut statuses: Vec<u16> = Vec::new();
    for r in requests {
        statuses.push(status(&r.await.unwrap()));
    }
    statuses.sort();
    assert_eq!(statuses, [200, 200, 200, 200, 200, 503, 503, 503]);
    assert_eq!(server.rejected()[0], 3);
    // The queued ones are timed under their route too, and nothing under another.
    let fast = tokio::task::spawn_blocking(move || get_close(addr, "/fast"));
    assert_eq!(status(&fast.await.unwrap()), 200);
    let m: serde_json::Value = serde_json::from_str(&metrics.render_json(false)).unwrap();
    assert_eq!(
        m["timers"]["ferrowizard.routes.GET./slow"]["count"], 5,
        "{m}"
    );
    assert_eq!(
        m["timers"]["ferrowizard.routes.GET./fast"]["count"], 1,
        "{m}"
    );
    assert_eq!(m["timers"]["ferrowizard.requests"]["count"], 9, "{m}");
    assert_eq!(active(), 0.0, "{m}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_are_timed_under_the_route_axum_chose_known_or_merged() {
    // The simple server: the application's routes nested under its context path, the admin
    // routes merged in beside them.
    let mut f = SimpleServerFactory {
        connector: http(0, 10_000),
        ..Default::default()
    };
    f.common.request_log.appenders = Vec::new();
    let app = Routes::new()
        .route("/q/{symbol}", get(|| async { "quote\n" }))
        .route("/", get(|| async { "home\n" }))
        // More specific than a known template: axum routes it here, and so must its timer.
        .merge(Router::new().route("/q/special", get(|| async { "special\n" })));
    let admin = Router::new().route("/ping", get(|| async { "pong\n" }));
    let metrics = MetricRegistry::new();
    let server = Server::start(&ServerFactory::Simple(f), app, admin, &metrics, "test")
        .await
        .unwrap();
    let addr = app_addr(&server);
    let requests = [
        ("GET", "/application/q/ACME", 200),
        ("GET", "/application/q/INIT", 200),
        ("GET", "/application/q/special", 200),
        ("GET", "/application", 200),
        ("GET", "/application/nowhere", 404),
        ("POST", "/application/q/ACME", 405),
        ("GET", "/admin/ping", 200),
    ];
    for (method, path, expected) in requests {
        let response = tokio::task::spawn_blocking(move || {
            raw(
                addr,
                format!("{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
            )
        })
        .await
        .unwrap();
        assert_eq!(status(&response), expected, "{method} {path}: {response}");
    }
    let m: serde_json::Value = serde_json::from_str(&metrics.render_json(false)).unwrap();
    let timers = m["timers"].as_object().unwrap();
    let routes: Vec<(&str, u64)> = timers
        .iter()
        .filter(|(name, _)| name.starts_with("ferrowizard.routes."))
        .map(|(name, t)| {
            (
                &name["ferrowizard.routes.".len()..],
                t["count"].as_u64().unwrap(),
            )
        })
        .collect();
    let mut expected = vec![
        ("GET./application/q/{symbol}", 2),
        ("GET./application/q/special", 1),
        ("GET./application", 1),
        // A known template with a method it has no handler for: timed under it, as a 405.
        ("POST./application/q/{symbol}", 1),
        ("GET./admin/ping", 1),
    ];
    let mut routes = routes;
    routes.sort();
    expected.sort();
    assert_eq!(routes, expected, "{m}");
    assert_eq!(m["timers"]["ferrowizard.requests"]["count"], 7, "{m}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_clients_get_errors_and_the_server_serves_on() {
    // This test binary's global subscriber: the server's ERROR lines go to a file.
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join("app.log");
    let appender = ferrowizard_logging::config::FileAppenderFactory {
        current_log_filename: Some(log_path.display().to_string()),
        archive: false,
        ..Default::default()
    };
    let factory = ferrowizard_logging::LoggingFactory {
        appenders: vec![ferrowizard_logging::AppenderFactory::File(appender)],
        ..Default::default()
    };
    let (logging, subscriber) = factory.build("test").unwrap();
    let guard = logging.install(subscriber, Duration::from_secs(5)).unwrap();
    let logging = guard.logging().clone();
    let gate = Arc::new(Semaphore::new(100));
    let server = start(
        &server(64, 64, vec![http(0, 1_000)]),
        routes(gate),
        &MetricRegistry::new(),
    )
    .await;
    let addr = app_addr(&server);
    tokio::task::spawn_blocking(move || {
        // 1 MiB of headers: 431.
        let big = format!("GET /fast HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n", "a".repeat(1 << 20));
        assert_eq!(status(&raw(addr, big.as_bytes())), 431);
        // A garbage request line: 400.
        assert_eq!(status(&raw(addr, b"HELLO THERE\r\n\r\n")), 400);
        // A body over maxRequestBodySize (1 KiB here): 413.
        let body = "b".repeat(4096);
        let post = format!("POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
        assert_eq!(status(&raw(addr, post.as_bytes())), 413);
        // A method not allowed: 405.
        assert_eq!(status(&raw(addr, b"TRACE /fast HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")), 405);
        // A panicking handler: 500, an ERROR line with the message, and the next request
        // is served.
        assert_eq!(status(&get_close(addr, "/panic")), 500);
        assert_eq!(status(&get_close(addr, "/fast")), 200);
        assert!(logging.flush(Duration::from_secs(5)));
        let log = std::fs::read_to_string(log_path).unwrap();
        assert!(log.lines().any(|l| l.starts_with("ERROR") && l.contains("the handler broke: 42")), "{log}");
        // gzip above minimumEntitySize when the client accepts it.
        let gz = raw(addr, b"GET /big HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n");
        assert!(gz.to_ascii_lowercase().contains("content-encoding: gzip"), "{}", &gz[..200.min(gz.len())]);
        let small = raw(addr, b"GET /fast HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\nConnection: close\r\n\r\n");
        assert!(!small.to_ascii_lowercase().contains("content-encoding"), "{small}");

        // Slowloris: 500 connections that send half a request head and wait.
        let loris: Vec<TcpStream> = (0..500)
            .map(|_| {
                let mut s = TcpStream::connect(addr).unwrap();
                s.write_all(b"GET /fast HTTP/1.1\r\nHost: t\r\nX-Slow: ").unwrap();
                s
            })
            .collect();
        // A normal client is still answered, within its own 5 s timeout.
        for _ in 0..20 {
            assert_eq!(status(&get_close(addr, "/fast")), 200);
        }
        // After headerReadTimeout (1 s) the half-open connections are closed by the server.
        std::thread::sleep(Duration::from_millis(2500));
        let closed = loris
            .into_iter()
            .filter(|s| {
                let mut s = s;
                s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
                let mut buf = [0u8; 512];
                // EOF (or a response before it, or a reset) means the server let go; a
                // read that times out means the connection is still held open.
                match s.read(&mut buf) {
                    Ok(_n) => true,
                    Err(e) => !matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
                }
            })
            .count();
        assert_eq!(closed, 500, "half-open connections still held after headerReadTimeout");
    })
    .await
    .unwrap();
    server.shutdown().await;
    drop(guard);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_binds_loopback_and_https_serves() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    let cert_path = dir.path().join("cert.pem");
    let key_path = dir.path().join("key.pem");
    std::fs::write(&cert_path, cert.cert.pem()).unwrap();
    std::fs::write(&key_path, cert.signing_key.serialize_pem()).unwrap();
    let https = ConnectorFactory::Https(HttpsConnectorFactory {
        common: ConnectorCommon {
            port: 0,
            bind_host: Some("127.0.0.1".into()),
            ..Default::default()
        },
        cert_path: Some(cert_path.display().to_string()),
        key_path: Some(key_path.display().to_string()),
        ..Default::default()
    });
    let server = start(
        &server(8, 8, vec![https]),
        routes(Arc::new(Semaphore::new(1))),
        &MetricRegistry::new(),
    )
    .await;
    let admin = server.bound().iter().find(|b| b.role == "admin").unwrap();
    assert!(admin.addr.ip().is_loopback(), "admin bound {}", admin.addr);
    let app = server
        .bound()
        .iter()
        .find(|b| b.role == "application")
        .unwrap()
        .clone();
    assert_eq!(app.scheme, "https");

    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = tokio::net::TcpStream::connect(app.addr).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let mut tls = connector.connect(name, tcp).await.unwrap();
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    tls.write_all(b"GET /fast HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut out = Vec::new();
    let _ = tls.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.ends_with("fast\n"), "{text}");
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_in_use_is_one_clear_error() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let Err(e) = Server::start(
        &server(8, 8, vec![http(port, 1000)]),
        Router::new(),
        Router::new(),
        &MetricRegistry::new(),
        "test",
    )
    .await
    else {
        panic!("bound a port in use");
    };
    let message = e.to_string();
    assert!(
        message.starts_with(&format!(
            "cannot listen on 127.0.0.1:{port} (application connector): "
        )),
        "{message}"
    );
    assert!(!message.contains('\n'));
}

fn admin_addr(s: &Server) -> SocketAddr {
    s.bound().iter().find(|b| b.role == "admin").unwrap().addr
}

/// A server whose admin side has `checks` (each named) with a 300 ms timeout.
async fn with_checks(checks: HealthChecks) -> Server {
    let mut config = AdminFactory::default();
    config.health_checks.timeout = ConfigDuration::milliseconds(300);
    let admin = Admin {
        config,
        health_checks: checks,
        tasks: Default::default(),
        metrics: MetricRegistry::new(),
        logging: None,
        runtime: tokio::runtime::Handle::current(),
    };
    Server::start(
        &server(8, 8, vec![http(0, 10_000)]),
        routes(Arc::new(Semaphore::new(1))),
        admin.router(),
        &MetricRegistry::new(),
        "test",
    )
    .await
    .unwrap()
}

fn body(response: &str) -> serde_json::Value {
    let (_, body) = response.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_health_check_is_answered_within_its_timeout() {
    let hangs = || async {
        tokio::time::sleep(Duration::from_secs(3600)).await;
        Health::healthy()
    };
    let fine = || async { Health::healthy_with("all good") };
    let mut checks = HealthChecks::default();
    checks.add("database", hangs).add("cache", fine);
    let server = with_checks(checks).await;
    let addr = admin_addr(&server);
    let asked = std::time::Instant::now();
    let response = tokio::task::spawn_blocking(move || get_close(addr, "/healthcheck"))
        .await
        .unwrap();
    let took = asked.elapsed();
    assert_eq!(status(&response), 500, "{response}");
    assert!(took < Duration::from_secs(2), "answered after {took:?}");
    let report = body(&response);
    assert_eq!(report["database"]["healthy"], false);
    assert_eq!(report["database"]["message"], "timed out after 300 ms");
    assert_eq!(report["cache"]["healthy"], true);
    assert_eq!(report["cache"]["message"], "all good");
    assert_eq!(report["runtime"]["healthy"], true);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_application_checks_healthcheck_is_501() {
    let server = with_checks(HealthChecks::default()).await;
    let addr = admin_addr(&server);
    let response = tokio::task::spawn_blocking(move || get_close(addr, "/healthcheck"))
        .await
        .unwrap();
    assert_eq!(status(&response), 501, "{response}");
    // The built-in check still runs and says how the runtime is doing.
    assert_eq!(body(&response)["runtime"]["healthy"], true);
    server.shutdown().await;
}

/// A body that sends `chunks` lines, one every `every`: a streamed response.
struct Trickle {
    every: tokio::time::Interval,
    chunks: usize,
}

impl http_body::Body for Trickle {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<bytes::Bytes>, Self::Error>>> {
        if self.chunks == 0 {
            return std::task::Poll::Ready(None);
        }
        std::task::ready!(self.every.poll_tick(cx));
        self.chunks -= 1;
        std::task::Poll::Ready(Some(Ok(http_body::Frame::data(bytes::Bytes::from_static(
            b"tick\n",
        )))))
    }
}

/// Reads what the server sends within `wait`: the bytes, and whether it closed the connection.
fn read_for(s: &mut TcpStream, wait: Duration) -> (Vec<u8>, bool) {
    s.set_read_timeout(Some(wait)).unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (out, true),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return (out, false);
            }
            Err(_) => return (out, true),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_tell_a_slow_client_from_a_slow_answer() {
    // headerReadTimeout 1 s, idleTimeout 1.5 s.
    let connector = ConnectorFactory::Http(HttpConnectorFactory {
        common: ConnectorCommon {
            port: 0,
            bind_host: Some("127.0.0.1".into()),
            header_read_timeout: ConfigDuration::milliseconds(1000),
            idle_timeout: ConfigDuration::milliseconds(1500),
            ..Default::default()
        },
    });
    let app = routes(Arc::new(Semaphore::new(0))).route(
        "/trickle",
        get(|| async {
            let every = tokio::time::interval_at(
                tokio::time::Instant::now() + Duration::from_millis(400),
                Duration::from_millis(400),
            );
            axum::body::Body::new(Trickle { every, chunks: 5 })
        }),
    );
    let metrics = MetricRegistry::new();
    let server = start(&server(4, 0, vec![connector]), app, &metrics).await;
    let addr = app_addr(&server);
    tokio::task::spawn_blocking(move || {
        // A streamed answer (2 s) outlasts headerReadTimeout while the client's next request
        // arrives: that request is not a slow head, and both are answered.
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /trickle HTTP/1.1\r\nHost: t\r\n\r\n")
            .unwrap();
        std::thread::sleep(Duration::from_millis(300));
        s.write_all(b"GET /fast HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            .unwrap();
        let (out, closed) = read_for(&mut s, Duration::from_secs(5));
        let out = String::from_utf8_lossy(&out);
        assert!(closed, "{out}");
        assert_eq!(out.matches("tick\n").count(), 5, "{out}");
        assert!(out.ends_with("fast\n"), "{out}");

        // HTTP/2 with prior knowledge: the preface and settings, then nothing for longer than
        // headerReadTimeout (but not idleTimeout). Frames are not a request head: the
        // connection stays open.
        let mut h2 = TcpStream::connect(addr).unwrap();
        h2.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00")
            .unwrap();
        let (settings, closed) = read_for(&mut h2, Duration::from_millis(1300));
        assert!(
            !settings.is_empty() && !closed,
            "h2c connection closed as a slow head"
        );

        // A client that stops sending its request body: closed after idleTimeout, and dropped
        // if still silent one idleTimeout later (the handler waiting for the body with it).
        let mut stalled = TcpStream::connect(addr).unwrap();
        stalled
            .write_all(b"POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 100\r\n\r\nonly ten b")
            .unwrap();
        let started = std::time::Instant::now();
        let (_, closed) = read_for(&mut stalled, Duration::from_secs(8));
        assert!(closed, "a stalled request body held its connection for 8 s");
        assert!(
            started.elapsed() >= Duration::from_millis(2500),
            "{:?}",
            started.elapsed()
        );
    })
    .await
    .unwrap();
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_max_threads_bounds_the_admin_side_and_the_rest_get_503() {
    // A health check held until the test lets it go.
    let gate = Arc::new(Semaphore::new(0));
    let held = gate.clone();
    let check = move || {
        let gate = held.clone();
        async move {
            let _permit = gate.acquire().await;
            Health::healthy_with("let go")
        }
    };
    let mut config = AdminFactory::default();
    config.health_checks.timeout = ConfigDuration::seconds(60);
    let admin = Admin {
        config,
        health_checks: {
            let mut checks = HealthChecks::default();
            checks.add("held", check);
            checks
        },
        tasks: Default::default(),
        metrics: MetricRegistry::new(),
        logging: None,
        runtime: tokio::runtime::Handle::current(),
    };
    let mut factory = server(8, 8, vec![http(0, 10_000)]);
    if let ServerFactory::Default(f) = &mut factory {
        f.admin_max_threads = 2;
    }
    let server = Server::start(
        &factory,
        routes(Arc::new(Semaphore::new(1))),
        admin.router(),
        &MetricRegistry::new(),
        "test",
    )
    .await
    .unwrap();
    let addr = admin_addr(&server);
    // 70 at once: 2 run, 64 wait (the admin side's queue), 4 are refused at once.
    let requests: Vec<_> = (0..70)
        .map(|_| tokio::task::spawn_blocking(move || get_close(addr, "/healthcheck")))
        .collect();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while server.rejected()[1] < 4 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no 503s while every admin slot was held: {:?}",
            server.rejected()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    gate.add_permits(1000);
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    for r in requests {
        *statuses.entry(status(&r.await.unwrap())).or_default() += 1;
    }
    assert_eq!(statuses, [(200, 66), (503, 4)].into(), "{statuses:?}");
    // The application connector was never involved.
    assert_eq!(server.rejected()[0], 0);
    server.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_admin_side_answers_while_handlers_block_every_application_worker() {
    let server = with_checks(HealthChecks::default()).await;
    let (app, admin) = (app_addr(&server), admin_addr(&server));
    // Four handlers that each block a worker for 2.5 s: both workers are held for ~5 s (the
    // last two answers come after 5 s: they are waited for well beyond).
    let blocked: Vec<_> = (0..4)
        .map(|_| {
            tokio::task::spawn_blocking(move || {
                raw_within(
                    app,
                    b"GET /block HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                    Duration::from_secs(30),
                )
            })
        })
        .collect();
    let (ping, health) = tokio::task::spawn_blocking(move || {
        // Both workers blocked (not a tokio sleep: with every worker blocked, no one drives
        // this runtime's timers), however long the handlers took to start.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while BLOCKING.load(std::sync::atomic::Ordering::SeqCst) < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "the handlers never blocked"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let asked = std::time::Instant::now();
        let ping = get_close(admin, "/ping");
        let took = asked.elapsed();
        ((status(&ping), took), get_close(admin, "/healthcheck"))
    })
    .await
    .unwrap();
    // The runtime check proves the workers were blocked, while the admin side answered.
    assert_eq!(body(&health)["runtime"]["healthy"], false, "{health}");
    assert_eq!(ping.0, 200);
    assert!(
        ping.1 < Duration::from_secs(1),
        "ping answered after {:?}",
        ping.1
    );
    for b in blocked {
        assert_eq!(status(&b.await.unwrap()), 200);
    }
    server.shutdown().await;
}
