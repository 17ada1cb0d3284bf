//! `health:` on the real `realtime` binary: the readiness response on the application port,
//! scheduled checks, and the delayed shutdown on SIGTERM.

mod common;

use std::time::{Duration, Instant};

use common::{
    connect, fail_to_start, request, sigterm, start, start_in_process_file, wait_exit, write_config,
};

const SERVER: &str = "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
    adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  requestLog: {appenders: []}\n\
    logging: {appenders: []}\n";

/// Catches: the readiness response missing or on the wrong port, a body that ignores `name`,
/// the cache header missing, the state not flipping on SIGTERM, requests refused during the
/// wait, the wait skipped (the process gone before it ends), or `shutdownWaitPeriod` ignored
/// (the default 15 s waited).
#[test]
fn ready_until_sigterm_then_not_ready_while_still_serving_for_the_wait() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "{SERVER}health:\n  delayedShutdownHandlerEnabled: true\n  shutdownWaitPeriod: 1500ms\n  \
             healthCheckUrlPaths: [/ready, /health-check]\n  \
             healthChecks:\n    - {{name: quotes, critical: true, schedule: {{checkInterval: 100ms}}}}\n"
        ),
    );
    let mut service = start(&config);
    let mut app = connect(service.app);
    let ready = request(&mut app, "GET", "/health-check?name=all", &[], b"").unwrap();
    assert_eq!(ready.status, 200, "{}", ready.body);
    assert_eq!(
        ready.body,
        r#"[{"name":"quotes","healthy":true,"type":"READY","critical":true}]"#
    );
    assert_eq!(ready.header("cache-control"), Some("no-store"));
    assert_eq!(ready.header("content-type"), Some("application/json"));
    let unnamed = request(&mut app, "GET", "/ready", &[], b"").unwrap();
    assert_eq!((unnamed.status, unnamed.body.as_str()), (200, "[]"));
    // Not on the admin port.
    let mut admin = connect(service.admin);
    assert_eq!(
        request(&mut admin, "GET", "/health-check", &[], b"")
            .unwrap()
            .status,
        404
    );

    sigterm(&service.child);
    let signalled = Instant::now();
    // Not ready within a moment, while the application still answers.
    let mut flipped = false;
    while signalled.elapsed() < Duration::from_millis(1000) {
        let mut c = connect(service.app);
        if request(&mut c, "GET", "/ready", &[], b"").unwrap().status == 503 {
            flipped = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(flipped, "still ready after SIGTERM");
    let mut c = connect(service.app);
    let quotes = request(&mut c, "GET", "/realtime/quotes", &[], b"").unwrap();
    assert_eq!(quotes.status, 200, "serving during the wait");
    let alive = request(&mut c, "GET", "/ready?type=alive", &[], b"").unwrap();
    assert_eq!(alive.status, 200, "alive while waiting");
    assert!(wait_exit(&mut service.child).success());
    let exited = signalled.elapsed();
    assert!(
        exited >= Duration::from_millis(1500),
        "exited after {exited:?}, before the wait ended"
    );
    // The wait is the 1.5 s configured, not the default 15 s.
    assert!(
        exited < Duration::from_secs(10),
        "exited after {exited:?}: shutdownWaitPeriod 1500ms not taken"
    );
}

/// Catches: a configured check naming no registered one accepted (it would never run).
#[test]
fn a_scheduled_check_must_name_a_registered_one() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!("{SERVER}health:\n  healthChecks: [{{name: quote}}]\n"),
    );
    let (status, stderr) = fail_to_start(&config);
    assert_eq!(status.code(), Some(1));
    assert!(
        stderr.contains(
            "health.healthChecks[0].name: no health check named \"quote\" is registered (registered: quotes"
        ),
        "{stderr}"
    );
}

/// `GET path` on a new connection: status, the body, and the `Cache-Control` header.
fn ready(addr: std::net::SocketAddr, path: &str) -> (u16, String, Option<String>) {
    let mut c = connect(addr);
    let r = request(&mut c, "GET", path, &[], b"").unwrap();
    let cache = r.header("cache-control").map(str::to_owned);
    (r.status, r.body, cache)
}

/// Polls `path` until it answers `status`, for up to `within`.
fn answers(addr: std::net::SocketAddr, path: &str, status: u16, within: Duration) -> bool {
    let start = Instant::now();
    while start.elapsed() < within {
        if ready(addr, path).0 == status {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Catches: a paused feed never seen, a recovery not seen while unhealthy, `initialDelay`
/// ignored, or `responder`'s header settings ignored. (The attempts' counts are told apart
/// by `failure_and_success_attempts_each_count_their_own_results` in `src/health/schedule.rs`.)
#[test]
fn a_scheduled_check_follows_its_schedule_and_attempts() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "{SERVER}health:\n  responder: {{cacheControlValue: max-age=1}}\n  healthChecks:\n    \
             - {{name: quotes, critical: true, schedule: {{checkInterval: 50ms, downtimeInterval: 50ms, \
             failureAttempts: 2, successAttempts: 2}}}}\n"
        ),
    );
    let service = start_in_process_file(&config);
    let (status, _, cache) = ready(service.app, "/health-check");
    assert_eq!((status, cache.as_deref()), (200, Some("max-age=1")));
    let mut admin = connect(service.admin);
    let pause = request(&mut admin, "POST", "/tasks/feed?action=pause", &[], b"").unwrap();
    assert_eq!(pause.status, 200, "{}", pause.body);
    let paused = Instant::now();
    assert!(answers(
        service.app,
        "/health-check",
        503,
        Duration::from_secs(3)
    ));
    // Two runs 50 ms apart: not before the second.
    assert!(
        paused.elapsed() >= Duration::from_millis(50),
        "{:?}",
        paused.elapsed()
    );
    let (_, body, _) = ready(service.app, "/health-check?name=quotes");
    assert_eq!(
        body,
        r#"[{"name":"quotes","healthy":false,"type":"READY","critical":true}]"#
    );
    let resume = request(&mut admin, "POST", "/tasks/feed?action=resume", &[], b"").unwrap();
    assert_eq!(resume.status, 200, "{}", resume.body);
    assert!(answers(
        service.app,
        "/health-check",
        200,
        Duration::from_secs(3)
    ));

    // A first run an hour away: a check that starts unhealthy stays so.
    let config = write_config(
        dir.path(),
        &format!(
            "{SERVER}health:\n  responder: {{cacheControlEnabled: false}}\n  healthChecks:\n    \
             - {{name: quotes, critical: true, initialState: false, schedule: {{initialDelay: 1h, \
             checkInterval: 50ms}}}}\n"
        ),
    );
    let service = start_in_process_file(&config);
    std::thread::sleep(Duration::from_millis(300));
    let (status, _, cache) = ready(service.app, "/health-check");
    assert_eq!((status, cache), (503, None));
}

/// While a check is healthy it runs every `checkInterval`; once unhealthy, every
/// `downtimeInterval`. With 50 ms and 2 s, three failures in a row (`failureAttempts: 3`)
/// take a moment after the feed is paused: the runs between them are healthy ones, 50 ms
/// apart. The run that makes the check unhealthy comes after the pause, and the next run, the
/// first that can see the feed moving again (`successAttempts: 1`), waits the whole 2 s
/// however soon the feed resumes: ready again no sooner than 2 s after the pause.
///
/// Catches: `downtimeInterval` ignored (an unhealthy check run again after `checkInterval`,
/// ready again a moment after the resume), or waited while the check is healthy (the three
/// failures would take 4 s at least).
#[test]
fn an_unhealthy_check_runs_again_after_its_downtime_interval() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!(
            "{SERVER}health:\n  healthChecks:\n    \
             - {{name: quotes, critical: true, schedule: {{checkInterval: 50ms, downtimeInterval: 2s, \
             failureAttempts: 3, successAttempts: 1}}}}\n"
        ),
    );
    let service = start_in_process_file(&config);
    assert_eq!(ready(service.app, "/health-check").0, 200);
    let mut admin = connect(service.admin);
    let paused = Instant::now();
    let pause = request(&mut admin, "POST", "/tasks/feed?action=pause", &[], b"").unwrap();
    assert_eq!(pause.status, 200, "{}", pause.body);
    assert!(answers(
        service.app,
        "/health-check",
        503,
        Duration::from_secs(10)
    ));
    let unhealthy = paused.elapsed();
    assert!(
        unhealthy < Duration::from_secs(3),
        "unhealthy {unhealthy:?} after the pause: healthy runs are checkInterval apart"
    );
    let resume = request(&mut admin, "POST", "/tasks/feed?action=resume", &[], b"").unwrap();
    assert_eq!(resume.status, 200, "{}", resume.body);
    let resumed = paused.elapsed();
    assert!(answers(
        service.app,
        "/health-check",
        200,
        Duration::from_secs(10)
    ));
    let recovered = paused.elapsed();
    assert!(
        recovered >= Duration::from_secs(2),
        "ready again {recovered:?} after the pause (resumed after {resumed:?}): an unhealthy \
         check runs downtimeInterval apart"
    );
}

/// Catches: `enabled: false` still scheduling (an unregistered name would then fail the
/// start) or still serving the path.
#[test]
fn a_disabled_health_section_serves_and_checks_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        &format!("{SERVER}health:\n  enabled: false\n  healthChecks: [{{name: nothing}}]\n"),
    );
    let service = start_in_process_file(&config);
    assert_eq!(ready(service.app, "/health-check").0, 404);
}
