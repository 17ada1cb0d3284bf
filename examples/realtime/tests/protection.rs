//! The server's protections and its edges, through the real `realtime` binary: hostile
//! clients, overload, the long poll held across a shutdown, the answers to bad events, TLS
//! and the errors that stop it from starting.

mod common;

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{
    Serving, connect, fail_to_start, get, raw, request, signal, sigterm, start,
    start_in_process_file, start_with_open_files, status_of, wait_exit, write_config,
};

/// Application and admin connectors on free ports; `server` is added to the `server:`
/// section, the request log goes to `DIR/requests.log`, the application log nowhere.
fn config(dir: &Path, server: &str, rest: &str) -> std::path::PathBuf {
    write_config(
        dir,
        &format!(
            "server:\n{server}  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1, headerReadTimeout: 1s}}]\n  \
             adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  requestLog:\n    appenders:\n      - type: file\n        \
             currentLogFilename: DIR/requests.log\n        archive: false\nlogging:\n  appenders: []\n{rest}"
        ),
    )
}

fn get_close(service: &impl Serving, path: &str) -> String {
    raw(
        service.app(),
        format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The admin side's metrics, as DropWizard's JSON.
fn metrics(service: &impl Serving) -> serde_json::Value {
    let mut admin = connect(service.admin());
    json(
        &request(&mut admin, "GET", "/metrics", &[], b"")
            .unwrap()
            .body,
    )
}

/// Requests being handled right now.
fn active(service: &impl Serving) -> f64 {
    metrics(service)["gauges"]["ferrowizard.requests.active"]["value"]
        .as_f64()
        .unwrap_or(-1.0)
}

/// Waits (at most 10 s) until `n` requests are being handled.
fn wait_for_active(service: &impl Serving, n: f64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while active(service) != n {
        assert!(
            Instant::now() < deadline,
            "{n} requests never in flight at once"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The `%b` (bytes sent) of every request-log line of a 200 to `GET target`.
fn bytes_logged(log: &str, target: &str) -> Vec<usize> {
    let request = format!("\"GET {target} HTTP/1.1\" 200 ");
    log.lines()
        .filter_map(|l| l.split_once(&request))
        .map(|(_, rest)| {
            rest.split(' ')
                .next()
                .and_then(|b| b.parse().ok())
                .unwrap_or_else(|| panic!("no byte count after {request}{rest}"))
        })
        .collect()
}

/// Stops the service as SIGTERM does and returns its request log.
fn stop(service: impl Serving, dir: &Path) -> String {
    service.shut_down();
    std::fs::read_to_string(dir.join("requests.log")).unwrap()
}

#[test]
fn hostile_clients_get_errors_and_realtime_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(&config(dir.path(), "", ""));
    // 1 MiB of headers (maxRequestHeaderSize is 8 KiB): 431.
    let big = format!(
        "GET /realtime/quotes/ACME HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\n\r\n",
        "a".repeat(1 << 20)
    );
    assert_eq!(status_of(&raw(service.app, big.as_bytes())), 431);
    // Garbage request lines: 400, and the server serves on.
    for garbage in [
        &b"HELLO THERE\r\n\r\n"[..],
        b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n",
        b"GET / HTTP/9.9\r\n\r\n",
    ] {
        assert_eq!(status_of(&raw(service.app, garbage)), 400, "{garbage:?}");
    }
    assert_eq!(
        status_of(&get_close(&service, "/realtime/quotes/ACME")),
        200
    );

    // Slowloris: 500 connections that send half a request head and wait.
    let loris: Vec<TcpStream> = (0..500)
        .map(|_| {
            let mut s = TcpStream::connect(service.app).unwrap();
            s.write_all(b"GET /realtime/quotes/ACME HTTP/1.1\r\nHost: t\r\nX-Slow: ")
                .unwrap();
            s
        })
        .collect();
    // A normal client is still answered, each request within its own 5 s timeout.
    let mut conn = connect(service.app);
    conn.get_ref()
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    for _ in 0..20 {
        assert_eq!(get(&mut conn, "/realtime/quotes/ACME").unwrap(), 200);
    }
    // After headerReadTimeout (1 s, noticed up to a quarter late) the server lets go of them.
    std::thread::sleep(Duration::from_millis(2500));
    let held = loris
        .into_iter()
        .filter(|s| {
            let mut s = s;
            s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let mut buf = [0u8; 512];
            // EOF, an answer or a reset: let go. A read that times out: still held.
            matches!(s.read(&mut buf), Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut))
        })
        .count();
    assert_eq!(held, 0, "half-open connections held past headerReadTimeout");
    assert_eq!(get(&mut conn, "/realtime/quotes/ACME").unwrap(), 200);
    drop(conn);
    let log = stop(service, dir.path());
    // Every request served has its line.
    let served = log.lines().filter(|l| l.contains("\" 200 ")).count();
    assert_eq!(served, 22, "{log}");
}

/// The operator's case: the open-file limit at 128 and 300 idle connections held open. A new
/// client is still answered within its 5 s timeout; the failed accepts are counted and logged
/// (one WARN a second at most); idle connections gave way, the oldest first.
///
/// Catches: a server that waits for idle connections to leave by themselves (the client times
/// out), accept errors logged on every failure or not at all, and an admin side left without
/// descriptors once the burst is over.
#[test]
fn out_of_file_descriptors_idle_connections_give_way_to_new_clients() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
         adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  requestLog: {appenders: []}\n\
         logging:\n  level: WARN\n  appenders:\n    - {type: file, currentLogFilename: DIR/app.log, \
         archive: false, discardingThreshold: 0}\n",
    );
    let mut service = start_with_open_files(&config, 128);
    let started = Instant::now();
    let mut idle: Vec<TcpStream> = (0..300)
        .map(|_| TcpStream::connect(service.app).unwrap())
        .collect();
    let mut client = connect(service.app);
    client
        .get_ref()
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert_eq!(get(&mut client, "/realtime/quotes/ACME").unwrap(), 200);
    // The oldest idle connection was closed to make room.
    idle[0]
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    assert!(
        matches!(idle[0].read(&mut [0u8; 16]), Ok(0) | Err(_)),
        "the oldest idle connection is still open"
    );
    // Once the burst is over, connections idle for a second are closed down to 80% of the
    // limit: the admin side finds descriptors again.
    let deadline = Instant::now() + Duration::from_secs(10);
    let m = loop {
        let answered = TcpStream::connect(service.admin).ok().and_then(|s| {
            s.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
            let mut c = BufReader::new(s);
            request(&mut c, "GET", "/metrics", &[], b"").ok()
        });
        match answered {
            Some(r) if r.status == 200 => break json(&r.body),
            _ => {
                assert!(Instant::now() < deadline, "the admin side never answered");
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    };
    let count = |name: &str| {
        m["counters"][format!("ferrowizard.connections.{name}.application[0]")]["count"]
            .as_u64()
            .unwrap_or_else(|| panic!("no {name}: {m}"))
    };
    assert!(count("acceptErrors") >= 1, "{m}");
    assert!(count("closedIdle") >= 1, "{m}");
    drop(idle);
    sigterm(&service.child);
    assert!(wait_exit(&mut service.child).success());
    let log = std::fs::read_to_string(dir.path().join("app.log")).unwrap();
    let warnings: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("accept failed"))
        .collect();
    let seconds = started.elapsed().as_secs();
    assert!(
        !warnings.is_empty() && warnings.len() as u64 <= seconds + 2,
        "{} WARN lines in {seconds} s:\n{log}",
        warnings.len()
    );
    assert!(warnings[0].contains("Too many open files"), "{log}");
}

#[test]
fn overload_gets_503_at_once_while_long_polls_hold_every_slot() {
    let dir = tempfile::tempdir().unwrap();
    let service = start_in_process_file(&config(
        dir.path(),
        "  maxThreads: 4\n  maxQueuedRequests: 0\n",
        "",
    ));
    let mut admin = connect(service.admin);
    let paused = request(&mut admin, "POST", "/tasks/feed?action=pause", &[], b"").unwrap();
    assert_eq!(paused.status, 200, "{}", paused.body);
    // Four long polls wait for a price move that does not come: every slot is taken.
    let app = service.app;
    let polls: Vec<_> = (0..4)
        .map(|_| {
            std::thread::spawn(move || {
                let mut conn = connect(app);
                request(&mut conn, "GET", "/realtime/quotes/ACME/next", &[], b"").unwrap()
            })
        })
        .collect();
    wait_for_active(&service, 4.0);
    // Six more are refused at once (the polls would hold them for 30 s), and said why.
    for _ in 0..6 {
        let asked = Instant::now();
        let response = get_close(&service, "/realtime/quotes/ACME");
        assert_eq!(status_of(&response), 503, "{response}");
        assert!(
            asked.elapsed() < Duration::from_secs(5),
            "a 503 after {:?}",
            asked.elapsed()
        );
    }
    let resumed = request(&mut admin, "POST", "/tasks/feed?action=resume", &[], b"").unwrap();
    assert_eq!(resumed.status, 200, "{}", resumed.body);
    // The next move answers the polls; then the server serves as before.
    for poll in polls {
        let response = poll.join().unwrap();
        assert_eq!(response.status, 200, "{}", response.body);
        assert_eq!(json(&response.body)["symbol"], "ACME");
    }
    assert_eq!(
        status_of(&get_close(&service, "/realtime/quotes/ACME")),
        200
    );
    let m = metrics(&service);
    assert_eq!(
        m["counters"]["ferrowizard.overload.rejected.application[0]"]["count"], 6,
        "{m}"
    );
    drop(admin);
    let log = stop(service, dir.path());
    let count = |needle: &str| log.lines().filter(|l| l.contains(needle)).count();
    assert_eq!(
        count("\"GET /realtime/quotes/ACME HTTP/1.1\" 503 "),
        6,
        "{log}"
    );
    assert_eq!(
        count("\"GET /realtime/quotes/ACME/next HTTP/1.1\" 200 "),
        4,
        "{log}"
    );
}

/// A request in flight at SIGINT is answered and logged before the process exits 0.
///
/// The feed is paused and long polls wait 8 s (`quotes.longPoll`), so the poll can end only
/// by its own timeout: it is in flight when the signal comes however slow the machine, and
/// the assertions about the time in between have 8 s of margin, not a tick's.
#[test]
fn sigint_lets_a_long_poll_in_flight_finish_and_logs_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = start(&config(dir.path(), "", "quotes:\n  longPoll: 8s\n"));
    let mut admin = connect(service.admin);
    let paused = request(&mut admin, "POST", "/tasks/feed?action=pause", &[], b"").unwrap();
    assert_eq!(paused.status, 200, "{}", paused.body);
    drop(admin);
    let app = service.app;
    let asked = Instant::now();
    let poll = std::thread::spawn(move || {
        let mut conn = connect(app);
        request(&mut conn, "GET", "/realtime/quotes/GLOBEX/next", &[], b"").unwrap()
    });
    wait_for_active(&service, 1.0);
    signal(&service.child, "INT");
    // It stops accepting at once, while the poll is still waiting.
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(app).is_ok() {
        assert!(
            Instant::now() < deadline,
            "still accepting 5 s after SIGINT"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!poll.is_finished(), "the poll ended before its long poll");
    let response = poll.join().unwrap();
    assert_eq!(response.status, 204, "{}", response.body);
    assert!(
        asked.elapsed() >= Duration::from_secs(8),
        "answered before the long poll's end"
    );
    assert!(wait_exit(&mut service.child).success());
    // The request in flight was answered and logged, with the bytes the client received.
    let log = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("\"GET /realtime/quotes/GLOBEX/next HTTP/1.1\" 204 "))
        .collect();
    assert_eq!(lines.len(), 1, "{log}");
    assert_eq!(response.length, 0);
}

#[test]
fn quotes_move_and_bad_events_get_400_with_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let service = start_in_process_file(&config(dir.path(), "", ""));
    let mut conn = connect(service.app);
    let mut get_json = |path: &str| {
        let r = request(&mut conn, "GET", path, &[], b"").unwrap();
        (r.status, r.body, r.length)
    };
    let (status, first, _) = get_json("/realtime/quotes/ACME");
    assert_eq!(status, 200, "{first}");
    let (status, next, _) = get_json("/realtime/quotes/ACME/next");
    assert_eq!(status, 200, "{next}");
    let (first, next) = (json(&first), json(&next));
    assert!(
        next["updatedAt"].as_u64().unwrap() > first["updatedAt"].as_u64().unwrap(),
        "the quote did not move: {first} then {next}"
    );
    assert_eq!(get_json("/realtime/quotes/NOPE/next").0, 404);
    let (status, all, _) = get_json("/realtime/quotes");
    assert_eq!(
        (status, json(&all).as_array().map(Vec::len)),
        (200, Some(4))
    );

    let post = |body: &str| {
        let mut conn = connect(service.app);
        let r = request(
            &mut conn,
            "POST",
            "/realtime/events",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
        .unwrap();
        (r.status, r.body)
    };
    for (body, reason) in [
        ("{not json", "invalid event"),
        (
            r#"{"symbol": "ACME", "kind": "trade"}"#,
            "missing field `quantity`",
        ),
        (
            r#"{"symbol": "ACME", "kind": "trade", "quantity": 5, "colour": "red"}"#,
            "unknown field `colour`",
        ),
        (
            r#"{"symbol": "ACME", "kind": "trade", "quantity": 0, "price": 1.5}"#,
            "quantity must be 1 to 1000000, not 0",
        ),
        (
            r#"{"symbol": "ACME", "kind": "trade", "quantity": 5}"#,
            "a trade needs a price above 0",
        ),
        (
            r#"{"symbol": "ACME", "kind": "trade", "quantity": 5, "price": -2}"#,
            "a trade needs a price above 0",
        ),
        (
            r#"{"symbol": "ACME", "kind": "rumour", "quantity": 5}"#,
            "kind must be trade or alert, not \"rumour\"",
        ),
    ] {
        let (status, answer) = post(body);
        assert_eq!(status, 400, "{body} -> {answer}");
        let message = json(&answer)["error"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(message.contains(reason), "{body} -> {message}");
    }
    let (status, answer) = post(r#"{"symbol": "NOPE", "kind": "alert", "quantity": 5}"#);
    assert_eq!(status, 404, "{answer}");
    let (status, answer) =
        post(r#"{"symbol": "acme", "kind": "trade", "quantity": 7, "price": 101.5}"#);
    assert_eq!(status, 202, "{answer}");
    assert_eq!(json(&answer)["id"], 1);
    let mut conn = connect(service.app);
    let after = request(&mut conn, "GET", "/realtime/quotes/ACME", &[], b"").unwrap();
    assert_eq!(json(&after.body)["volume"], 7);
    // The request log counts the bytes each client received: plain, and gzipped when the
    // client accepts it (the list is above minimumEntitySize, one quote below).
    let gzipped = request(
        &mut conn,
        "GET",
        "/realtime/quotes",
        &[("Accept-Encoding", "gzip")],
        b"",
    )
    .unwrap();
    assert_eq!(gzipped.header("content-encoding"), Some("gzip"));
    let plain = request(
        &mut conn,
        "GET",
        "/realtime/quotes/UMBRELLA",
        &[("Accept-Encoding", "gzip")],
        b"",
    )
    .unwrap();
    assert_eq!(plain.header("content-encoding"), None);
    drop(conn);
    let log = stop(service, dir.path());
    assert_eq!(
        bytes_logged(&log, "/realtime/quotes/UMBRELLA"),
        vec![plain.length],
        "{log}"
    );
    assert_eq!(
        bytes_logged(&log, "/realtime/quotes").last(),
        Some(&gzipped.length),
        "{log}"
    );
    assert!(
        gzipped.length < json(&all).to_string().len(),
        "not compressed"
    );
}

/// A self-signed certificate for `localhost`, its PEM files in `dir`.
fn certificate(dir: &Path) -> rcgen::CertifiedKey<rcgen::KeyPair> {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), cert.signing_key.serialize_pem()).unwrap();
    cert
}

fn https_config(dir: &Path, port: u16, cert: &str) -> std::path::PathBuf {
    write_config(
        dir,
        &format!(
            "server:\n  applicationConnectors:\n    - type: https\n      port: {port}\n      bindHost: 127.0.0.1\n      \
             certPath: {cert}\n      keyPath: DIR/key.pem\n  adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
             requestLog: {{appenders: []}}\nlogging:\n  appenders: []\n"
        ),
    )
}

/// `GET path` over TLS to `addr`, trusting only `cert` (made for `localhost`): what came
/// back, up to the server's close.
fn tls_get(
    addr: std::net::SocketAddr,
    cert: &rcgen::CertifiedKey<rcgen::KeyPair>,
    path: &str,
) -> String {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.cert.der().clone()).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = rustls::ClientConnection::new(Arc::new(client), name).unwrap();
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut stream = rustls::StreamOwned::new(tls, tcp);
    stream
        .write_all(
            format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
                .as_bytes(),
        )
        .unwrap();
    let mut out = Vec::new();
    // A server may close without TLS's close_notify; what was read counts.
    let _ = stream.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

#[test]
fn an_https_connector_serves_with_a_test_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let cert = certificate(dir.path());
    let service = start_in_process_file(&https_config(dir.path(), 0, "DIR/cert.pem"));
    assert!(
        service.admin.ip().is_loopback(),
        "admin on {}",
        service.admin
    );
    let text = tls_get(service.app, &cert, "/realtime/quotes/ACME");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("\"symbol\":\"ACME\""), "{text}");
    // Plain HTTP on the TLS port is not served.
    assert_ne!(
        status_of(&get_close(&service, "/realtime/quotes/ACME")),
        200
    );
}

/// An admin connector of `type: https` serves the admin side over TLS, and nothing to
/// plain HTTP, while the application connector beside it (`type: http`) stays plain.
///
/// Catches: an admin connector's `type` ignored (the admin side served as plain HTTP, or its
/// TLS acceptor lost on the way to the admin connectors' runtime).
#[test]
fn an_https_admin_connector_serves_with_a_test_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let cert = certificate(dir.path());
    let config = write_config(
        dir.path(),
        "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
         adminConnectors:\n    - type: https\n      port: 0\n      bindHost: 127.0.0.1\n      \
         certPath: DIR/cert.pem\n      keyPath: DIR/key.pem\n  requestLog: {appenders: []}\n\
         logging:\n  appenders: []\n",
    );
    let service = start_in_process_file(&config);
    let text = tls_get(service.admin, &cert, "/ping");
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    assert!(text.contains("pong"), "{text}");
    // Plain HTTP on the admin's TLS port is not served; the application's port is plain.
    let plain = raw(
        service.admin,
        b"GET /ping HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
    );
    assert_ne!(status_of(&plain), 200, "{plain}");
    assert_eq!(
        status_of(&get_close(&service, "/realtime/quotes/ACME")),
        200
    );
}

#[test]
fn startup_errors_are_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    certificate(dir.path());
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    std::fs::write(dir.path().join("garbage.pem"), "not a certificate\n").unwrap();
    for (port, cert, says) in [
        (
            port,
            "DIR/cert.pem",
            format!("cannot listen on 127.0.0.1:{port}"),
        ),
        (0, "DIR/garbage.pem", "garbage.pem".to_owned()),
        (0, "DIR/missing.pem", "missing.pem".to_owned()),
    ] {
        let (status, stderr) = fail_to_start(&https_config(dir.path(), port, cert));
        assert_eq!(status.code(), Some(1), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "not one line: {stderr}");
        assert!(stderr.contains(&says), "{stderr:?} does not name {says:?}");
    }
    drop(taken);
}
