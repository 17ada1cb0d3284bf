//! One test per scenario key that no other test pins: each drives the real `volley` binary
//! over real loopback sockets against a plain TCP server (support/http1.rs), which records
//! every request it reads (method, path, headers, body, when, on which connection), and each
//! fails if its key were ignored.
//!
//! Timing: where a test reads a clock, the behaviour makes the margin large (a 300 ms timeout
//! against a 2 s stall, a pause measured only from below), so a loaded 2-core machine cannot
//! turn it.

mod support;

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::time::{Duration, Instant};

use support::Killed;
use support::http1::{self, Answer, Got, OK, Seen};

const JSON: &[u8] =
    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n{\"id\":1}";

/// Serves HTTP/1.1 on a free port of 127.0.0.1 (see [`http1::serve`]), connections kept
/// open: `/stall` answers `200 ok` after 2 s, `/slow` after 600 ms, `/hold` once
/// [`Seen::released`] is set (30 s at most), `/json` answers `{"id":1}` as
/// `application/json`, any other path `200 ok` at once.
fn serve() -> (SocketAddr, Arc<Seen>) {
    http1::serve(route)
}

fn route(got: &Got, seen: &Seen) -> Answer {
    Answer::Keep(match got.path.as_str() {
        "/stall" => {
            std::thread::sleep(Duration::from_secs(2));
            OK
        }
        "/slow" => {
            std::thread::sleep(Duration::from_millis(600));
            OK
        }
        "/hold" => {
            let deadline = got.at + Duration::from_secs(30);
            while !seen.released.load(SeqCst) && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            OK
        }
        "/json" => JSON,
        _ => OK,
    })
}

/// Writes the scenario `yaml` (with `BASE` replaced by `addr`'s URL) and runs it; expects
/// exit code `code`; returns results.json and stdout.
fn run(dir: &Path, addr: SocketAddr, yaml: &str, code: i32) -> (serde_json::Value, String) {
    let file = support::scenario_for(dir, addr, yaml);
    let out = support::volley(dir, &file, &[]).code(code);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    (support::results(dir), stdout)
}

/// A listener on 127.0.0.1 that never accepts, with a backlog of 1 and its accept queue
/// filled by connections of the test's own: the kernel drops any further SYN, so a connect
/// to it neither completes nor fails. Returns its address, the listener and the connections
/// that fill it (keep them).
fn unanswered() -> (SocketAddr, TcpListener, Vec<TcpStream>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap();
    let listener = {
        let _enter = runtime.enter();
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        socket.listen(1).unwrap().into_std().unwrap()
    };
    let addr = listener.local_addr().unwrap();
    let mut fillers = Vec::new();
    loop {
        match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
            Ok(s) => fillers.push(s),
            Err(e) => {
                assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
                break;
            }
        }
        assert!(fillers.len() < 16, "the accept queue never filled");
    }
    (addr, listener, fillers)
}

/// One user, one request, with `steps` and optional top-level `extra` YAML.
fn one_user(extra: &str, steps: &str) -> String {
    format!(
        "baseUrl: BASE\nmaxDuration: 10s\n{extra}scenarios:\n  - name: s\n    \
         injection: [{{atOnceUsers: 1}}]\n    steps:\n{steps}"
    )
}

/// Runs one user with `steps` and top-level `extra` (see [`one_user`]) against a server of its
/// own, which must exit 0; returns results.json, stdout and what the server saw.
fn run_one_user(extra: &str, steps: &str) -> (serde_json::Value, String, Arc<Seen>) {
    let dir = tempfile::tempdir().unwrap();
    let (addr, seen) = serve();
    let (r, stdout) = run(dir.path(), addr, &one_user(extra, steps), 0);
    (r, stdout, seen)
}

/// Pins `http.connectTimeout`: a connect that never completes is KO "Connection timeout
/// after N ms" with the configured N, once that long has passed.
///
/// Catches: the key ignored (the default 5 s outlasts the 3 s maxDuration, so no request is
/// recorded at all, and a longer run would say "after 5000 ms"), and the wrong duration in
/// the message.
#[test]
fn connect_timeout_makes_a_hanging_connect_a_ko() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _listener, _fillers) = unanswered();
    let (r, _) = run(
        dir.path(),
        addr,
        "baseUrl: BASE\nmaxDuration: 3s\nhttp: {connectTimeout: 300ms}\nscenarios:\n  - name: c\n    \
         injection: [{atOnceUsers: 1}]\n    steps: [{request: {name: r, path: /ok}}]\n",
        0,
    );
    assert_eq!(
        r["errors"],
        serde_json::json!({"Connection timeout after 300 ms": 1}),
        "{r}"
    );
    assert_eq!(r["requests"]["r"]["ko"]["count"], 1);
    assert_eq!(r["cutAtMaxDuration"], false);
}

/// Pins `http.requestTimeout`: a response that takes 2 s is KO "Request timeout after
/// 300 ms" with a 300 ms timeout, recorded long before the 2 s are up.
///
/// Catches: the key ignored (the default 60 s lets the 2 s answer through: OK, no error),
/// and the wrong duration in the message. The bound on the KO's time (under 1.5 s, for a
/// timeout of 0.3 s and a stall of 2 s) leaves 1.2 s to a loaded machine.
#[test]
fn request_timeout_makes_a_slow_answer_a_ko() {
    let (r, _, seen) = run_one_user(
        "http: {requestTimeout: 300ms}\n",
        "      - request: {name: r, path: /stall}\n",
    );
    assert_eq!(
        r["errors"],
        serde_json::json!({"Request timeout after 300 ms": 1}),
        "{r}"
    );
    assert_eq!(r["requests"]["r"]["ok"]["count"], 0);
    let ko = r["requests"]["r"]["ko"]["max"].as_f64().unwrap();
    assert!((300.0..1500.0).contains(&ko), "KO after {ko} ms");
    assert_eq!(seen.requests().len(), 1);
}

/// Pins `http.headers`, `scenarios[].steps[].request.headers`, `request.method` and
/// `request.body`: the server reads the method, headers and body as configured; a request's
/// header replaces an `http.headers` one of the same name (for that request only), the
/// others of `http.headers` go with every request.
///
/// Catches: any of the four keys ignored (GET, no body, a header missing), `http.headers`
/// appended to instead of replaced by the request's (two `x-shared` values), and a
/// request's headers or method leaking into the next request.
#[test]
fn method_headers_and_body_arrive_as_configured() {
    let (r, _, seen) = run_one_user(
        "http:\n  headers: {X-Common: from-http, X-Shared: from-http}\n",
        "      - request:\n          name: put\n          method: PUT\n          path: /ok\n          \
         headers: {X-Shared: from-request, X-Own: mine}\n          body: 'hello {\"a\": 1}'\n      \
         - request: {name: get, path: /ok}\n",
    );
    assert_eq!(r["global"]["ok"]["count"], 2, "{}", r["errors"]);
    let got = seen.requests();
    assert_eq!(got.len(), 2);
    let (put, get) = (&got[0], &got[1]);
    assert_eq!((put.method.as_str(), put.path.as_str()), ("PUT", "/ok"));
    assert_eq!(put.body, "hello {\"a\": 1}");
    assert_eq!(put.header("content-length"), ["14"]);
    assert_eq!(put.header("x-common"), ["from-http"]);
    assert_eq!(put.header("x-shared"), ["from-request"]);
    assert_eq!(put.header("x-own"), ["mine"]);
    assert_eq!((get.method.as_str(), get.path.as_str()), ("GET", "/ok"));
    assert_eq!(get.body, "");
    assert_eq!(get.header("x-common"), ["from-http"]);
    assert_eq!(get.header("x-shared"), ["from-http"]);
    assert!(get.header("x-own").is_empty(), "{get:?}");
}

/// The threads of process `pid` named as tokio's workers: "tokio-rt-worker" (older tokio:
/// "tokio-runtime-worker", which the kernel cuts to 15 bytes).
fn tokio_workers(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|task| {
            std::fs::read_to_string(task.path().join("comm")).is_ok_and(|comm| {
                comm.trim_end() == "tokio-rt-worker" || comm.starts_with("tokio-runtime-w")
            })
        })
        .count()
}

/// Runs a scenario with `threads` whose one request the server holds; while it is held,
/// counts the child's tokio worker threads; then releases it and expects a clean exit.
fn workers_with(threads: usize) -> usize {
    let dir = tempfile::tempdir().unwrap();
    let (addr, seen) = serve();
    let yaml = one_user(
        &format!("threads: {threads}\n"),
        "      - request: {name: held, path: /hold}\n",
    )
    .replace("maxDuration: 10s", "maxDuration: 40s");
    let file = support::scenario_for(dir.path(), addr, &yaml);
    let mut child = Killed(support::spawn_run(dir.path(), &file, &[]));
    let mut stdout = support::started(&mut child.0);
    // The runtime (and its workers) is built before the run says it started; the held
    // request shows the run is under way.
    let deadline = Instant::now() + Duration::from_secs(30);
    while seen.requests().is_empty() {
        assert!(Instant::now() < deadline, "the request never arrived");
        std::thread::sleep(Duration::from_millis(10));
    }
    let workers = tokio_workers(child.0.id());
    seen.released.store(true, SeqCst);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.0.wait().unwrap().success(), "{rest}");
    let r = support::results(dir.path());
    assert_eq!(r["requests"]["held"]["ok"]["count"], 1, "{}", r["errors"]);
    workers
}

/// Pins `threads`: the load runs on exactly that many tokio worker threads, counted in
/// `/proc/PID/task` of the child while its one request is held by the server (so the count
/// is taken mid-run, with no clock involved).
///
/// Catches: the key ignored (one worker per core: on any machine, 1 and 3 cannot both be
/// its core count), and the count passed wrong (e.g. `threads + 1`).
#[test]
fn threads_sets_the_number_of_worker_threads() {
    assert_eq!(workers_with(1), 1);
    assert_eq!(workers_with(3), 3);
}

/// The number of console blocks in `stdout` (each has one "Requests" heading; the
/// end-of-run summary has none).
fn blocks(stdout: &str) -> usize {
    stdout
        .lines()
        .filter(|l| l.starts_with("---- Requests -"))
        .count()
}

/// Pins `consoleInterval`: a run of 2.5 s prints a block every 500 ms with
/// `consoleInterval: 500ms` (at 0.5, 1, 1.5, 2 s, and the end's: at least 4), and only the
/// end's with `10s`.
///
/// Catches: the key ignored (the default 5 s prints the end's block only), the printer
/// ticking once instead of every interval, and ticking faster than the interval (more than
/// one block per 500 ms of the run). Margin: the last tick counted is due 0.5 s before
/// the run can end (a pause of 2.5 s), and a late tick is caught up, not skipped.
#[test]
fn console_interval_sets_how_often_a_block_is_printed() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _) = serve();
    let scenario = |interval: &str| {
        one_user(
            &format!("consoleInterval: {interval}\n"),
            "      - request: {name: a, path: /ok}\n      - pause: 2500ms\n      \
             - request: {name: b, path: /ok}\n",
        )
    };
    let (r, stdout) = run(dir.path(), addr, &scenario("500ms"), 0);
    assert_eq!(r["global"]["ok"]["count"], 2, "{}", r["errors"]);
    // A tick every 500 ms of the run, the first 500 ms in, and the end's block.
    let most = (r["durationSeconds"].as_f64().unwrap() * 2.0).floor() as usize + 1;
    let n = blocks(&stdout);
    assert!((4..=most).contains(&n), "{n} blocks:\n{stdout}");
    let (_, stdout) = run(dir.path(), addr, &scenario("10s"), 0);
    assert_eq!(blocks(&stdout), 1, "{stdout}");
}

/// A run that ends just after a tick prints one block, the end's at 100%, not one at 99% and
/// then the end's. Its report is titled by the scenario (`s`, not the file), says nothing
/// of a closed model's correction (it is an open one), and the console's Global table has
/// decimals.
///
/// Catches: the tick's block printed as the run ends (two blocks), the file's name as the
/// title, the correction's sentence on an open model, and whole milliseconds in Global.
/// Margin: the tick is due at 2 s, the run ends near 2.3 s, the block would be printed at 3 s.
#[test]
fn a_run_ending_after_a_tick_prints_its_last_block_once() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _) = serve();
    let yaml = one_user(
        "consoleInterval: 2s\n",
        "      - pause: 2300ms\n      - request: {name: a, path: /ok}\n",
    );
    let (r, stdout) = run(dir.path(), addr, &yaml, 0);
    assert_eq!(r["global"]["ok"]["count"], 1, "{}", r["errors"]);
    assert_eq!(blocks(&stdout), 1, "{stdout}");
    assert!(stdout.contains("100%"), "{stdout}");
    let mean = stdout
        .lines()
        .find(|l| l.starts_with("> mean response time (ms)"))
        .unwrap();
    assert!(mean.split_whitespace().any(|w| w.contains('.')), "{mean}");
    let html = std::fs::read_to_string(dir.path().join("out/index.html")).unwrap();
    assert!(html.contains("<h1>s</h1>"), "title");
    assert!(!html.contains("corrected for coordinated omission"));
}

/// The count on the distribution row `label` of the end-of-run summary, if there is one.
fn distribution_row(stdout: &str, label: &str) -> Option<u64> {
    let prefix = format!("> {label} ");
    let line = stdout.lines().find(|l| l.starts_with(&prefix))?;
    line[prefix.len()..].split_whitespace().next()?.parse().ok()
}

/// Pins `distributionBounds`: with `[200, 500]` the Response Time Distribution rows read
/// `t < 200 ms`, `200 ms <= t < 500 ms`, `t >= 500 ms`, and a 600 ms response is counted
/// in the last.
///
/// Catches: the key ignored (rows at 800 and 1200 ms, where the 600 ms response would be in
/// the middle row), and the bounds swapped or read in other units.
#[test]
fn distribution_bounds_set_the_distribution_rows() {
    let (r, stdout, _) = run_one_user(
        "distributionBounds: [200, 500]\n",
        "      - request: {name: fast, path: /ok}\n      - request: {name: slow, path: /slow}\n",
    );
    assert_eq!(r["global"]["ok"]["count"], 2, "{}", r["errors"]);
    let below = distribution_row(&stdout, "OK: t < 200 ms");
    let middle = distribution_row(&stdout, "OK: 200 ms <= t < 500 ms");
    let above = distribution_row(&stdout, "OK: t >= 500 ms");
    assert_eq!(above, Some(1), "{stdout}");
    // The fast response is in one of the other two rows, however loaded the machine.
    assert_eq!(below.zip(middle).map(|(b, m)| b + m), Some(1), "{stdout}");
    assert_eq!(
        distribution_row(&stdout, "OK: t < 800 ms"),
        None,
        "{stdout}"
    );
}

/// Pins `scenarios[].name`: the console block heads each scenario's users with its name,
/// one heading a scenario.
///
/// Catches: the key ignored (no such heading), and the two scenarios' names mixed up or one
/// left out.
#[test]
fn scenario_names_head_their_console_sections() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _) = serve();
    let (r, stdout) = run(
        dir.path(),
        addr,
        "baseUrl: BASE\nmaxDuration: 10s\nscenarios:\n  - name: Quote lookups\n    \
         injection: [{atOnceUsers: 1}]\n    steps: [{request: {name: q, path: /ok}}]\n  \
         - name: Order entry\n    injection: [{atOnceUsers: 2}]\n    \
         steps: [{request: {name: o, path: /ok}}]\n",
        0,
    );
    assert_eq!(r["global"]["ok"]["count"], 3, "{}", r["errors"]);
    let headed = |name: &str| {
        let lines: Vec<&str> = stdout.lines().collect();
        let i = lines
            .iter()
            .rposition(|l| l.starts_with(&format!("---- {name} -")))
            .unwrap_or_else(|| panic!("no heading {name:?} in\n{stdout}"));
        // In the end's block, the users line under the progress bar: this scenario's done
        // count.
        lines[i + 2].to_owned()
    };
    assert!(
        headed("Quote lookups").ends_with("done:         1"),
        "{stdout}"
    );
    assert!(
        headed("Order entry").ends_with("done:         2"),
        "{stdout}"
    );
}

/// Pins `assertions[].condition.lte` and `assertions[].condition.gt` (and `lt`, `gte`,
/// `between` beside them): on a count of exactly 3 requests each passes on its side of 3
/// and fails on the other (`between` fails with 3 below its range and above it); any
/// failure is exit code 2, printed in Gatling's words, and written to results.json.
///
/// Catches: `lte` read as `lt` (3 <= 3 would fail) or `gt` as `gte` (3 > 3 would pass), any
/// comparison turned round or read as another (each pair of them differs on one of the
/// rows), `between` reading one bound only (`[1, 2]` would pass as `gte: 1`, `[4, 5]` as
/// `lte: 5`), and a failed assertion that does not set the exit code.
#[test]
fn assertion_conditions_compare_at_their_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, _) = serve();
    let conditions = [
        ("{lte: 3}", true),
        ("{lte: 2}", false),
        ("{gt: 2}", true),
        ("{gt: 3}", false),
        ("{lt: 4}", true),
        ("{lt: 3}", false),
        ("{gte: 3}", true),
        ("{gte: 4}", false),
        ("{between: [2, 3]}", true),
        ("{between: [4, 5]}", false),
        ("{between: [1, 2]}", false),
    ];
    let scenario = |conditions: &[(&str, bool)]| {
        let mut yaml = "baseUrl: BASE\nmaxDuration: 10s\nscenarios:\n  - name: a\n    \
                        injection: [{atOnceUsers: 3}]\n    steps: [{request: {name: r, path: /ok}}]\n\
                        assertions:\n"
            .to_owned();
        for (c, _) in conditions {
            yaml.push_str(&format!(
                "  - {{scope: global, stat: allRequests, metric: count, condition: {c}}}\n"
            ));
        }
        yaml
    };
    let (r, stdout) = run(dir.path(), addr, &scenario(&conditions), 2);
    let outcomes = r["assertions"].as_array().unwrap();
    let passed: Vec<bool> = outcomes
        .iter()
        .map(|o| o["passed"].as_bool().unwrap())
        .collect();
    let expected: Vec<bool> = conditions.iter().map(|(_, p)| *p).collect();
    assert_eq!(passed, expected, "{stdout}");
    assert!(outcomes.iter().all(|o| o["actual"] == 3.0), "{r}");
    for line in [
        "Global: count of all requests is less than or equal to 3.0 : true (actual : 3.0)",
        "Global: count of all requests is less than or equal to 2.0 : false (actual : 3.0)",
        "Global: count of all requests is greater than 2.0 : true (actual : 3.0)",
        "Global: count of all requests is greater than 3.0 : false (actual : 3.0)",
    ] {
        assert!(
            stdout.lines().any(|l| l == line),
            "no {line:?} in\n{stdout}"
        );
    }
    // The ones that hold, alone: exit 0.
    let holding: Vec<(&str, bool)> = conditions.into_iter().filter(|(_, p)| *p).collect();
    let (r, _) = run(dir.path(), addr, &scenario(&holding), 0);
    assert_eq!(r["assertions"].as_array().unwrap().len(), 5);
}

/// Pins `scenarios[].steps[].request.bodyContains`, `request.header.name` and
/// `request.header.contains`: a check that holds leaves the request OK; one that does not
/// makes it KO with the check's message in Gatling's words.
///
/// Catches: any of the three ignored (a failing check would pass: no KO, or a passing one
/// fail: `name` ignored finds no header), and the wrong text in the message.
#[test]
fn body_and_header_checks_make_requests_ko() {
    let (r, _, _) = run_one_user(
        "",
        "      - request: {name: body-ok, path: /json, bodyContains: '\"id\":1'}\n      \
         - request: {name: body-ko, path: /json, bodyContains: nope}\n      \
         - request: {name: header-ok, path: /json, header: {name: content-type, contains: json}}\n      \
         - request: {name: header-ko, path: /json, header: {name: content-type, contains: xml}}\n      \
         - request: {name: header-absent, path: /json, header: {name: x-missing, contains: json}}\n",
    );
    let counts = |name: &str| {
        let q = &r["requests"][name];
        (q["ok"]["count"].as_u64(), q["ko"]["count"].as_u64())
    };
    assert_eq!(counts("body-ok"), (Some(1), Some(0)), "{r}");
    assert_eq!(counts("body-ko"), (Some(0), Some(1)), "{r}");
    assert_eq!(counts("header-ok"), (Some(1), Some(0)), "{r}");
    assert_eq!(counts("header-ko"), (Some(0), Some(1)), "{r}");
    assert_eq!(counts("header-absent"), (Some(0), Some(1)), "{r}");
    assert_eq!(
        r["errors"],
        serde_json::json!({
            "body.find.contains(\"nope\"), but it was not found": 1,
            "header(content-type).find.contains(\"xml\"), but it was not found": 1,
            "header(x-missing).find.contains(\"json\"), but it was not found": 1,
        })
    );
}

/// The gap between the first two requests of each connection, in connection order.
fn gaps(seen: &Seen) -> Vec<Duration> {
    let got = seen.requests();
    let mut conns: Vec<usize> = got.iter().map(|g| g.conn).collect();
    conns.sort_unstable();
    conns.dedup();
    conns
        .into_iter()
        .map(|c| {
            let at: Vec<Instant> = got.iter().filter(|g| g.conn == c).map(|g| g.at).collect();
            assert_eq!(at.len(), 2, "connection {c}: {got:?}");
            at[1] - at[0]
        })
        .collect()
}

/// Pins `scenarios[].steps[].pause` (fixed): a user's request after `pause: 1s` reaches the
/// server at least 1 s after the one before it, and the run lasts at least that long.
///
/// Catches: the pause ignored (the two requests a few ms apart). Only a lower bound is
/// asserted, which no load on the machine can break.
#[test]
fn a_fixed_pause_delays_the_next_request() {
    let (r, _, seen) = run_one_user(
        "",
        "      - request: {name: a, path: /ok}\n      - pause: 1s\n      \
         - request: {name: b, path: /ok}\n",
    );
    assert_eq!(r["global"]["ok"]["count"], 2, "{}", r["errors"]);
    let gaps = gaps(&seen);
    assert_eq!(gaps.len(), 1);
    assert!(gaps[0] >= Duration::from_secs(1), "{gaps:?}");
    assert!(r["durationSeconds"].as_f64().unwrap() >= 1.0, "{r}");
}

/// `scenarios[].steps[].pause.min` and `pause.max` (uniform) over real sockets: 20 users
/// each pause between 400 and 600 ms between two requests; every gap the server sees is at
/// least 400 ms, and they spread above it. Each gap also holds the machine's latency, so
/// pauses of `max` alone would pass here: tests/paused.rs tells `min` from `max` on an
/// exact clock.
///
/// Catches: `min` ignored (0: of 20 draws from [0, 600) ms, some fall below 400 but for a
/// chance of (1/3)^20), `max` ignored (0: the file is refused, min being longer than max),
/// and the range collapsed to `min` (no gap above 450 ms; by chance with a uniform draw only
/// (1/4)^20). The upper bound (max + 1 s) is a sanity bound against a pause in the wrong
/// unit, wide enough for any load.
#[test]
fn a_uniform_pause_is_drawn_between_min_and_max() {
    let dir = tempfile::tempdir().unwrap();
    let (addr, seen) = serve();
    let (r, _) = run(
        dir.path(),
        addr,
        "baseUrl: BASE\nmaxDuration: 10s\nscenarios:\n  - name: u\n    injection: [{atOnceUsers: 20}]\n    \
         steps:\n      - request: {name: a, path: /ok}\n      - pause: {min: 400ms, max: 600ms}\n      \
         - request: {name: b, path: /ok}\n",
        0,
    );
    assert_eq!(r["global"]["ok"]["count"], 40, "{}", r["errors"]);
    let gaps = gaps(&seen);
    assert_eq!(gaps.len(), 20);
    assert!(
        gaps.iter().all(|g| *g >= Duration::from_millis(400)),
        "{gaps:?}"
    );
    assert!(
        gaps.iter().any(|g| *g > Duration::from_millis(450)),
        "{gaps:?}"
    );
    assert!(
        gaps.iter().all(|g| *g < Duration::from_millis(1600)),
        "{gaps:?}"
    );
}
