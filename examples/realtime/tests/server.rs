//! `realtime server` as a user runs it: the real binary, real sockets, real files.

mod common;

use std::io::{BufReader, Read};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::{connect, get, sigterm, start, start_with, wait_exit, write_config};

fn config(dir: &Path) -> std::path::PathBuf {
    let path = dir.join("config.yaml");
    let text = format!(
        "server:\n  applicationConnectors:\n    - type: http\n      port: 0\n      bindHost: 127.0.0.1\n  adminConnectors:\n    - type: http\n      port: 0\n      bindHost: 127.0.0.1\n  \
         requestLog:\n    appenders:\n      - type: file\n        currentLogFilename: {}/requests.log\n        archive: false\n\
         logging:\n  level: INFO\n  appenders:\n    - type: file\n      currentLogFilename: {}/app.log\n      archive: false\n",
        dir.display(),
        dir.display()
    );
    std::fs::write(&path, text).unwrap();
    path
}

/// DropWizard's default request-log line (`%h %l %u [%t] "%r" %s %b "%i{Referer}"
/// "%i{User-Agent}" %D`), e.g. `127.0.0.1 - - [30/Nov/2026:11:06:40 +0000] "GET /x HTTP/1.1"
/// 200 81 "-" "ua" 0`, as this test's client sends it.
fn is_combined(line: &str) -> bool {
    static COMBINED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r#"^(?P<host>[0-9a-f.:]+) - - \[\d{2}/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "#,
            r#""(GET|POST|PUT|DELETE|HEAD|OPTIONS|PATCH) /\S* HTTP/1\.1" [1-5]\d{2} (\d+|-) "-" "realtime-test" \d+$"#
        ))
        .expect("the pattern")
    });
    COMBINED
        .captures(line)
        .is_some_and(|c| c["host"].parse::<std::net::IpAddr>().is_ok())
}

#[test]
fn a_hundred_requests_give_a_hundred_request_log_lines() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(&config(dir.path()));
    let mut conn = connect(service.app);
    let mut statuses = Vec::new();
    for i in 0..100 {
        let path = if i % 10 == 9 {
            "/realtime/quotes/NOPE"
        } else {
            "/realtime/quotes/ACME"
        };
        statuses.push(get(&mut conn, path).unwrap());
    }
    assert_eq!(statuses.iter().filter(|s| **s == 200).count(), 90);
    assert_eq!(statuses.iter().filter(|s| **s == 404).count(), 10);
    // The admin side answers and is on loopback.
    assert!(service.admin.ip().is_loopback());
    let mut admin = connect(service.admin);
    assert_eq!(get(&mut admin, "/ping").unwrap(), 200);
    assert_eq!(get(&mut admin, "/healthcheck").unwrap(), 200);
    drop(conn);
    drop(admin);
    sigterm(&service.child);
    let mut service = service;
    let status = wait_exit(&mut service.child);
    assert!(status.success(), "{status:?}");
    let log = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
    let app_lines: Vec<&str> = log.lines().filter(|l| l.contains("/realtime/")).collect();
    assert_eq!(app_lines.len(), 100, "{log}");
    for line in &app_lines {
        assert!(is_combined(line), "not DropWizard's format: {line}");
    }
    assert_eq!(
        log.lines().count(),
        102,
        "the admin requests are logged too"
    );
}

#[test]
fn sigterm_under_load_loses_no_request_log_line() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = start(&config(dir.path()));
    let completed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let (completed, stop, addr) = (completed.clone(), stop.clone(), service.app);
            std::thread::spawn(move || {
                let started = Instant::now();
                // A 20 s load, ended early by the server going away.
                while started.elapsed() < Duration::from_secs(20) && !stop.load(Ordering::Relaxed) {
                    let Ok(s) = TcpStream::connect(addr) else {
                        return;
                    };
                    let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
                    let mut conn = BufReader::new(s);
                    for _ in 0..50 {
                        match get(&mut conn, "/realtime/quotes/GLOBEX") {
                            Ok(_) => completed.fetch_add(1, Ordering::Relaxed),
                            Err(_) => break,
                        };
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    sigterm(&service.child);
    let status = wait_exit(&mut service.child);
    stop.store(true, Ordering::Relaxed);
    for c in clients {
        c.join().unwrap();
    }
    assert!(status.success(), "{status:?}");
    let done = completed.load(Ordering::Relaxed);
    assert!(done > 100, "the load ran ({done} responses)");
    let lines = std::fs::read_to_string(dir.path().join("requests.log"))
        .unwrap()
        .lines()
        .count() as u64;
    assert_eq!(
        lines, done,
        "request-log lines vs responses the clients completed"
    );
}

fn run_and_stop(config: &Path, requests: &[&str]) {
    let mut service = start(config);
    let mut conn = connect(service.app);
    for path in requests {
        get(&mut conn, path).unwrap();
    }
    let mut admin = connect(service.admin);
    get(&mut admin, "/healthcheck").unwrap();
    drop((conn, admin));
    sigterm(&service.child);
    assert!(wait_exit(&mut service.child).success());
}

#[test]
fn excluded_paths_and_the_access_json_layout() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
         requestLog:\n    excludedPaths: [/healthcheck, /realtime/quotes/NOPE*]\n    appenders:\n      - type: file\n        \
         currentLogFilename: DIR/requests.json\n        archive: false\n        layout: {type: access-json}\n\
         logging:\n  appenders: []\n",
    );
    run_and_stop(
        &config,
        &[
            "/realtime/quotes/ACME",
            "/realtime/quotes/NOPE1",
            "/realtime/quotes?x=1",
        ],
    );
    let text = std::fs::read_to_string(dir.path().join("requests.json")).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2, "{text}");
    assert_eq!(lines[0]["uri"], "/realtime/quotes/ACME");
    assert_eq!(lines[0]["status"], 200);
    assert_eq!(lines[0]["method"], "GET");
    assert_eq!(lines[0]["protocol"], "HTTP/1.1");
    assert_eq!(lines[0]["userAgent"], "realtime-test");
    assert!(lines[0]["contentLength"].as_u64().unwrap() > 10);
    // DropWizard's `uri`: the path, without the query.
    assert_eq!(lines[1]["uri"], "/realtime/quotes");
    assert!(lines[1]["requestTime"].is_u64(), "{text}");
}

/// The server's DEBUG events at DEBUG, each request's naming its peer; `org.eclipse.jetty:
/// WARN` quiets them and leaves the application's DEBUG.
///
/// Catches: the logger name not mapped to the server's events, or a request's events without
/// the client's address.
#[test]
fn org_eclipse_jetty_warn_quiets_the_servers_debug_chatter() {
    let dir = tempfile::tempdir().unwrap();
    let chatty = |quiet: bool| {
        format!(
            "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
             requestLog: {{appenders: []}}\nlogging:\n  level: DEBUG\n  loggers: {{{}}}\n  appenders:\n    - type: file\n      \
             currentLogFilename: DIR/app.log\n      archive: false\n      discardingThreshold: 0\n",
            if quiet { "org.eclipse.jetty: WARN" } else { "" }
        )
    };
    let config = write_config(dir.path(), &chatty(false));
    run_and_stop(&config, &["/realtime/quotes/ACME"]);
    let loud = std::fs::read_to_string(dir.path().join("app.log")).unwrap();
    for event in [
        "connection accepted",
        "request received",
        "routed",
        "response written",
        "connection closed",
    ] {
        let found = loud.lines().any(|l| {
            l.starts_with("DEBUG") && l.contains("ferrowizard::server::") && l.contains(event)
        });
        assert!(found, "no {event:?} in:\n{loud}");
    }
    // A request's events name the client's address (the test's own, on 127.0.0.1).
    for event in ["request received", "response written"] {
        assert!(
            loud.lines()
                .any(|l| l.contains(event) && l.contains("peer=127.0.0.1:")),
            "no {event:?} naming its peer in:\n{loud}"
        );
    }
    assert!(
        loud.contains("realtime::quotes: quote requested symbol=ACME"),
        "{loud}"
    );

    std::fs::remove_file(dir.path().join("app.log")).unwrap();
    let config = write_config(dir.path(), &chatty(true));
    run_and_stop(&config, &["/realtime/quotes/ACME"]);
    let quiet = std::fs::read_to_string(dir.path().join("app.log")).unwrap();
    assert!(
        !quiet
            .lines()
            .any(|l| l.starts_with("DEBUG") && l.contains("ferrowizard::server")),
        "{quiet}"
    );
    assert!(
        quiet.contains("realtime::quotes: quote requested symbol=ACME"),
        "the application's DEBUG stays: {quiet}"
    );
}

#[test]
fn an_idle_connection_is_closed_after_idle_timeout() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1, idleTimeout: 500ms}]\n  adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
         requestLog: {appenders: []}\nlogging:\n  appenders: []\n",
    );
    let service = start(&config);
    let mut conn = connect(service.app);
    assert_eq!(get(&mut conn, "/realtime/quotes/ACME").unwrap(), 200);
    // Idle past the timeout: the server closes the connection (EOF), it does not hang.
    std::thread::sleep(Duration::from_millis(1500));
    let mut buf = [0u8; 16];
    let read = conn.get_mut().read(&mut buf);
    assert!(matches!(read, Ok(0)), "expected EOF, got {read:?}");
}

#[test]
fn the_2014_report_configs_run_as_written() {
    // The 2014 DropWizard logging report's before (everything at DEBUG to the console) and
    // after, given only free ports.
    for name in ["before.yaml", "after.yaml"] {
        let config = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("config")
            .join(name);
        let ports = [
            "--set",
            "http.port=0",
            "--set",
            "http.adminPort=0",
            "--set",
            "http.bindHost=127.0.0.1",
        ];
        let mut service = start_with(&config, &ports, &[]);
        let mut conn = connect(service.app);
        assert_eq!(
            get(&mut conn, "/realtime/quotes/ACME").unwrap(),
            200,
            "{name}"
        );
        let mut admin = connect(service.admin);
        assert_eq!(get(&mut admin, "/healthcheck").unwrap(), 200, "{name}");
        drop((conn, admin));
        sigterm(&service.child);
        assert!(wait_exit(&mut service.child).success(), "{name}");
    }
}
