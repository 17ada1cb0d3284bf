//! The request log is lossless by default, and drops lines when an appender's
//! `discardingThreshold` says so, under real pressure: its file is a FIFO that nobody reads at
//! first, so its writer blocks and its queue fills while requests go on.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use axum::Router;
use axum::routing::get;
use ferrowizard::config::{Loader, ServerFactory};
use ferrowizard::metrics::MetricRegistry;
use ferrowizard::server::Server;

#[path = "../../logging/tests/support/fifo.rs"]
mod fifo;
use fifo::{drain, fifo};

/// Requests sent: their lines (about 120 bytes each) are three times what a pipe holds.
const REQUESTS: usize = 1_500;

/// `GET /q?n` on one kept-alive connection, `count` times; each answer is read whole.
fn client(addr: SocketAddr, count: usize) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let stream = TcpStream::connect(addr).unwrap();
        // Each request in one segment, sent at once (no 40 ms of Nagle and delayed ACK).
        stream.set_nodelay(true).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut writer = stream;
        let mut answered = 0;
        for n in 0..count {
            writer
                .write_all(format!("GET /q?{n:05} HTTP/1.1\r\nHost: t\r\n\r\n").as_bytes())
                .unwrap();
            let mut status = String::new();
            reader.read_line(&mut status).unwrap();
            assert!(
                status.starts_with("HTTP/1.1 200"),
                "request {n}: {status:?}"
            );
            let mut length = 0;
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).unwrap();
                if line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap();
                }
            }
            // The request log leaves the response framed as the handler made it.
            assert_eq!(length, 3, "request {n}: no Content-Length");
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            answered += 1;
        }
        answered
    })
}

/// `name`'s value in the Prometheus text for the request log's appender.
fn metric(registry: &MetricRegistry, name: &str) -> f64 {
    registry
        .render_prometheus()
        .lines()
        .filter(|l| l.starts_with(name) && l.contains("requestLog"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap())
        .sum()
}

/// A runtime for the server, of two workers. The tests run on plain threads: the request
/// threads that wait for room are the runtime's workers, which then drive no timer for a test
/// task.
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// A server on `runtime` whose request log is one file appender, with `settings` (its YAML
/// lines, each indented by 6) added, writing to a FIFO in `dir` that nobody reads yet. Returns
/// the server, its metrics, its application connector's address, and the FIFO's read end
/// (opened without blocking, so that the appender's open for writing does not wait).
fn serve_into_fifo(
    runtime: &tokio::runtime::Runtime,
    dir: &Path,
    settings: &str,
) -> (Server, MetricRegistry, SocketAddr, std::fs::File) {
    let path = dir.join("requests.log");
    let read_end = fifo(&path);
    let yaml = format!(
        "type: default\napplicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n\
         adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\nrequestLog:\n  appenders:\n    \
         - type: file\n      currentLogFilename: {}\n      archive: false\n{settings}",
        path.display()
    );
    let factory: ServerFactory = Loader::new().load_str("server.yaml", &yaml).unwrap();
    let metrics = MetricRegistry::new();
    let app = Router::new().route("/q", get(|| async { "ok\n" }));
    let server = runtime
        .block_on(Server::start(
            &factory,
            app,
            Router::new(),
            &metrics,
            "test",
        ))
        .unwrap();
    let addr = server
        .bound()
        .iter()
        .find(|b| b.role == "application")
        .unwrap()
        .addr;
    (server, metrics, addr, read_end)
}

/// With the request log's queue full and its writer stuck, request threads wait for room
/// (counted) rather than drop lines, and once the file is read every request has its line,
/// in order. The appender says nothing of `discardingThreshold`: the request log's default
/// is lossless, where an application log's drops INFO when 80% full.
///
/// Catches: `lossless_by_default` not applied (with 100 slots the default threshold of 20
/// drops lines), or a waiting request thread never woken.
#[test]
fn a_full_request_log_waits_and_loses_no_line() {
    let runtime = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (server, metrics, addr, read_end) =
        serve_into_fifo(&runtime, dir.path(), "      queueSize: 100\n");
    let requests = client(addr, REQUESTS);
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&metrics, "ferrowizard_logging_waited") < 1.0 {
        assert!(Instant::now() < deadline, "no request waited for room");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        !requests.is_finished(),
        "the requests went on without their lines"
    );
    // Now the file is read: the waiting requests go on, and every line arrives.
    let reader = drain(read_end);
    let answered = requests.join().unwrap();
    assert_eq!(answered, REQUESTS);
    runtime.block_on(server.shutdown());
    let lines = reader.join().unwrap();
    assert_eq!(lines.len(), REQUESTS);
    for (n, line) in lines.iter().enumerate() {
        assert!(
            line.contains(&format!("\"GET /q?{n:05} HTTP/1.1\" 200 ")),
            "{line}"
        );
    }
    assert_eq!(metric(&metrics, "ferrowizard_logging_dropped"), 0.0);
}

/// A request-log appender's own `discardingThreshold` holds over the request log's lossless
/// default: with `queueSize: 100` and `discardingThreshold: 100`, a line that finds a slot
/// taken is dropped, so with the writer stuck every request is answered without waiting (the
/// file still unread), and each line is either in the file or counted dropped.
///
/// Catches: the configured threshold replaced by the lossless default (`lossless_by_default`
/// applied to a threshold that was set): the requests then wait for room until the file is
/// read, and no line is dropped.
#[test]
fn a_request_log_appenders_discarding_threshold_drops_lines_instead_of_waiting() {
    let runtime = runtime();
    let dir = tempfile::tempdir().unwrap();
    let (server, metrics, addr, read_end) = serve_into_fifo(
        &runtime,
        dir.path(),
        "      queueSize: 100\n      discardingThreshold: 100\n",
    );
    let requests = client(addr, REQUESTS);
    // Nobody reads the file yet: the requests all finish only if no line waits for room.
    let deadline = Instant::now() + Duration::from_secs(20);
    while !requests.is_finished() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let unread = requests.is_finished();
    // Read the file whatever happened, so that waiting requests (if any) can finish.
    let reader = drain(read_end);
    let answered = requests.join().unwrap();
    runtime.block_on(server.shutdown());
    let lines = reader.join().unwrap();
    assert!(
        unread,
        "the requests waited for room in the request log's queue"
    );
    assert_eq!(answered, REQUESTS);
    assert_eq!(metric(&metrics, "ferrowizard_logging_waited"), 0.0);
    let dropped = metric(&metrics, "ferrowizard_logging_dropped");
    assert!(dropped > 0.0, "no line dropped, {} written", lines.len());
    assert_eq!(
        lines.len() + dropped as usize,
        REQUESTS,
        "{dropped} dropped"
    );
}
