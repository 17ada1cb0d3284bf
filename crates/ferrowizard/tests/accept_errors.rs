//! Out of file descriptors, on real sockets: accept fails with EMFILE, backs off instead of
//! spinning, says so in one WARN a second at most with how many failures there were, counts
//! them, and closes idle connections to make room for a new client.
//!
//! One test in a binary of its own: it lowers the process's open-file limit and uses up every
//! descriptor, which would break any test running beside it.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use ferrowizard::config::ServerFactory;
use ferrowizard::config::{
    ConnectorCommon, ConnectorFactory, DefaultServerFactory, HttpConnectorFactory,
};
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::Server;

#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl Captured {
    fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Opens `/dev/null` until the process has no descriptor left, then gives `spare` back.
fn use_up_descriptors(spare: usize) -> Vec<File> {
    let mut files = Vec::new();
    loop {
        match File::open("/dev/null") {
            Ok(f) => files.push(f),
            Err(e) if e.raw_os_error() == Some(24) => break,
            Err(e) => panic!("{e}"),
        }
    }
    files.truncate(files.len().saturating_sub(spare));
    files
}

fn counter(metrics: &MetricRegistry, name: &str) -> u64 {
    let m: serde_json::Value = serde_json::from_str(&metrics.render_json(false)).unwrap();
    m["counters"][format!("{name}.application[0]")]["count"]
        .as_u64()
        .unwrap_or_else(|| panic!("no {name}: {m}"))
}

/// `GET /` on `stream`: the status line.
fn ask(stream: &mut TcpStream) -> String {
    stream
        .write_all(b"GET / HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut status = String::new();
    BufReader::new(stream).read_line(&mut status).unwrap();
    status.trim_end().to_owned()
}

/// Catches: accept errors that spin (thousands of failures a second) or are not counted, a
/// WARN per failure or none, and a server that waits for descriptors to come back by
/// themselves while idle connections hold them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_descriptors_accept_backs_off_reports_once_a_second_and_closes_idle_connections() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
    setrlimit(Resource::RLIMIT_NOFILE, 256.min(hard), hard).unwrap();
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::WARN)
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let mut factory = DefaultServerFactory {
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
    factory.common.request_log.appenders = Vec::new();
    let metrics = MetricRegistry::new();
    let app = Router::new().route("/", get(|| async { "ok\n" }));
    let server = Server::start(
        &ServerFactory::Default(factory),
        app,
        Router::new(),
        &metrics,
        "test",
    )
    .await
    .unwrap();
    let addr: SocketAddr = server.bound()[0].addr;

    // No idle connection to close: accept fails for as long as the descriptors are held.
    let (files, client) = tokio::task::spawn_blocking(move || {
        let files = use_up_descriptors(1);
        let client = TcpStream::connect(addr).unwrap();
        std::thread::sleep(Duration::from_millis(2500));
        (files, client)
    })
    .await
    .unwrap();
    let failures = counter(&metrics, "ferrowizard.connections.acceptErrors");
    let warnings: Vec<String> = captured
        .lines()
        .into_iter()
        .filter(|l| l.contains("accept failed"))
        .collect();
    // Backed off from 5 ms, doubling to 1 s: about ten failures in 2.5 s, not thousands.
    assert!(
        (3..=20).contains(&failures),
        "{failures} failures: {warnings:#?}"
    );
    // The first at once, then one a second at most.
    assert!((2..=4).contains(&warnings.len()), "{warnings:#?}");
    assert!(
        warnings[0].contains("WARN") && warnings[0].contains("Too many open files"),
        "{warnings:#?}"
    );
    let reported: u64 = warnings
        .iter()
        .map(|w| {
            let n = w
                .split("failures=")
                .nth(1)
                .and_then(|r| r.split(' ').next());
            n.and_then(|n| n.parse::<u64>().ok())
                .unwrap_or_else(|| panic!("no count in {w}"))
        })
        .sum();
    assert!(
        reported <= failures && reported >= warnings.len() as u64,
        "{reported} of {failures}: {warnings:#?}"
    );

    // Descriptors back: the waiting client is served.
    drop(files);
    let mut client = client;
    client
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let served = tokio::task::spawn_blocking(move || ask(&mut client))
        .await
        .unwrap();
    assert_eq!(served, "HTTP/1.1 200 OK");

    // Five idle connections hold descriptors: out of them again, a new client gets room.
    let (idle, files) = tokio::task::spawn_blocking(move || {
        let mut idle: Vec<TcpStream> = (0..5).map(|_| TcpStream::connect(addr).unwrap()).collect();
        for s in &mut idle {
            assert_eq!(ask(s), "HTTP/1.1 200 OK");
        }
        let files = use_up_descriptors(1);
        let mut client = TcpStream::connect(addr).unwrap();
        client
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let asked = Instant::now();
        assert_eq!(ask(&mut client), "HTTP/1.1 200 OK");
        assert!(
            asked.elapsed() < Duration::from_secs(2),
            "served after {:?}",
            asked.elapsed()
        );
        (idle, files)
    })
    .await
    .unwrap();
    // The five, and the new client too if the server looked again while it was idle.
    let closed = counter(&metrics, "ferrowizard.connections.closedIdle");
    assert!((5..=6).contains(&closed), "{closed} closed");
    for mut s in idle {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        assert!(
            matches!(s.read(&mut [0u8; 16]), Ok(0) | Err(_)),
            "an idle connection still open"
        );
    }
    drop(files);
    server.shutdown().await;
}
