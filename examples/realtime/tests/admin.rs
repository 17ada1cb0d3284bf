//! The admin interface of the real `realtime` binary: routes, metrics, tasks, auth, switches.

mod common;

use std::time::{Duration, Instant};

use common::{Service, connect, request, start, start_with_env, write_config};

/// Application and admin connectors on free ports, INFO to a file, no request log.
const CONFIG: &str = "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
    requestLog: {appenders: []}\nlogging:\n  level: INFO\n  appenders:\n    - type: file\n      \
    currentLogFilename: DIR/app.log\n      archive: false\n      discardingThreshold: 0\n";

fn admin(service: &Service, method: &str, path: &str) -> common::Response {
    admin_at(service.admin, method, path)
}

fn admin_at(addr: std::net::SocketAddr, method: &str, path: &str) -> common::Response {
    let mut conn = connect(addr);
    request(&mut conn, method, path, &[], b"").unwrap()
}

fn json(body: &str) -> serde_json::Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

#[test]
fn admin_routes_answer_in_dropwizard_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(&write_config(dir.path(), CONFIG));

    let ping = admin(&service, "GET", "/ping");
    assert_eq!((ping.status, ping.body.as_str()), (200, "pong\n"));

    let health = admin(&service, "GET", "/healthcheck");
    assert_eq!(health.status, 200, "{}", health.body);
    let h = json(&health.body);
    for check in ["quotes", "runtime"] {
        assert_eq!(h[check]["healthy"], true, "{h}");
        assert!(h[check]["duration"].is_u64(), "{h}");
        assert!(h[check]["timestamp"].as_str().unwrap().contains('T'), "{h}");
    }

    let metrics = admin(&service, "GET", "/metrics");
    assert_eq!(metrics.status, 200);
    assert_eq!(metrics.header("content-type"), Some("application/json"));
    let m = json(&metrics.body);
    assert_eq!(m["version"], "4.0.0");
    for section in ["gauges", "counters", "histograms", "meters", "timers"] {
        assert!(m[section].is_object(), "{section} in {m}");
    }
    assert!(!metrics.body.contains('\n'));
    let pretty = admin(&service, "GET", "/metrics?pretty=true");
    assert!(pretty.body.lines().count() > 20);
    assert_eq!(json(&pretty.body)["version"], "4.0.0");

    let threads = admin(&service, "GET", "/threads");
    assert_eq!(threads.status, 200);
    assert!(
        threads.body.starts_with("application runtime: "),
        "{}",
        threads.body
    );
    assert!(
        threads.body.contains("\"realtime-worker\""),
        "{}",
        threads.body
    );
    assert!(
        threads.body.contains("\"ferrowizard-log"),
        "{}",
        threads.body
    );

    let tasks = admin(&service, "GET", "/tasks");
    assert_eq!(
        (tasks.status, tasks.body.as_str()),
        (200, "feed\nlog-level\n")
    );
    assert_eq!(admin(&service, "GET", "/tasks/log-level").status, 405);
    assert_eq!(admin(&service, "POST", "/tasks/nope").status, 404);

    let loud = admin(
        &service,
        "POST",
        "/tasks/log-level?logger=realtime&level=LOUD",
    );
    assert_eq!(loud.status, 400);
    assert!(loud.body.contains("\"LOUD\""), "{}", loud.body);
    let soon = admin(
        &service,
        "POST",
        "/tasks/log-level?logger=realtime&level=DEBUG&duration=soon",
    );
    assert_eq!(soon.status, 400);
    assert!(
        soon.body.contains("duration") && soon.body.contains("\"soon\""),
        "{}",
        soon.body
    );
    let nobody = admin(&service, "POST", "/tasks/log-level?level=DEBUG");
    assert_eq!(nobody.status, 400);

    let mut conn = connect(service.admin);
    let huge = vec![b'x'; 70 * 1024];
    let too_big = request(&mut conn, "POST", "/tasks/feed", &[], &huge).unwrap();
    assert_eq!(too_big.status, 413, "{}", too_big.body);

    // The application's own task: pausing the feed makes its health check fail.
    let bogus = admin(&service, "POST", "/tasks/feed?action=explode");
    assert_eq!(bogus.status, 400);
    let paused = admin(&service, "POST", "/tasks/feed?action=pause");
    assert_eq!(
        (paused.status, paused.body.as_str()),
        (200, "feed paused: prices no longer move\n")
    );
    let sick = admin(&service, "GET", "/healthcheck");
    assert_eq!(sick.status, 500);
    let s = json(&sick.body);
    assert_eq!(s["quotes"]["healthy"], false);
    assert!(
        s["quotes"]["message"].as_str().unwrap().contains("paused"),
        "{s}"
    );
    assert_eq!(s["runtime"]["healthy"], true);
    // The same task, its parameters in a form body this time.
    let mut conn = connect(service.admin);
    let resumed = request(
        &mut conn,
        "POST",
        "/tasks/feed",
        &[("Content-Type", "application/x-www-form-urlencoded")],
        b"action=resume",
    )
    .unwrap();
    assert_eq!(resumed.status, 200);
    assert_eq!(admin(&service, "GET", "/healthcheck").status, 200);
}

/// The value of one sample in Prometheus text: `name{labels} value`.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| {
            l.strip_prefix(series)
                .and_then(|rest| rest.strip_prefix(' '))
        })
        .unwrap_or_else(|| panic!("no {series} in:\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn metrics_count_exactly_what_was_served() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(&write_config(dir.path(), CONFIG));
    let mut app = connect(service.app);
    for _ in 0..23 {
        assert_eq!(common::get(&mut app, "/realtime/quotes/ACME").unwrap(), 200);
    }
    assert_eq!(common::get(&mut app, "/realtime/quotes/NOPE").unwrap(), 404);
    for _ in 0..5 {
        let r = request(
            &mut app,
            "POST",
            "/realtime/events",
            &[("Content-Type", "application/json")],
            br#"{"symbol":"ACME","kind":"trade","quantity":1,"price":10}"#,
        )
        .unwrap();
        assert_eq!(r.status, 202, "{}", r.body);
    }
    // Admin requests before and between are not the application's: not counted.
    admin(&service, "GET", "/ping");

    let m = json(&admin(&service, "GET", "/metrics").body);
    let timers = &m["timers"];
    assert_eq!(timers["ferrowizard.requests"]["count"], 29, "{m}");
    assert_eq!(
        timers["ferrowizard.routes.GET./realtime/quotes/{symbol}"]["count"], 24,
        "{m}"
    );
    assert_eq!(
        timers["ferrowizard.routes.POST./realtime/events"]["count"], 5,
        "{m}"
    );
    assert_eq!(
        timers["ferrowizard.requests"]["duration_units"],
        "milliseconds"
    );
    let meters = &m["meters"];
    assert_eq!(meters["ferrowizard.responses.2xx"]["count"], 28, "{m}");
    assert_eq!(meters["ferrowizard.responses.4xx"]["count"], 1, "{m}");
    assert_eq!(meters["ferrowizard.responses.5xx"]["count"], 0, "{m}");
    // Recorded through the `metrics` crate's macro in the handler.
    assert_eq!(m["counters"]["realtime.events.accepted"]["count"], 5, "{m}");
    let gauges = &m["gauges"];
    assert_eq!(
        gauges["ferrowizard.connections.application[0]"]["value"], 1.0,
        "{m}"
    );
    assert_eq!(gauges["ferrowizard.requests.active"]["value"], 0.0, "{m}");
    assert!(
        gauges["process.resident_memory_bytes"]["value"]
            .as_f64()
            .unwrap()
            > 1e6
    );
    assert!(gauges["process.open_fds"]["value"].as_f64().unwrap() >= 3.0);
    // The logging pipeline's own counters: the 5 events were logged at INFO, nothing dropped.
    let appender = m["counters"]
        .as_object()
        .unwrap()
        .keys()
        .find(|k| {
            k.starts_with("ferrowizard.logging.emitted.0.file.app.log") && k.ends_with(".INFO")
        })
        .cloned()
        .unwrap_or_else(|| panic!("no logging counters in {m}"));
    let dropped = appender.replace(".emitted.", ".dropped.");
    assert!(
        m["counters"][&appender]["count"].as_i64().unwrap() >= 5,
        "{m}"
    );
    assert_eq!(m["counters"][&dropped]["count"], 0, "{m}");

    // Prometheus's text: what a real parser accepts, with the same counts.
    let text = admin(&service, "GET", "/metrics/prometheus");
    assert_eq!(
        text.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let parsed = openmetrics_parser::prometheus::parse_prometheus(&text.body)
        .unwrap_or_else(|e| panic!("{e:?}:\n{}", text.body));
    for family in [
        "ferrowizard_requests_seconds",
        "ferrowizard_routes_seconds",
        "ferrowizard_responses_total",
        "ferrowizard_logging_written_total",
        "process_cpu_seconds_total",
        "realtime_events_accepted_total",
    ] {
        assert!(
            parsed.families.contains_key(family),
            "no {family} in:\n{}",
            text.body
        );
    }
    assert_eq!(
        sample(&text.body, "ferrowizard_requests_seconds_count"),
        29.0
    );
    assert_eq!(
        sample(
            &text.body,
            "ferrowizard_routes_seconds_count{method=\"GET\",route=\"/realtime/quotes/{symbol}\"}"
        ),
        24.0
    );
    assert_eq!(
        sample(&text.body, "ferrowizard_responses_total{class=\"2xx\"}"),
        28.0
    );

    // Prometheus's scraper asks /metrics for text in its Accept header.
    let mut conn = connect(service.admin);
    let scraped = request(
        &mut conn,
        "GET",
        "/metrics",
        &[(
            "Accept",
            "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.3",
        )],
        b"",
    )
    .unwrap();
    assert!(
        scraped
            .header("content-type")
            .unwrap()
            .starts_with("text/plain")
    );
    assert!(
        scraped
            .body
            .contains("# TYPE ferrowizard_requests_seconds summary")
    );
}

fn debug_lines(dir: &std::path::Path, symbol: &str) -> usize {
    std::fs::read_to_string(dir.join("app.log"))
        .unwrap_or_default()
        .lines()
        .filter(|l| {
            l.starts_with("DEBUG") && l.contains(&format!("quote requested symbol={symbol}"))
        })
        .count()
}

/// Whether `GET /realtime/quotes/{symbol}` logs its DEBUG line. The request is followed by a
/// trade, whose INFO line goes through the same appender's queue: once that line is in the
/// file, the quote's is too if it was logged at all. No fixed wait decides the answer.
fn quote_logs_debug(service: &Service, dir: &std::path::Path, symbol: &str) -> bool {
    let mut app = connect(service.app);
    common::get(&mut app, &format!("/realtime/quotes/{symbol}")).unwrap();
    let trade = request(
        &mut app,
        "POST",
        "/realtime/events",
        &[("Content-Type", "application/json")],
        br#"{"symbol": "ACME", "kind": "trade", "quantity": 1, "price": 100.0}"#,
    )
    .unwrap();
    assert_eq!(trade.status, 202, "{}", trade.body);
    let fence = format!("event accepted id={} ", json(&trade.body)["id"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !std::fs::read_to_string(dir.join("app.log"))
        .unwrap_or_default()
        .contains(&fence)
    {
        assert!(Instant::now() < deadline, "{fence:?} never logged");
        std::thread::sleep(Duration::from_millis(20));
    }
    match debug_lines(dir, symbol) {
        0 => false,
        1 => true,
        n => panic!("{n} DEBUG lines for one request of {symbol}"),
    }
}

/// `POST /tasks/log-level` turns a logger's DEBUG on, back off, and on for a while, after
/// which it reverts by itself.
///
/// The timed change replaces a change without a duration, so that the revert is seen as
/// the level going back to INFO; the test waits for it (up to 30 s), rather than judging a
/// window of time.
#[test]
fn the_log_level_task_turns_debug_on_for_a_while() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(&write_config(dir.path(), CONFIG));
    let dir = dir.path();
    assert!(!quote_logs_debug(&service, dir, "ACME"), "off at first");

    let set = admin(
        &service,
        "POST",
        "/tasks/log-level?logger=realtime&level=DEBUG",
    );
    assert_eq!(
        (set.status, set.body.as_str()),
        (200, "Configured logging level for realtime to DEBUG\n")
    );
    assert!(quote_logs_debug(&service, dir, "GLOBEX"), "DEBUG is on");
    let reset = admin(&service, "POST", "/tasks/log-level?logger=realtime");
    assert_eq!(
        reset.body,
        "Configured logging level for realtime to the configured level\n"
    );
    assert!(
        !quote_logs_debug(&service, dir, "INITECH"),
        "DEBUG is off again"
    );

    // On, then on for a second: the second change reverts by itself, to INFO.
    admin(
        &service,
        "POST",
        "/tasks/log-level?logger=realtime&level=DEBUG",
    );
    assert!(quote_logs_debug(&service, dir, "HOOLI"), "DEBUG is on");
    let timed = admin(
        &service,
        "POST",
        "/tasks/log-level?logger=realtime&level=DEBUG&duration=PT1S",
    );
    assert_eq!(
        timed.body,
        "Configured logging level for realtime to DEBUG for 1000 milliseconds\n"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut k = 0;
    while quote_logs_debug(&service, dir, &format!("WAIT{k}")) {
        assert!(Instant::now() < deadline, "the timed level never reverted");
        std::thread::sleep(Duration::from_millis(100));
        k += 1;
    }
}

#[test]
fn admin_auth_guards_every_admin_path_and_only_those() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!("{CONFIG}admin:\n  auth: {{bearer: \"${{ADMIN_TOKEN}}\"}}\n"),
    );
    let service = start_with_env(&config, &[("ADMIN_TOKEN", "s3cret-token")]);
    let paths = [
        ("GET", "/ping"),
        ("GET", "/healthcheck"),
        ("GET", "/metrics"),
        ("GET", "/metrics/prometheus"),
        ("GET", "/threads"),
        ("GET", "/tasks"),
        ("POST", "/tasks/feed?action=resume"),
        ("GET", "/no-such-page"),
    ];
    for (method, path) in paths {
        let mut conn = connect(service.admin);
        let anonymous = request(&mut conn, method, path, &[], b"").unwrap();
        assert_eq!(anonymous.status, 401, "{method} {path}");
        assert!(
            anonymous
                .header("www-authenticate")
                .unwrap()
                .starts_with("Bearer")
        );
        let wrong = request(
            &mut conn,
            method,
            path,
            &[("Authorization", "Bearer s3cret-tokem")],
            b"",
        )
        .unwrap();
        assert_eq!(wrong.status, 401, "{method} {path}");
        let right = request(
            &mut conn,
            method,
            path,
            &[("Authorization", "Bearer s3cret-token")],
            b"",
        )
        .unwrap();
        let expected = if path == "/no-such-page" { 404 } else { 200 };
        assert_eq!(right.status, expected, "{method} {path}: {}", right.body);
    }
    // The application side is not the admin's: no credentials needed.
    let mut app = connect(service.app);
    assert_eq!(common::get(&mut app, "/realtime/quotes/ACME").unwrap(), 200);
    drop(service);

    let basic = write_config(
        dir.path(),
        &format!(
            "{CONFIG}admin:\n  auth:\n    basic: {{username: ops, password: \"${{ADMIN_PASSWORD}}\"}}\n"
        ),
    );
    let service = start_with_env(&basic, &[("ADMIN_PASSWORD", "pa:ss")]);
    let mut conn = connect(service.admin);
    // base64("ops:pa:ss")
    let ok = request(
        &mut conn,
        "GET",
        "/ping",
        &[("Authorization", "Basic b3BzOnBhOnNz")],
        b"",
    )
    .unwrap();
    assert_eq!(ok.status, 200);
    let no = request(
        &mut conn,
        "GET",
        "/ping",
        &[("Authorization", "Basic b3BzOnBhc3M=")],
        b"",
    )
    .unwrap();
    assert_eq!(no.status, 401);
    assert!(no.header("www-authenticate").unwrap().starts_with("Basic"));
}

#[test]
fn an_unset_admin_secret_is_a_configuration_error() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!("{CONFIG}admin:\n  auth: {{bearer: \"${{FERROWIZARD_TEST_UNSET_TOKEN:-}}\"}}\n"),
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_realtime"))
        .arg("check")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("admin.auth") && stderr.contains("must not be empty"),
        "{stderr}"
    );
}

#[test]
fn switched_off_endpoints_are_not_served() {
    // In process: nothing here needs a process of its own.
    let yaml = "server: {requestLog: {appenders: []}}\nlogging: {appenders: []}\nadmin:\n  \
                healthChecks: {servletEnabled: false}\n  \
                endpoints: {ping: false, metrics: false, threads: false, tasks: false}\n";
    let service = common::start_in_process(yaml);
    for path in [
        "/ping",
        "/healthcheck",
        "/metrics",
        "/metrics/prometheus",
        "/threads",
        "/tasks",
    ] {
        assert_eq!(admin_at(service.admin, "GET", path).status, 404, "{path}");
    }
    assert_eq!(
        admin_at(service.admin, "POST", "/tasks/log-level?logger=x").status,
        404
    );
    // The application side serves meanwhile.
    let mut conn = connect(service.app);
    let quotes = request(&mut conn, "GET", "/realtime/quotes", &[], b"").unwrap();
    assert_eq!(quotes.status, 200, "{}", quotes.body);
}

/// The admin requests, each with the switch that serves it (a key under `admin.`).
const SWITCHED: [(&str, &str, &str); 8] = [
    ("endpoints.ping", "GET", "/ping"),
    ("healthChecks.servletEnabled", "GET", "/healthcheck"),
    ("endpoints.metrics", "GET", "/metrics"),
    ("endpoints.metrics", "GET", "/metrics/prometheus"),
    ("endpoints.threads", "GET", "/threads"),
    ("endpoints.tasks", "GET", "/tasks"),
    ("endpoints.tasks", "POST", "/tasks/feed?action=resume"),
    ("endpoints.tasks", "POST", "/tasks/nope"),
];

/// Starts the service (in process) with the one admin switch `key` (`section.leaf` under
/// `admin.`) off and every other on, and checks that exactly the requests of that switch are
/// not served (axum's bare 404), that every other admin request is (`/tasks/nope` is then the
/// tasks' own 404, which names the task), and that the application side serves.
fn only_switched_off(key: &str) {
    assert!(
        SWITCHED.iter().any(|(k, _, _)| *k == key),
        "no admin request is switched by {key}"
    );
    let (section, leaf) = key.split_once('.').expect("section.leaf");
    let service = common::start_in_process(&format!(
        "server: {{requestLog: {{appenders: []}}}}\nlogging: {{appenders: []}}\n\
         admin:\n  {section}: {{{leaf}: false}}\n"
    ));
    for (switch, method, path) in SWITCHED {
        let got = admin_at(service.admin, method, path);
        if switch == key {
            assert_eq!(
                (got.status, got.body.as_str()),
                (404, ""),
                "{method} {path} with admin.{key} off"
            );
        } else if path == "/tasks/nope" {
            assert_eq!(
                (got.status, got.body.as_str()),
                (404, "no task named \"nope\"\n"),
                "{method} {path} with admin.{key} off"
            );
        } else {
            assert_ne!(
                got.status, 404,
                "{method} {path} with admin.{key} off: {}",
                got.body
            );
        }
    }
    let mut conn = connect(service.app);
    let quotes = request(&mut conn, "GET", "/realtime/quotes", &[], b"").unwrap();
    assert_eq!(quotes.status, 200, "{}", quotes.body);
}

/// `admin.endpoints.ping: false` takes `/ping` away, and only it.
///
/// Catches: the switch ignored, another endpoint served under this switch (`if
/// endpoints.metrics` where `if endpoints.ping` belongs, or the reverse), or this switch
/// taking another endpoint with it.
#[test]
fn ping_off_takes_away_ping_and_nothing_else() {
    only_switched_off("endpoints.ping");
}

/// `admin.endpoints.metrics: false` takes `/metrics` and `/metrics/prometheus` away, and only
/// them.
///
/// Catches: the switch ignored, the metrics routes served under another switch, or this
/// switch taking another endpoint with it.
#[test]
fn metrics_off_takes_away_the_metrics_and_nothing_else() {
    only_switched_off("endpoints.metrics");
}

/// `admin.endpoints.threads: false` takes `/threads` away, and only it.
///
/// Catches: the switch ignored, `/threads` served under another switch, or this switch
/// taking another endpoint with it.
#[test]
fn threads_off_takes_away_threads_and_nothing_else() {
    only_switched_off("endpoints.threads");
}

/// `admin.endpoints.tasks: false` takes `GET /tasks` and `POST /tasks/{name}` away, and only
/// them.
///
/// Catches: the switch ignored, the tasks' routes served under another switch, or this
/// switch taking another endpoint with it.
#[test]
fn tasks_off_takes_away_the_tasks_and_nothing_else() {
    only_switched_off("endpoints.tasks");
}

/// `admin.healthChecks.servletEnabled: false` takes `/healthcheck` away, and only it.
///
/// Catches: the switch ignored, `/healthcheck` served under one of `admin.endpoints`, or
/// this switch taking another endpoint with it.
#[test]
fn health_check_servlet_off_takes_away_healthcheck_and_nothing_else() {
    only_switched_off("healthChecks.servletEnabled");
}
