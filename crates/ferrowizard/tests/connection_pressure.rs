//! Connections near their limit, on real sockets: `maxConnections` refuses with a fast 503 when
//! every connection is busy, and makes room by closing idle connections, the longest idle (then
//! the oldest) first; from 90% of the limit, connections idle for a second are closed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use ferrowizard::config::Duration as ConfigDuration;
use ferrowizard::config::ServerFactory;
use ferrowizard::config::{
    ConnectorCommon, ConnectorFactory, DefaultServerFactory, HttpConnectorFactory,
};
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::Server;
use tokio::sync::Semaphore;

/// One connector on 127.0.0.1 with `maxConnections: max`; its connection timer looks every
/// `idle / 4`.
fn factory(max: u32, idle: ConfigDuration) -> ServerFactory {
    let f = DefaultServerFactory {
        application_connectors: vec![ConnectorFactory::Http(HttpConnectorFactory {
            common: ConnectorCommon {
                port: 0,
                bind_host: Some("127.0.0.1".into()),
                max_connections: Some(max),
                idle_timeout: idle,
                header_read_timeout: idle,
                ..Default::default()
            },
        })],
        admin_connectors: Vec::new(),
        ..Default::default()
    };
    let mut f = f;
    f.common.request_log.appenders = Vec::new();
    ServerFactory::Default(f)
}

/// `/quick`, and `/wait`, which answers once `gate` lets it.
fn app(gate: Arc<Semaphore>) -> Router {
    Router::new()
        .route("/quick", get(|| async { "quick\n" }))
        .route(
            "/wait",
            get(move || {
                let gate = gate.clone();
                async move {
                    let _permit = gate.acquire().await;
                    "waited\n"
                }
            }),
        )
}

/// A kept-alive client connection.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(addr: SocketAddr) -> Client {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        Client {
            reader: BufReader::new(s),
        }
    }

    fn send(&mut self, path: &str) {
        let request = format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n");
        self.reader.get_mut().write_all(request.as_bytes()).unwrap();
    }

    /// The status line and the body of the next response (bodies are short, with a length).
    fn read(&mut self) -> (String, String) {
        let mut status = String::new();
        self.reader.read_line(&mut status).unwrap();
        let mut length = 0;
        loop {
            let mut line = String::new();
            self.reader.read_line(&mut line).unwrap();
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).unwrap();
        (
            status.trim_end().to_owned(),
            String::from_utf8(body).unwrap(),
        )
    }

    fn get(&mut self, path: &str) -> (String, String) {
        self.send(path);
        self.read()
    }

    /// A read that waits up to `wait`: `None` if nothing came, else the bytes read (0: the
    /// server closed the connection; an error counts as closed too).
    fn read_within(&mut self, wait: Duration) -> Option<usize> {
        let stream = self.reader.get_ref();
        stream.set_read_timeout(Some(wait)).unwrap();
        let read = self.reader.read(&mut [0u8; 64]);
        self.reader
            .get_ref()
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        match read {
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => None,
            Err(_) => Some(0),
            Ok(n) => Some(n),
        }
    }

    /// Whether the server closed the connection (end of stream within 5 s).
    fn closed(&mut self) -> bool {
        self.read_within(Duration::from_secs(5)) == Some(0)
    }

    /// Whether the connection is still open (nothing, no end of stream, within 50 ms).
    fn open(&mut self) -> bool {
        self.read_within(Duration::from_millis(50)).is_none()
    }
}

async fn start(
    factory: &ServerFactory,
    gate: Arc<Semaphore>,
) -> (Server, SocketAddr, MetricRegistry) {
    let metrics = MetricRegistry::new();
    let server = Server::start(factory, app(gate), Router::new(), &metrics, "test")
        .await
        .unwrap();
    let addr = server.bound()[0].addr;
    (server, addr, metrics)
}

fn counter(metrics: &MetricRegistry, name: &str) -> u64 {
    let m: serde_json::Value = serde_json::from_str(&metrics.render_json(false)).unwrap();
    m["counters"][format!("{name}.application[0]")]["count"]
        .as_u64()
        .unwrap_or_else(|| panic!("no {name}: {m}"))
}

/// Catches: `maxConnections` ignored (the third connection served once a slot frees, or
/// waiting), a refusal that is not a 503 or comes late, or a busy connection closed to make
/// room.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_max_connections_with_every_connection_busy_a_new_one_gets_503_at_once() {
    let gate = Arc::new(Semaphore::new(0));
    let (server, addr, metrics) =
        start(&factory(2, ConfigDuration::seconds(3600)), gate.clone()).await;
    let refused = tokio::task::spawn_blocking(move || {
        let mut busy: Vec<Client> = (0..2).map(|_| Client::connect(addr)).collect();
        for c in &mut busy {
            c.send("/wait");
        }
        // Both requests are in flight before the third connection comes.
        std::thread::sleep(Duration::from_millis(200));
        let asked = Instant::now();
        let mut third = Client::connect(addr);
        let answer = third.read();
        let took = asked.elapsed();
        assert!(third.closed(), "the refused connection stays open");
        (busy, answer, took)
    })
    .await
    .unwrap();
    let (mut busy, answer, took) = refused;
    assert_eq!(
        answer,
        (
            "HTTP/1.1 503 Service Unavailable".into(),
            "Too many connections".into()
        )
    );
    assert!(took < Duration::from_secs(2), "refused after {took:?}");
    assert_eq!(counter(&metrics, "ferrowizard.connections.refused"), 1);
    gate.add_permits(2);
    let answers =
        tokio::task::spawn_blocking(move || busy.iter_mut().map(Client::read).collect::<Vec<_>>())
            .await
            .unwrap();
    assert!(
        answers
            .iter()
            .all(|(s, b)| s == "HTTP/1.1 200 OK" && b == "waited\n"),
        "{answers:?}"
    );
    server.shutdown().await;
}

/// Catches: room not made by closing idle connections (the new one refused), idle connections
/// closed in another order than oldest first, more closed than the limit asks (down to 80%),
/// or the count missing from the metric.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_max_connections_the_oldest_idle_connections_make_room() {
    let (server, addr, metrics) = start(
        &factory(10, ConfigDuration::seconds(3600)),
        Arc::new(Semaphore::new(0)),
    )
    .await;
    tokio::task::spawn_blocking(move || {
        // Ten connections, each answered once, then idle (their timer, every 15 minutes, has
        // not looked since: equally idle as far as it knows, so the oldest go first).
        let mut idle: Vec<Client> = (0..10).map(|_| Client::connect(addr)).collect();
        for c in &mut idle {
            assert_eq!(c.get("/quick").0, "HTTP/1.1 200 OK");
        }
        let mut new = Client::connect(addr);
        assert_eq!(
            new.get("/quick"),
            ("HTTP/1.1 200 OK".into(), "quick\n".into())
        );
        // Room for the new one and down to 80%: 10 + 1 - 8 = 3 closed, the three oldest.
        for (n, c) in idle.iter_mut().enumerate() {
            if n < 3 {
                assert!(c.closed(), "connection {n} (among the oldest) still open");
            } else {
                assert!(c.open(), "connection {n} closed");
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(counter(&metrics, "ferrowizard.connections.closedIdle"), 3);
    assert_eq!(counter(&metrics, "ferrowizard.connections.refused"), 0);
    server.shutdown().await;
}

/// Catches: nothing done before the limit (soft pressure), connections idle for less than a
/// second closed, or busy ones closed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_ninety_per_cent_connections_idle_for_a_second_are_closed() {
    let gate = Arc::new(Semaphore::new(0));
    // The timer looks every 2 s: after 5 s of silence it knows of 3 s at least.
    let (server, addr, metrics) =
        start(&factory(10, ConfigDuration::seconds(8)), gate.clone()).await;
    let (mut quiet, mut busy) = tokio::task::spawn_blocking(move || {
        let mut quiet: Vec<Client> = (0..6).map(|_| Client::connect(addr)).collect();
        for c in &mut quiet {
            assert_eq!(c.get("/quick").0, "HTTP/1.1 200 OK");
        }
        std::thread::sleep(Duration::from_secs(5));
        // Three busy ones: nine open, at the 90% mark (9 of 10) with the tenth.
        let mut busy: Vec<Client> = (0..3).map(|_| Client::connect(addr)).collect();
        for c in &mut busy {
            c.send("/wait");
        }
        std::thread::sleep(Duration::from_millis(200));
        let mut tenth = Client::connect(addr);
        assert_eq!(tenth.get("/quick").0, "HTTP/1.1 200 OK");
        (quiet, busy)
    })
    .await
    .unwrap();
    // Ten with the new one, down to 8: two of the quiet ones.
    assert_eq!(counter(&metrics, "ferrowizard.connections.closedIdle"), 2);
    gate.add_permits(3);
    tokio::task::spawn_blocking(move || {
        let closed = quiet
            .iter_mut()
            .map(|c| !c.open())
            .filter(|closed| *closed)
            .count();
        assert_eq!(closed, 2);
        for c in &mut busy {
            assert_eq!(c.read().0, "HTTP/1.1 200 OK");
        }
    })
    .await
    .unwrap();
    server.shutdown().await;
}

/// Two clients on `addr` (whose limit is one connection): the first sends `GET busy` (held),
/// the second connects and is refused with a 503. Returns the first.
fn second_refused_while_first_is_busy(addr: SocketAddr, busy: &str) -> Client {
    let mut first = Client::connect(addr);
    first.send(busy);
    std::thread::sleep(Duration::from_millis(200));
    let mut second = Client::connect(addr);
    assert_eq!(second.read().0, "HTTP/1.1 503 Service Unavailable");
    first
}

/// Catches: an admin connector's `maxConnections` ignored (the admin side counts its
/// connections apart from the application's), or its refusals missing from the metrics.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_connectors_keep_their_own_max_connections() {
    let gate = Arc::new(Semaphore::new(0));
    let local = || HttpConnectorFactory {
        common: ConnectorCommon {
            port: 0,
            bind_host: Some("127.0.0.1".into()),
            ..Default::default()
        },
    };
    let mut f = DefaultServerFactory {
        application_connectors: vec![ConnectorFactory::Http(local())],
        admin_connectors: vec![ConnectorFactory::Http(HttpConnectorFactory {
            common: ConnectorCommon {
                max_connections: Some(1),
                ..local().common
            },
        })],
        ..Default::default()
    };
    f.common.request_log.appenders = Vec::new();
    let metrics = MetricRegistry::new();
    let server = Server::start(
        &ServerFactory::Default(f),
        app(gate.clone()),
        app(gate.clone()),
        &metrics,
        "test",
    )
    .await
    .unwrap();
    let admin = server
        .bound()
        .iter()
        .find(|b| b.role == "admin")
        .unwrap()
        .addr;
    let app_addr = server.bound()[0].addr;
    let first = tokio::task::spawn_blocking(move || {
        let first = second_refused_while_first_is_busy(admin, "/wait");
        // The application connector has no limit: two connections there are served.
        let mut a = Client::connect(app_addr);
        let mut b = Client::connect(app_addr);
        assert_eq!(a.get("/quick").0, "HTTP/1.1 200 OK");
        assert_eq!(b.get("/quick").0, "HTTP/1.1 200 OK");
        first
    })
    .await
    .unwrap();
    // Counted where it happened: the admin connector's metrics, not the application's.
    let m: serde_json::Value = serde_json::from_str(&metrics.render_json(false)).unwrap();
    let refused = |connector: &str| {
        m["counters"][format!("ferrowizard.connections.refused.{connector}")]["count"].as_u64()
    };
    assert_eq!(
        (refused("admin[0]"), refused("application[0]")),
        (Some(1), Some(0))
    );
    gate.add_permits(1);
    drop(first);
    server.shutdown().await;
}

/// Catches: the simple server's one connector losing `maxConnections` on its way to the
/// accept stage.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simple_servers_connector_takes_max_connections() {
    use ferrowizard::config::SimpleServerFactory;
    let gate = Arc::new(Semaphore::new(0));
    let mut f = SimpleServerFactory {
        connector: ConnectorFactory::Http(HttpConnectorFactory {
            common: ConnectorCommon {
                port: 0,
                bind_host: Some("127.0.0.1".into()),
                max_connections: Some(1),
                ..Default::default()
            },
        }),
        ..Default::default()
    };
    f.common.request_log.appenders = Vec::new();
    let (server, addr, _) = start(&ServerFactory::Simple(f), gate.clone()).await;
    let first = tokio::task::spawn_blocking(move || {
        second_refused_while_first_is_busy(addr, "/application/wait")
    })
    .await
    .unwrap();
    gate.add_permits(1);
    drop(first);
    server.shutdown().await;
}
