//! The `server:` keys that shape what a client sees, each shown changing it on the real
//! binary: `rootPath`, `useServerHeader`, `useDateHeader`, `useForwardedHeaders` with
//! `trustedProxies`, `gzip`'s `compressedMimeTypes`, `includedMethods` and
//! `minimumEntitySize`, and each kind of connector's `idleTimeout` and `headerReadTimeout`,
//! kept to within bounds on both sides.

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use common::{
    Response, Serving, connect, request, sigterm, start, start_in_process_file, wait_exit,
    write_config,
};

/// A config with `server` (indented under `server:`, after `type: TYPE`) and `connector`
/// (indented under the application connector), the request log to `DIR/requests.log`.
fn config(dir: &Path, kind: &str, server: &str, connector: &str) -> std::path::PathBuf {
    let application =
        format!("    - type: http\n      port: 0\n      bindHost: 127.0.0.1\n{connector}");
    let connectors = match kind {
        "simple" => format!(
            "  connector:\n{}",
            application
                .replacen("    - type", "    type", 1)
                .replace("\n      ", "\n    ")
        ),
        _ => format!(
            "  applicationConnectors:\n{application}  adminConnectors:\n    - type: http\n      port: 0\n      bindHost: 127.0.0.1\n"
        ),
    };
    write_config(
        dir,
        &format!(
            "server:\n  type: {kind}\n{connectors}{server}  requestLog:\n    appenders:\n      - type: file\n        currentLogFilename: DIR/requests.log\n        archive: false\n\
             logging:\n  level: WARN\n"
        ),
    )
}

fn get(service: &impl Serving, path: &str, headers: &[(&str, &str)]) -> Response {
    let mut c = connect(service.app());
    request(&mut c, "GET", path, headers, b"").unwrap()
}

/// Stops the service and returns its request-log lines.
fn stop(service: impl Serving, dir: &Path) -> Vec<String> {
    service.shut_down();
    std::fs::read_to_string(dir.join("requests.log"))
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn root_path_moves_the_application_not_the_admin_side() {
    let dir = tempfile::tempdir().unwrap();
    let service = start_in_process_file(&config(dir.path(), "default", "  rootPath: /api/*\n", ""));
    assert_eq!(get(&service, "/api/realtime/quotes/ACME", &[]).status, 200);
    assert_eq!(get(&service, "/realtime/quotes/ACME", &[]).status, 404);
    let mut admin = connect(service.admin);
    assert_eq!(
        request(&mut admin, "GET", "/ping", &[], b"")
            .unwrap()
            .status,
        200
    );
    let metrics = request(&mut admin, "GET", "/metrics", &[], b"")
        .unwrap()
        .body;
    assert!(
        metrics.contains(r#""ferrowizard.routes.GET./api/realtime/quotes/{symbol}""#),
        "{metrics}"
    );
    let lines = stop(service, dir.path());
    assert!(
        lines[0].contains("\"GET /api/realtime/quotes/ACME HTTP/1.1\" 200"),
        "{lines:?}"
    );

    // The simple server: under its application context path, then the root path.
    let dir = tempfile::tempdir().unwrap();
    let service = start_in_process_file(&config(dir.path(), "simple", "  rootPath: /api\n", ""));
    assert_eq!(
        get(&service, "/application/api/realtime/quotes/ACME", &[]).status,
        200
    );
    assert_eq!(
        get(&service, "/application/realtime/quotes/ACME", &[]).status,
        404
    );
    assert_eq!(get(&service, "/admin/ping", &[]).status, 200);
    drop(service);
}

#[test]
fn server_and_date_headers_follow_the_connector() {
    let dir = tempfile::tempdir().unwrap();
    let service = start_in_process_file(&config(dir.path(), "default", "", ""));
    let r = get(&service, "/realtime/quotes/ACME", &[]);
    assert_eq!(
        (r.header("server"), r.header("date").is_some()),
        (None, true)
    );
    drop(service);

    let service = start_in_process_file(&config(
        dir.path(),
        "default",
        "",
        "      useServerHeader: true\n      useDateHeader: false\n",
    ));
    for path in ["/realtime/quotes/ACME", "/nowhere"] {
        let r = get(&service, path, &[]);
        let server = r.header("server").unwrap_or_default();
        assert!(
            server.starts_with("ferrowizard/"),
            "{path}: {:?}",
            r.headers
        );
        assert_eq!(r.header("date"), None, "{path}");
    }
    drop(service);
}

/// The client address the request log shows for each request's `X-Forwarded-For` (or
/// `Forwarded`) header, sent from 127.0.0.1.
fn logged_clients(connector: &str, requests: &[(&str, &str)]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let service = start_in_process_file(&config(dir.path(), "default", "", connector));
    for (name, value) in requests {
        assert_eq!(
            get(&service, "/realtime/quotes/ACME", &[(name, value)]).status,
            200
        );
    }
    stop(service, dir.path())
        .iter()
        .map(|l| l.split(' ').next().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn forwarded_headers_name_the_client_only_when_trusted() {
    let requests = [
        ("X-Forwarded-For", "203.0.113.7, 10.0.0.9"),
        ("Forwarded", "for=\"[2001:db8::7]:4711\";proto=https"),
        ("X-Forwarded-For", "not an address"),
    ];
    // Off (DropWizard's default): the peer, whatever the headers say.
    assert_eq!(
        logged_clients("", &requests),
        ["127.0.0.1", "127.0.0.1", "127.0.0.1"]
    );
    // On, every peer trusted: the first address named; a malformed header is ignored.
    assert_eq!(
        logged_clients("      useForwardedHeaders: true\n", &requests),
        ["203.0.113.7", "2001:db8::7", "127.0.0.1"]
    );
    // On, trusting only a network the peer is not in: a spoofed header changes nothing.
    assert_eq!(
        logged_clients(
            "      useForwardedHeaders: true\n      trustedProxies: [10.0.0.0/8]\n",
            &requests
        ),
        ["127.0.0.1", "127.0.0.1", "127.0.0.1"]
    );
    // On, trusting the peer and 10.0.0.0/8: the last address that is not a trusted proxy.
    assert_eq!(
        logged_clients(
            "      useForwardedHeaders: true\n      trustedProxies: [127.0.0.1, 10.0.0.0/8]\n",
            &[("X-Forwarded-For", "6.6.6.6, 203.0.113.7, 10.0.0.9")]
        ),
        ["203.0.113.7"]
    );
}

fn encoding(service: &impl Serving, method: &str, path: &str) -> Option<String> {
    let mut c = connect(service.app());
    let body: &[u8] = if method == "POST" {
        br#"{"symbol":"ACME","kind":"trade","quantity":1,"price":10}"#
    } else {
        b""
    };
    let r = request(
        &mut c,
        method,
        path,
        &[
            ("Accept-Encoding", "gzip"),
            ("Content-Type", "application/json"),
        ],
        body,
    )
    .unwrap();
    assert!(r.status < 300, "{method} {path}: {}", r.status);
    r.header("content-encoding").map(str::to_owned)
}

#[test]
fn gzip_compresses_the_listed_types_and_methods_above_the_minimum_size() {
    let dir = tempfile::tempdir().unwrap();
    let with = |gzip: &str| start_in_process_file(&config(dir.path(), "default", gzip, ""));
    let gzip = Some("gzip".to_owned());

    // Defaults: GET responses of 256 bytes and more (every quote), not a small one.
    let service = with("");
    assert_eq!(encoding(&service, "GET", "/realtime/quotes"), gzip);
    assert_eq!(encoding(&service, "GET", "/realtime/quotes/ACME"), None);
    assert_eq!(encoding(&service, "POST", "/realtime/events"), None);
    drop(service);

    // A smaller minimum, and POST included: both compressed.
    let service = with("  gzip:\n    minimumEntitySize: 1B\n    includedMethods: [GET, POST]\n");
    assert_eq!(encoding(&service, "GET", "/realtime/quotes/ACME"), gzip);
    assert_eq!(encoding(&service, "POST", "/realtime/events"), gzip);
    drop(service);

    // Only text/plain listed: JSON is sent as it is.
    let service =
        with("  gzip:\n    minimumEntitySize: 1B\n    compressedMimeTypes: [text/plain]\n");
    assert_eq!(encoding(&service, "GET", "/realtime/quotes"), None);
    drop(service);
    let service = with("  gzip:\n    compressedMimeTypes: [application/json]\n");
    assert_eq!(encoding(&service, "GET", "/realtime/quotes"), gzip);
    drop(service);

    // A minimum above every response: nothing compressed.
    let service = with("  gzip:\n    minimumEntitySize: 1MiB\n");
    assert_eq!(encoding(&service, "GET", "/realtime/quotes"), None);
    drop(service);

    // Off.
    let service = with("  gzip:\n    enabled: false\n");
    assert_eq!(encoding(&service, "GET", "/realtime/quotes"), None);
    drop(service);
}

#[test]
fn each_request_log_appender_writes_its_time_zone() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
         adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  requestLog:\n    appenders:\n      \
         - {type: file, currentLogFilename: DIR/requests.log, archive: false}\n      \
         - {type: file, currentLogFilename: DIR/west.log, archive: false, timeZone: GMT-02:00}\n      \
         - {type: file, currentLogFilename: DIR/east.log, archive: false, timeZone: '+05:30'}\n\
         logging:\n  level: WARN\n",
    );
    let service = start_in_process_file(&config);
    for _ in 0..3 {
        assert_eq!(get(&service, "/realtime/quotes/ACME", &[]).status, 200);
    }
    let utc = stop(service, dir.path());
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(utc.len(), 3);
    assert!(utc.iter().all(|l| l.contains(" +0000] ")), "{utc:?}");
    let west = read("west.log");
    assert_eq!(
        west.lines().filter(|l| l.contains(" -0200] ")).count(),
        3,
        "{west}"
    );
    let east = read("east.log");
    assert_eq!(
        east.lines().filter(|l| l.contains(" +0530] ")).count(),
        3,
        "{east}"
    );
}

/// The status of a GET whose `X-Pad` header is `pad` bytes long.
fn padded(service: &impl Serving, pad: usize) -> u16 {
    let pad = "a".repeat(pad);
    let response = common::raw(
        service.app(),
        format!("GET /realtime/quotes/ACME HTTP/1.1\r\nHost: t\r\nX-Pad: {pad}\r\nConnection: close\r\n\r\n")
            .as_bytes(),
    );
    common::status_of(&response)
}

#[test]
fn max_request_header_size_sets_where_431_begins() {
    let dir = tempfile::tempdir().unwrap();
    // The default, 8 KiB.
    let service = start_in_process_file(&config(dir.path(), "default", "", ""));
    assert_eq!(padded(&service, 6 * 1024), 200);
    assert_eq!(padded(&service, 12 * 1024), 431);
    drop(service);
    let service = start_in_process_file(&config(
        dir.path(),
        "default",
        "",
        "      maxRequestHeaderSize: 32KiB\n",
    ));
    assert_eq!(padded(&service, 12 * 1024), 200);
    assert_eq!(padded(&service, 40 * 1024), 431);
    drop(service);
}

/// The request log's lines under `layout: {type: access-json, ...}` written as `layout`.
/// A request: method, path, headers.
type Sent<'a> = (&'a str, &'a str, &'a [(&'a str, &'a str)]);

fn access_json_lines(layout: &str, requests: &[Sent<'_>]) -> String {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
             adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  requestLog:\n    appenders:\n      \
             - type: file\n        currentLogFilename: DIR/requests.log\n        archive: false\n        \
             timeZone: GMT-02:00\n        layout: {layout}\n\
             logging:\n  level: WARN\n"
        ),
    );
    let service = start_in_process_file(&config);
    for (method, path, headers) in requests {
        let mut c = connect(service.app);
        let body: &[u8] = if *method == "POST" {
            br#"{"symbol":"ACME","kind":"trade","quantity":1,"price":10}"#
        } else {
            b""
        };
        request(&mut c, method, path, headers, body).unwrap();
    }
    service.shut_down();
    std::fs::read_to_string(dir.path().join("requests.log")).unwrap()
}

#[test]
fn access_json_writes_the_fields_names_and_headers_it_is_told() {
    // DropWizard's defaults: one object a line, its default fields.
    let text = access_json_lines(
        "{type: access-json}",
        &[("GET", "/realtime/quotes/ACME?x=1", &[])],
    );
    let line: serde_json::Value = serde_json::from_str(text.trim_end()).unwrap();
    let keys: Vec<&str> = line
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "timestamp",
            "remoteAddress",
            "requestTime",
            "uri",
            "status",
            "method",
            "protocol",
            "contentLength",
            "userAgent"
        ]
    );
    assert!(
        line["timestamp"].is_u64() && text.ends_with("}\n"),
        "{text}"
    );

    // Every option.
    let text = access_json_lines(
        "{type: access-json, timestampFormat: 'yyyy-MM-dd HH:mm Z', appendLineSeparator: false, \
         includes: [timestamp, method, requestUrl, serverName, requestContentLength, statusCode], \
         requestHeaders: [X-Request-Id], responseHeaders: [Content-Type], \
         customFieldNames: {method: verb, headers: requestHeaders}, additionalFields: {service: realtime, status: fixed}}",
        &[
            (
                "GET",
                "/realtime/quotes/ACME?x=1",
                &[("X-Request-Id", "abc"), ("X-Request-Id", "def")],
            ),
            (
                "POST",
                "/realtime/events",
                &[("Content-Type", "application/json")],
            ),
        ],
    );
    // No line separator: the objects follow each other.
    assert!(!text.contains('\n'), "{text}");
    let objects: Vec<serde_json::Value> = serde_json::Deserializer::from_str(&text)
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(objects.len(), 2, "{text}");
    let first = &objects[0];
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    // Included fields in order, a renamed one, the headers, then the additional fields (which
    // replace a field of the same name).
    assert_eq!(
        keys,
        [
            "timestamp",
            "url",
            "verb",
            "serverName",
            "requestHeaders",
            "responseHeaders",
            "service",
            "status"
        ],
        "{first}"
    );
    assert!(
        first["timestamp"].as_str().unwrap().ends_with(" -0200"),
        "{first}"
    );
    assert_eq!(first["verb"], "GET");
    // The test client's `Host: test`.
    assert_eq!(first["url"], "http://test/realtime/quotes/ACME");
    assert_eq!(first["serverName"], "test");
    assert_eq!(
        first["requestHeaders"],
        serde_json::json!({"x-request-id": "abc, def"})
    );
    assert_eq!(
        first["responseHeaders"],
        serde_json::json!({"content-type": "application/json"})
    );
    assert_eq!(
        (&first["service"], &first["status"]),
        (&serde_json::json!("realtime"), &serde_json::json!("fixed"))
    );
    let second = &objects[1];
    assert_eq!(second["verb"], "POST");
    assert_eq!(second["requestContentLength"], 56, "{second}");
    // No X-Request-Id sent: no request headers field.
    assert!(second.get("requestHeaders").is_none(), "{second}");
}

#[test]
fn context_paths_move_the_application_and_the_admin_side() {
    let dir = tempfile::tempdir().unwrap();
    let service = start_in_process_file(&config(
        dir.path(),
        "default",
        "  applicationContextPath: /app\n  adminContextPath: /ops\n",
        "",
    ));
    assert_eq!(get(&service, "/app/realtime/quotes/ACME", &[]).status, 200);
    assert_eq!(get(&service, "/realtime/quotes/ACME", &[]).status, 404);
    let mut admin = connect(service.admin);
    assert_eq!(
        request(&mut admin, "GET", "/ops/ping", &[], b"")
            .unwrap()
            .status,
        200
    );
    assert_eq!(
        request(&mut admin, "GET", "/ping", &[], b"")
            .unwrap()
            .status,
        404
    );
}

#[test]
fn allowed_methods_answer_405_to_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let post = |service: &common::InProcess| {
        let mut c = connect(service.app);
        request(
            &mut c,
            "POST",
            "/realtime/events",
            &[("Content-Type", "application/json")],
            br#"{"symbol":"ACME","kind":"trade","quantity":1,"price":10}"#,
        )
        .unwrap()
        .status
    };
    let service = start_in_process_file(&config(dir.path(), "default", "", ""));
    assert_eq!(post(&service), 202);
    drop(service);
    let service = start_in_process_file(&config(
        dir.path(),
        "default",
        "  allowedMethods: [GET, HEAD]\n",
        "",
    ));
    assert_eq!(post(&service), 405);
    assert_eq!(get(&service, "/realtime/quotes/ACME", &[]).status, 200);
}

/// A long poll in flight when SIGTERM comes: answered (204 once `quotes.longPoll` passes)
/// within `shutdownGracePeriod`, cut when the grace period ends first.
#[test]
fn shutdown_grace_period_bounds_how_long_a_request_in_flight_may_finish() {
    for (grace, answered) in [("1s", false), ("20s", true)] {
        let dir = tempfile::tempdir().unwrap();
        let text = std::fs::read_to_string(config(
            dir.path(),
            "default",
            &format!("  shutdownGracePeriod: {grace}\n"),
            "",
        ))
        .unwrap();
        let path = write_config(dir.path(), &format!("{text}quotes:\n  longPoll: 3s\n"));
        let mut service = start(&path);
        let mut admin = connect(service.admin);
        let paused = request(&mut admin, "POST", "/tasks/feed?action=pause", &[], b"").unwrap();
        assert_eq!(paused.status, 200, "{}", paused.body);
        let app = service.app;
        let poll = std::thread::spawn(move || {
            let mut c = connect(app);
            request(&mut c, "GET", "/realtime/quotes/ACME/next", &[], b"").map(|r| r.status)
        });
        std::thread::sleep(std::time::Duration::from_millis(500));
        sigterm(&service.child);
        let polled = poll.join().unwrap();
        assert!(wait_exit(&mut service.child).success());
        match answered {
            true => assert_eq!(polled.unwrap(), 204, "grace {grace}"),
            false => assert!(polled.is_err(), "grace {grace}: {polled:?}"),
        }
    }
}

/// The admin connector's `port`, `bindHost`, `useServerHeader` and `useDateHeader`, each set
/// away from its default: it listens on that port of 127.0.0.2 (its default host is
/// 127.0.0.1), sends `Server` and no `Date`; the application connector keeps its defaults.
///
/// Catches: any of the four ignored on admin connectors (another port, 127.0.0.1, no
/// `Server` header, a `Date` header), or taken from the application connector's.
#[test]
fn an_admin_connector_takes_its_own_settings() {
    let dir = tempfile::tempdir().unwrap();
    let host: std::net::IpAddr = "127.0.0.2".parse().unwrap();
    let port = std::net::TcpListener::bind((host, 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let text = format!(
        "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
         adminConnectors:\n    - type: http\n      port: {port}\n      bindHost: {host}\n      \
         useServerHeader: true\n      useDateHeader: false\n  requestLog: {{appenders: []}}\n\
         logging:\n  level: WARN\n"
    );
    let service = start(&write_config(dir.path(), &text));
    assert_eq!(service.admin, SocketAddr::new(host, port));
    let mut admin = connect(service.admin);
    let r = request(&mut admin, "GET", "/ping", &[], b"").unwrap();
    assert!(
        r.header("server")
            .unwrap_or_default()
            .starts_with("ferrowizard/")
    );
    assert_eq!(r.header("date"), None);
    // The application connector keeps its defaults.
    let r = get(&service, "/realtime/quotes/ACME", &[]);
    assert_eq!(
        (r.header("server"), r.header("date").is_some()),
        (None, true)
    );
}

/// `maxRequestBodySize` is the limit a handler's body extractor meets, also above axum's own
/// 2 MiB default: a 3 MiB event reaches the handler (which refuses it as no event: 400)
/// under the default 8 MiB, and is 413 under 1 MiB.
#[test]
fn max_request_body_size_is_the_limit_handlers_see() {
    let dir = tempfile::tempdir().unwrap();
    let post = |service: &common::InProcess, size: usize| {
        let body = format!(r#"{{"symbol":"ACME","pad":"{}"}}"#, "a".repeat(size));
        let mut c = connect(service.app);
        request(
            &mut c,
            "POST",
            "/realtime/events",
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
        .unwrap()
        .status
    };
    let service = start_in_process_file(&config(dir.path(), "default", "", ""));
    assert_eq!(post(&service, 3 << 20), 400);
    drop(service);
    let service = start_in_process_file(&config(
        dir.path(),
        "default",
        "  maxRequestBodySize: 1MiB\n",
        "",
    ));
    // Answered 413 from the declared length, and closed while the body may still be coming:
    // sent whole or not, the answer is what counts.
    let head = format!(
        "POST /realtime/events HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        3 << 20
    );
    let mut sent = head.into_bytes();
    sent.resize(sent.len() + (3 << 20), b'a');
    assert_eq!(common::status_of(&common::raw(service.app, &sent)), 413);
    assert_eq!(post(&service, 1 << 10), 400);
}

// Connector timeouts. Each test sets one timeout of one connector to 1 s and leaves every
// other key at its default (idleTimeout 30 s, headerReadTimeout 10 s). The server notices a
// timeout at most a quarter late and never early: the connection closes 1 to 1.5 s in. The
// bounds leave slack for a loaded machine, and still fail a timeout ten times too long (not
// closed by `LATEST`) or ten times too short (closed before `EARLIEST`).

/// A timeout of 1 s closes no connection sooner than this.
const EARLIEST: Duration = Duration::from_millis(700);
/// A timeout of 1 s has closed its connection by this time.
const LATEST: Duration = Duration::from_secs(3);

/// `realtime` in process, its `which` connector (`application`, `admin`, or `simple`: the
/// simple server's one) given `setting` (`key: value`), every other key at its default.
fn with_connector_setting(which: &str, setting: &str) -> common::InProcess {
    let plain = "{type: http, port: 0, bindHost: 127.0.0.1}";
    let set = format!("{{type: http, port: 0, bindHost: 127.0.0.1, {setting}}}");
    let connectors = match which {
        "application" => {
            format!("  applicationConnectors: [{set}]\n  adminConnectors: [{plain}]\n")
        }
        "admin" => format!("  applicationConnectors: [{plain}]\n  adminConnectors: [{set}]\n"),
        "simple" => format!("  type: simple\n  connector: {set}\n"),
        other => panic!("no connector {other}"),
    };
    common::start_in_process(&format!(
        "server:\n{connectors}  requestLog: {{appenders: []}}\nlogging:\n  level: WARN\n  appenders: []\n"
    ))
}

/// The connector `which` names, then (on the default server) the other one, each with a path
/// it answers 200.
fn connectors(service: &common::InProcess, which: &str) -> Vec<(SocketAddr, &'static str)> {
    let application = (service.app, "/realtime/quotes/ACME");
    let admin = (service.admin, "/ping");
    match which {
        "application" => vec![application, admin],
        "admin" => vec![admin, application],
        _ => vec![(service.app, "/application/realtime/quotes/ACME")],
    }
}

/// Watches `conns` from `since` until each is closed or `LATEST` has passed: when each was
/// seen closed (EOF, or an error reading or writing), `None` for those still open. With
/// `trickle`, each open one is sent one more byte every 200 ms, as a slowloris client sends
/// its head: never idle.
fn closings(conns: &[TcpStream], since: Instant, trickle: bool) -> Vec<Option<Duration>> {
    for c in conns {
        c.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    }
    let mut closed: Vec<Option<Duration>> = vec![None; conns.len()];
    let mut sent = Instant::now();
    while since.elapsed() < LATEST && closed.iter().any(Option::is_none) {
        let send = trickle && sent.elapsed() >= Duration::from_millis(200);
        if send {
            sent = Instant::now();
        }
        for (c, when) in conns.iter().zip(closed.iter_mut()) {
            if when.is_some() {
                continue;
            }
            let mut c: &TcpStream = c;
            let mut buf = [0u8; 512];
            let gone = (send && c.write_all(b"a").is_err())
                || match c.read(&mut buf) {
                    Ok(0) => true,
                    Ok(_) => false,
                    Err(e) => !matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut),
                };
            if gone {
                *when = Some(since.elapsed());
            }
        }
    }
    closed
}

/// Fails unless the first of `closed` (as [`closings`] saw them) closed between `EARLIEST`
/// and `LATEST`, and every other one was still open at `LATEST`.
fn only_the_first_closed_on_time(what: &str, closed: &[Option<Duration>]) {
    match closed[0] {
        Some(t) => assert!(
            t >= EARLIEST,
            "{what}: closed {t:?} in, before {EARLIEST:?}"
        ),
        None => panic!("{what}: still open {LATEST:?} in"),
    }
    assert!(
        closed[1..].iter().all(Option::is_none),
        "{what}: the other connector, at its defaults, closed too: {closed:?}"
    );
}

/// The connector `which` with `idleTimeout: 1s`: a kept-alive connection left idle after its
/// answer is closed 1 s (at least `EARLIEST`, at most `LATEST`) after that answer; one to the
/// other connector, idle as long, stays open.
fn idle_timeout_closes_on_time(which: &str) {
    let service = with_connector_setting(which, "idleTimeout: 1s");
    // The connection under test is answered last: its idle time begins at `since`.
    let mut conns: Vec<TcpStream> = connectors(&service, which)
        .into_iter()
        .rev()
        .map(|(addr, path)| {
            let mut c = connect(addr);
            let r = request(&mut c, "GET", path, &[], b"").unwrap();
            assert_eq!(r.status, 200, "{which}: {path}: {}", r.body);
            c.into_inner()
        })
        .collect();
    let since = Instant::now();
    conns.reverse();
    let closed = closings(&conns, since, false);
    only_the_first_closed_on_time(&format!("{which} idleTimeout 1s"), &closed);
}

/// The connector `which` with `headerReadTimeout: 1s`: a connection whose request head keeps
/// trickling in, a byte every 200 ms (never idle), is dropped 1 s (at least `EARLIEST`, at
/// most `LATEST`) after the head began; one to the other connector, trickling the same way,
/// stays open.
fn header_read_timeout_drops_on_time(which: &str) {
    let service = with_connector_setting(which, "headerReadTimeout: 1s");
    let since = Instant::now();
    let conns: Vec<TcpStream> = connectors(&service, which)
        .into_iter()
        .map(|(addr, path)| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(format!("GET {path} HTTP/1.1\r\nHost: t\r\nX-Slow: ").as_bytes())
                .unwrap();
            s
        })
        .collect();
    let closed = closings(&conns, since, true);
    only_the_first_closed_on_time(&format!("{which} headerReadTimeout 1s"), &closed);
}

/// An application connector's `idleTimeout` (1 s) closes an idle kept-alive connection 1 s
/// after its answer, not sooner; the admin connector keeps its own (the default 30 s).
///
/// Catches: the key ignored or read ten times too long (still open at 3 s), ten times too
/// short (closed before 0.7 s), or applied to the admin connector too.
#[test]
fn an_application_connectors_idle_timeout_closes_an_idle_connection_on_time() {
    idle_timeout_closes_on_time("application");
}

/// An admin connector's `idleTimeout` (1 s) closes an idle kept-alive connection 1 s after
/// its answer, not sooner; the application connector keeps its own (the default 30 s).
///
/// Catches: the key ignored on admin connectors (or taken from the application connector's),
/// read ten times too long or too short, or applied to the application connector too.
#[test]
fn an_admin_connectors_idle_timeout_closes_an_idle_connection_on_time() {
    idle_timeout_closes_on_time("admin");
}

/// The simple server's connector's `idleTimeout` (1 s) closes an idle kept-alive connection
/// 1 s after its answer, not sooner.
///
/// Catches: the key ignored on the simple server (its connector built with the defaults), or
/// read ten times too long or too short.
#[test]
fn the_simple_connectors_idle_timeout_closes_an_idle_connection_on_time() {
    idle_timeout_closes_on_time("simple");
}

/// An application connector's `headerReadTimeout` (1 s) drops a connection whose request head
/// is still incomplete 1 s after it began, though bytes keep coming; the admin connector keeps
/// its own (the default 10 s).
///
/// Catches: the key ignored or read ten times too long (still open at 3 s), ten times too
/// short (dropped before 0.7 s), a head timed only while silent (the idle timer's work), or
/// the key applied to the admin connector too.
#[test]
fn an_application_connectors_header_read_timeout_drops_a_slow_head_on_time() {
    header_read_timeout_drops_on_time("application");
}

/// An admin connector's `headerReadTimeout` (1 s) drops a connection whose request head is
/// still incomplete 1 s after it began, though bytes keep coming; the application connector
/// keeps its own (the default 10 s).
///
/// Catches: the key ignored on admin connectors (or taken from the application connector's),
/// read ten times too long or too short, or applied to the application connector too.
#[test]
fn an_admin_connectors_header_read_timeout_drops_a_slow_head_on_time() {
    header_read_timeout_drops_on_time("admin");
}

/// The simple server's connector's `headerReadTimeout` (1 s) drops a connection whose request
/// head is still incomplete 1 s after it began, though bytes keep coming.
///
/// Catches: the key ignored on the simple server (its connector built with the defaults), or
/// read ten times too long or too short.
#[test]
fn the_simple_connectors_header_read_timeout_drops_a_slow_head_on_time() {
    header_read_timeout_drops_on_time("simple");
}
