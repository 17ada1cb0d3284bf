//! volley's connections and KO messages against a plain TCP server (support/http1.rs), so
//! that the server can do what no well-behaved HTTP server does: count every connection, cut
//! a response short. The real binary, real sockets.

mod support;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;
use support::http1::{self, Answer, Got, OK, Seen};
use support::run;

/// Serves HTTP/1.1 on a free port (see [`http1::serve`]): `/half` sends a head announcing 10
/// bytes, then 2, then closes; `/cut` closes in the middle of the head; `/slow` answers
/// `200 ok` after 200 ms; any other path is `200 ok` at once, on a connection kept open unless
/// the request says `Connection: close`.
fn serve() -> (SocketAddr, Arc<Seen>) {
    http1::serve(route)
}

fn route(got: &Got, _: &Seen) -> Answer {
    match got.path.as_str() {
        "/slow" => {
            std::thread::sleep(Duration::from_millis(200));
            Answer::Keep(OK)
        }
        "/cut" => Answer::Close(b"HTTP/1.1 200 OK\r\nContent-"),
        "/half" => Answer::Close(b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nab"),
        _ => Answer::Keep(OK),
    }
}

/// `http.keepAlive: false` sends `Connection: close` and opens a connection per request;
/// by default a user keeps its one connection.
///
/// Catches: the `Connection: close` header sent on the wrong setting (`!` deleted in
/// `prepare`), and a connection kept although the target closes it.
#[test]
fn keep_alive_false_opens_a_connection_per_request() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = |http: &str| {
        format!(
            "baseUrl: BASE\n{http}scenarios:\n  - name: k\n    injection: [{{atOnceUsers: 1}}]\n    \
             steps: [{{repeat: {{times: 3, steps: [{{request: {{name: r, path: /ok}}}}]}}}}]\n"
        )
    };
    let (addr, seen) = serve();
    let r = run(dir.path(), addr, &scenario("http: {keepAlive: false}\n"));
    assert_eq!(r["requests"]["r"]["ok"]["count"], 3, "{}", r["errors"]);
    assert_eq!((seen.connections.load(SeqCst), seen.closing()), (3, 3));
    let (addr, seen) = serve();
    let r = run(dir.path(), addr, &scenario(""));
    assert_eq!(r["requests"]["r"]["ok"]["count"], 3, "{}", r["errors"]);
    assert_eq!((seen.connections.load(SeqCst), seen.closing()), (1, 0));
}

/// A response cut short, in its head or its body, is a KO in Gatling's words, and the
/// user's next request goes out on a new connection.
///
/// Catches: either check in `classify_hyper` lost (the KO then reads "Request failed:
/// ..."), and a body's error reported in hyper's words.
#[test]
fn a_response_cut_short_is_a_ko_and_the_next_request_reconnects() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, seen) = serve();
    let r = run(
        dir.path(),
        addr,
        "baseUrl: BASE\nscenarios:\n  - name: h\n    injection: [{atOnceUsers: 1}]\n    \
         steps: [{request: {name: cut, path: /cut}}, {request: {name: half, path: /half}}, {request: {name: after, path: /ok}}]\n",
    );
    assert_eq!(
        r["errors"]["Connection closed before the response was complete"], 2,
        "{}",
        r["errors"]
    );
    assert_eq!(r["requests"]["after"]["ok"]["count"], 1, "{}", r["errors"]);
    assert_eq!(seen.connections.load(SeqCst), 3);
}

/// A feeder that runs dry inside a `repeat` ends the user there: the steps after the repeat
/// do not run.
///
/// Catches: `run_steps` going on after a repeat whose feeder ran dry, or stopping after a
/// repeat that did not (`!` deleted before its recursive call).
#[test]
fn a_feeder_dry_inside_a_repeat_ends_the_user() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("two.csv"), "symbol\nA\nB\n").unwrap();
    let (addr, _) = serve();
    let r = run(
        dir.path(),
        addr,
        "baseUrl: BASE\nscenarios:\n  - name: f\n    injection: [{atOnceUsers: 1}]\n    steps:\n      \
         - repeat: {times: 3, steps: [{feed: {file: two.csv}}, {request: {name: each, path: '/ok/${symbol}'}}]}\n      \
         - request: {name: after, path: /ok}\n",
    );
    assert_eq!(r["requests"]["each"]["ok"]["count"], 2, "{}", r["errors"]);
    assert_eq!(r["errors"]["feeder two.csv is empty"], 1);
    assert!(r["requests"]["after"].is_null(), "{}", r["requests"]);
}

/// A request that cannot be built (a `${var}` the session lacks) is KO before a connection
/// is opened for it: the server sees no connection at all.
///
/// Catches: the connection checked out before the request is built (one connection opened,
/// and dropped, per such request).
#[test]
fn a_request_that_cannot_be_built_opens_no_connection() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, seen) = serve();
    let r = run(
        dir.path(),
        addr,
        "baseUrl: BASE\nscenarios:\n  - name: v\n    injection: [{atOnceUsers: 3}]\n    \
         steps: [{request: {name: r, path: '/ok/${missing}'}}]\n",
    );
    assert_eq!(
        r["errors"]["no session variable ${missing}"], 3,
        "{}",
        r["errors"]
    );
    assert_eq!(seen.connections.load(SeqCst), 0);
    assert_eq!(r["connections"]["connect"]["count"], 0);
}

/// `http.maxConnections` caps the connections open at once across every user: a user that
/// needs one waits, and the wait counts in its response time. Each user sends one slow
/// request on a connection of its own: at most as many are in progress as connections may
/// be open.
///
/// Catches: the cap ignored (fifty requests in progress at once), a permit kept after its
/// connection closed (the run never ends: `run` times out), and the wait left out of the
/// response time.
#[test]
fn max_connections_caps_the_connections_open_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let scenario = |http: &str| {
        format!(
            "baseUrl: BASE\n{http}scenarios:\n  - name: c\n    injection: [{{atOnceUsers: 50}}]\n    \
             steps: [{{request: {{name: r, path: /slow}}}}]\n"
        )
    };
    let (addr, seen) = serve();
    let r = run(dir.path(), addr, &scenario("http: {maxConnections: 10}\n"));
    assert_eq!(r["requests"]["r"]["ok"]["count"], 50, "{}", r["errors"]);
    assert_eq!(
        (seen.peak.load(SeqCst), seen.connections.load(SeqCst)),
        (10, 50)
    );
    // Five rounds of ten: the last users waited four rounds for a connection.
    let max = r["requests"]["r"]["ok"]["max"].as_f64().unwrap();
    assert!(max >= 800.0, "max {max} ms");

    let (addr, seen) = serve();
    let r = run(dir.path(), addr, &scenario(""));
    assert_eq!(r["requests"]["r"]["ok"]["count"], 50, "{}", r["errors"]);
    // Uncapped (1,000 by default), more than ten at once (all fifty, unless the machine is
    // too busy to open them within one request's 200 ms).
    assert!(
        seen.peak.load(SeqCst) > 10,
        "peak {}",
        seen.peak.load(SeqCst)
    );
    let max = r["requests"]["r"]["ok"]["max"].as_f64().unwrap();
    assert!(max < 800.0, "max {max} ms");
}

/// A path in `baseUrl` goes in front of every request's path, as Gatling's does.
#[test]
fn a_base_url_path_prefixes_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, seen) = serve();
    let r = run(
        dir.path(),
        addr,
        "baseUrl: BASE/api/\nscenarios:\n  - name: p\n    injection: [{atOnceUsers: 1}]\n    \
         steps: [{request: {name: r, path: /ok}}, {request: {name: q, path: '/ok?x=1'}}]\n",
    );
    assert_eq!(r["global"]["ok"]["count"], 2, "{}", r["errors"]);
    let lines: Vec<String> = seen.requests().into_iter().map(|g| g.line).collect();
    assert_eq!(lines, ["GET /api/ok HTTP/1.1", "GET /api/ok?x=1 HTTP/1.1"]);
}

/// Runs `volley run` on `yaml` under the shell's `ulimit` `limits` (e.g. `-Sn 40`); returns
/// results.json and stderr.
fn run_limited(
    dir: &Path,
    addr: SocketAddr,
    yaml: &str,
    limits: &str,
) -> (serde_json::Value, String) {
    let file = support::scenario_for(dir, addr, yaml);
    let volley = assert_cmd::cargo::cargo_bin("volley");
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!(
            "ulimit {limits} && exec \"$0\" run \"$1\" --out \"$2\""
        ))
        .arg(volley)
        .arg(&file)
        .arg(dir.join("out"))
        .output()
        .unwrap();
    (
        support::results(dir),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// volley raises its open-files soft limit to the hard one (a shell's soft 1,024 is below
/// what a load test opens); when even that is too low, connections fail with "Too many open
/// files" and the console says so once, with the limit and what to do.
///
/// Catches: the soft limit left as it was (60 users under a soft limit of 40 would fail), and
/// the message missing or said once per failed connection.
#[test]
fn the_open_files_limit_is_raised_and_running_out_is_said_once() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _) = serve();
    let yaml = "baseUrl: BASE\nscenarios:\n  - name: f\n    injection: [{atOnceUsers: 60}]\n    \
                steps: [{request: {name: r, path: /slow}}]\n";
    let (r, stderr) = run_limited(dir.path(), addr, yaml, "-Sn 40");
    assert_eq!(
        r["requests"]["r"]["ok"]["count"], 60,
        "{}\n{stderr}",
        r["errors"]
    );
    assert!(!stderr.contains("out of file descriptors"), "{stderr}");
    // The hard limit too: some users cannot connect.
    let (r, stderr) = run_limited(dir.path(), addr, yaml, "-n 40");
    let failed = support::field(&r, &["errors"])
        .as_object()
        .expect("results.json's errors is an object")
        .iter()
        .filter(|(e, _)| e.contains("Too many open files"))
        .map(|(e, n)| {
            n.as_u64()
                .unwrap_or_else(|| panic!("errors[{e:?}] is {n}, not a count"))
        })
        .sum::<u64>();
    assert!(failed > 0, "{}", r["errors"]);
    assert_eq!(
        stderr
            .matches("out of file descriptors (open-files limit 40)")
            .count(),
        1,
        "{stderr}"
    );
}
