//! `volley` against a small hyper server inside the test: real sockets, the real binary.

mod support;

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use assert_cmd::Command;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};
use support::{Stall, check_fails, results, scenario};

/// The tests that judge timing (users per second, rates, stalls) run alone: the others start
/// volley runs of their own, and on a 2-core machine those can delay a ramp's users by half
/// a second. Every other test shares.
static TIMING: std::sync::RwLock<()> = std::sync::RwLock::new(());

fn alone() -> std::sync::RwLockWriteGuard<'static, ()> {
    TIMING
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn shared() -> std::sync::RwLockReadGuard<'static, ()> {
    TIMING
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Serves `/ok` (200), `/created` (201), `/missing` (404), `/slow` (200 after 300 ms) and
/// `/hold` (200 after a second) on a free port, on a runtime of its own. `/stalled` answers at
/// once, except that from 500 ms after the first request the whole server stalls for a
/// second (a GC pause, say). `/big-head` answers with a 1,500-byte header, `/big` with a
/// 100 kB body ending in `END`.
fn serve() -> SocketAddr {
    let stall = Stall::new(Duration::from_millis(500));
    support::serve(move |req: Request<hyper::body::Incoming>| {
        let stall = stall.clone();
        async move { respond(req.uri().path(), &stall).await }
    })
}

async fn respond(path: &str, stall: &Stall) -> Response<Full<Bytes>> {
    let (status, body) = match path {
        "/ok" => (200, "ok"),
        "/created" => (201, "created"),
        "/slow" => {
            tokio::time::sleep(Duration::from_millis(300)).await;
            (200, "slow")
        }
        "/hold" => {
            tokio::time::sleep(Duration::from_secs(1)).await;
            (200, "held")
        }
        "/json" => (200, r#"{"id":42,"name":"ACME"}"#),
        "/big-head" => {
            let mut r = Response::new(Full::new(Bytes::from("ok")));
            r.headers_mut()
                .insert("x-big", "a".repeat(1500).parse().unwrap());
            return r;
        }
        "/big" => {
            let body = format!("{}END", "b".repeat(100_000));
            return Response::new(Full::new(Bytes::from(body)));
        }
        p if p.starts_with("/echo/") => {
            let mut r = Response::new(Full::new(Bytes::from(p.to_owned())));
            *r.status_mut() = hyper::StatusCode::OK;
            return r;
        }
        "/stalled" => {
            stall.pass().await;
            (200, "ok")
        }
        _ => (404, "missing"),
    };
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::OK);
    r
}

/// `volley run FILE --out DIR/out`, stopped after a minute.
fn volley(dir: &Path, file: &Path) -> assert_cmd::assert::Assert {
    support::volley(dir, file, &[])
}

/// Runs the scenario `body` in `dir`, which must succeed; returns results.json.
fn succeed(dir: &Path, body: &str) -> serde_json::Value {
    let file = scenario(dir, body);
    volley(dir, &file).success();
    results(dir)
}

#[test]
fn open_model_sends_exactly_the_users_planned() {
    let _alone = alone();
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nscenarios:\n  - name: open\n    injection:\n      - atOnceUsers: 30\n      - rampUsers: 20\n        during: 1s\n      \
             - constantUsersPerSec: 40\n        during: 1s\n        randomized: true\n    steps:\n      - request: {{name: ok, path: /ok}}\n      \
             - request: {{name: missing, path: /missing, status: [404]}}\n"
        ),
    );
    let out = volley(dir.path(), &file).success();
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("---- Global Information"), "{stdout}");
    assert!(stdout.contains("> Global"), "{stdout}");
    let r = results(dir.path());
    assert_eq!(r["requests"]["ok"]["total"]["count"], 90);
    assert_eq!(
        r["requests"]["missing"]["ok"]["count"], 90,
        "an expected 404 is OK"
    );
    assert_eq!(r["global"]["ko"]["count"], 0);
    assert!(!r["global"]["histogram"].as_str().unwrap().is_empty());

    // The report: one self-contained file with the figures and the charts' data.
    let html = std::fs::read_to_string(dir.path().join("out/index.html")).unwrap();
    for section in [
        "Global Information",
        "Active users over time",
        "Requests and responses per second",
        "Response time percentiles over time",
        "Response time distribution",
        "Errors",
        "Assertions",
    ] {
        assert!(html.contains(section), "no {section:?} in the report");
    }
    assert!(
        html.contains("<td>missing</td><td>90</td><td>90</td>"),
        "the per-request table"
    );
    assert!(html.contains("uPlot"), "the chart library is embedded");
    assert!(
        !html.contains("<script src") && !html.contains("<link"),
        "nothing is loaded from elsewhere"
    );
    // `volley report` renders it again from results.json alone.
    std::fs::remove_file(dir.path().join("out/index.html")).unwrap();
    Command::cargo_bin("volley")
        .unwrap()
        .arg("report")
        .arg(dir.path().join("out/results.json"))
        .assert()
        .success();
    let again = std::fs::read_to_string(dir.path().join("out/index.html")).unwrap();
    assert!(
        again.contains("<td>missing</td><td>90</td><td>90</td>")
            && again.contains("Response time distribution")
    );
}

#[test]
fn closed_model_keeps_users_busy_and_kos_are_classified() {
    let _alone = alone();
    let addr = serve();
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let r = succeed(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nscenarios:\n  - name: closed\n    injection:\n      - constantConcurrentUsers: 5\n        during: 1s\n    \
             steps:\n      - request: {{name: slow, path: /slow}}\n      - request: {{name: created, path: /created, status: [200]}}\n"
        ),
    );
    // Five users, each 300 ms per round, for about a second: 15 to 25 rounds in all.
    let slow = r["requests"]["slow"]["total"]["count"].as_u64().unwrap();
    assert!((10..=30).contains(&slow), "{slow} slow requests");
    assert!(r["requests"]["slow"]["total"]["min"].as_f64().unwrap() >= 300.0);
    assert_eq!(
        r["errors"]["status.find.is(200), but actually found 201"],
        r["requests"]["created"]["total"]["count"]
    );

    // A target that refuses connections: every request is KO, classified.
    let r = succeed(
        dir.path(),
        &format!(
            "baseUrl: http://{closed}\nscenarios:\n  - name: refused\n    injection: [{{atOnceUsers: 3}}]\n    steps: [{{request: {{name: r, path: /ok}}}}]\n"
        ),
    );
    assert_eq!(r["errors"]["Connection refused"], 3, "{}", r["errors"]);
}

#[test]
fn max_duration_bounds_every_run() {
    let _alone = alone();
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nmaxDuration: 1s\nscenarios:\n  - name: long\n    injection:\n      - constantConcurrentUsers: 2\n        during: 1h\n    \
             steps: [{{request: {{name: ok, path: /ok}}}}, {{pause: {{min: 20ms, max: 80ms}}}}]\n"
        ),
    );
    let started = std::time::Instant::now();
    volley(dir.path(), &file).success();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the run was not cut at maxDuration"
    );
    let r = results(dir.path());
    assert_eq!(r["cutAtMaxDuration"], true);
    assert!(r["global"]["total"]["count"].as_u64().unwrap() > 5);
}

#[test]
fn a_bad_scenario_is_reported_with_lines_and_exit_1() {
    let _shared = shared();
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        "baseUrl: localhost:8080\nscenarios:\n  - name: bad\n    injection:\n      - constantUserPerSec: 5\n    steps:\n      - request: {name: x, path: nope}\n        pause: 1s\n      - pause: {min: 500ms, max: 100ms}\n",
    );
    let err = check_fails(&file);
    assert!(
        err.contains("scenario.yaml:1:10: Invalid value at: baseUrl"),
        "{err}"
    );
    assert!(
        err.contains(
            "scenario.yaml:5:9: Unrecognized field at: scenarios[0].injection[0].constantUserPerSec"
        ),
        "{err}"
    );
    assert!(err.contains("constantUsersPerSec"), "did you mean: {err}");
    assert!(err.contains("path; must start with /"), "{err}");
    assert!(
        err.contains("give exactly one of request, ws, sse, pause, repeat"),
        "{err}"
    );
    assert!(err.contains("scenario.yaml:9:16: Invalid value at: scenarios[0].steps[1].pause; min 500ms is longer than max 100ms"), "{err}");
}

/// The figure printed after `prefix` (up to the closing parenthesis) in `stdout`.
fn actual(stdout: &str, prefix: &str) -> f64 {
    let (_, rest) = stdout
        .split_once(prefix)
        .unwrap_or_else(|| panic!("no {prefix:?} in {stdout}"));
    rest.split(')').next().unwrap().trim().parse().unwrap()
}

#[test]
fn assertions_set_the_exit_code() {
    let _shared = shared();
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    let body = |lt_slow: u32| {
        format!(
            "baseUrl: http://{addr}\nscenarios:\n  - name: a\n    injection: [{{atOnceUsers: 4}}]\n    steps:\n      - request: {{name: slow, path: /slow}}\n      \
             - request: {{name: missing, path: /missing}}\nassertions:\n  \
             - {{scope: global, stat: responseTime, metric: {{percentile: 99}}, condition: {{lt: {lt_slow}}}}}\n  \
             - {{scope: {{details: missing}}, stat: failedRequests, metric: percent, condition: {{between: [99, 100]}}}}\n  \
             - {{scope: forAll, stat: allRequests, metric: count, condition: {{gte: 4}}}}\n"
        )
    };
    // Every assertion holds: exit 0, lines printed as Gatling prints them.
    let file = scenario(dir.path(), &body(5_000));
    let out = volley(dir.path(), &file).code(0);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    // The slow request takes 300 ms and more: as much more as a loaded machine adds, so
    // the figure is read, not matched.
    let p99 = actual(
        &stdout,
        "Global: 99th percentile of response time is less than 5000.0 : true (actual : ",
    );
    assert!((300.0..5000.0).contains(&p99), "{stdout}");
    assert!(
        stdout.contains(
            "missing: percentage of failed events is between 99.0 and 100.0 : true (actual : 100.0)"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("For all requests: count of all requests is greater than or equal to 4.0 : true (actual : 4.0)"), "{stdout}");
    // The slow request takes 300 ms: an assertion below that fails, exit 2.
    let file = scenario(dir.path(), &body(100));
    let out = volley(dir.path(), &file).code(2);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let p99 = actual(&stdout, "is less than 100.0 : false (actual : ");
    assert!(p99 >= 300.0, "{stdout}");
    assert_eq!(results(dir.path())["assertions"][0]["passed"], false);
}

#[test]
fn merging_runs_adds_their_histograms_exactly() {
    let _shared = shared();
    let addr = serve();
    let a = tempfile::tempdir().unwrap();
    let b = tempfile::tempdir().unwrap();
    let run = |dir: &Path, path: &str, users: u32| {
        succeed(
            dir,
            &format!(
                "baseUrl: http://{addr}\nscenarios:\n  - name: m\n    injection: [{{atOnceUsers: {users}}}]\n    steps: [{{request: {{name: r, path: {path}}}}}]\n"
            ),
        )
    };
    let fast = run(a.path(), "/ok", 40);
    let slow = run(b.path(), "/slow", 10);
    let merged_path = a.path().join("merged.json");
    Command::cargo_bin("volley")
        .unwrap()
        .arg("merge")
        .arg(a.path().join("out/results.json"))
        .arg(b.path().join("out/results.json"))
        .arg("-o")
        .arg(&merged_path)
        .assert()
        .success();
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged_path).unwrap()).unwrap();
    let g = &merged["global"]["total"];
    assert_eq!(g["count"], 50);
    assert_eq!(g["max"], slow["global"]["total"]["max"]);
    assert_eq!(g["min"], fast["global"]["total"]["min"]);
    // 10 of 50 responses took 300 ms or more: the 75th percentile is fast, the 95th is slow.
    assert!(g["p75"].as_f64().unwrap() < 300.0, "{g}");
    assert!(g["p95"].as_f64().unwrap() >= 300.0, "{g}");
    assert_eq!(merged["requests"]["r"]["ok"]["count"], 50);
    // Merging a run with itself doubles the counts and keeps every percentile.
    Command::cargo_bin("volley")
        .unwrap()
        .arg("merge")
        .arg(b.path().join("out/results.json"))
        .arg(b.path().join("out/results.json"))
        .arg("-o")
        .arg(&merged_path)
        .assert()
        .success();
    let twice: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&merged_path).unwrap()).unwrap();
    assert_eq!(twice["global"]["total"]["count"], 20);
    assert_eq!(
        twice["global"]["total"]["p99"],
        slow["global"]["total"]["p99"]
    );
    // Not a results file: exit 1 with the file named.
    std::fs::write(a.path().join("junk.json"), "{}").unwrap();
    let out = Command::cargo_bin("volley")
        .unwrap()
        .arg("merge")
        .arg(a.path().join("junk.json"))
        .arg("-o")
        .arg(&merged_path)
        .assert()
        .code(1);
    assert!(
        String::from_utf8_lossy(&out.get_output().stderr)
            .contains("junk.json is not a volley results.json")
    );
}

/// Ctrl-C (130) and SIGTERM (143, a Kubernetes pod stopped, a CI job cancelled) end the run
/// with its results written.
///
/// Catches: a signal that ends the process by its default action (no results), the wrong
/// exit code.
#[test]
fn ctrl_c_and_sigterm_still_write_the_results_of_what_ran() {
    let _shared = shared();
    for (signal, code) in [
        (nix::sys::signal::Signal::SIGINT, 130),
        (nix::sys::signal::Signal::SIGTERM, 143),
    ] {
        stopped_by(signal, code);
    }
}

fn stopped_by(signal: nix::sys::signal::Signal, code: i32) {
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nscenarios:\n  - name: long\n    injection: [{{constantConcurrentUsers: 4, during: 1h}}]\n    steps: [{{request: {{name: r, path: /ok}}}}, {{pause: 20ms}}]\n"
        ),
    );
    let mut child = support::spawn_run(dir.path(), &file, &[]);
    // Interrupted once it has said that it started (its handler is in place by then), and
    // has run a while: however slow the machine, some requests are done.
    let mut stdout = support::started(&mut child);
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), signal).unwrap();
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut rest).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(code));
    let stdout = String::from_utf8_lossy(&rest);
    assert!(stdout.contains("---- Global Information"), "{stdout}");
    let r = results(dir.path());
    assert!(
        r["global"]["total"]["count"].as_u64().unwrap() > 0,
        "{}",
        r["global"]
    );
}

#[test]
fn the_readme_scenario_is_valid() {
    let _shared = shared();
    let readme = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/volley/concepts.md"),
    )
    .unwrap();
    let section = readme
        .split("\n## volley\n")
        .nth(1)
        .expect("a volley section");
    let yaml = section
        .split("```yaml volley\n")
        .nth(1)
        .and_then(|s| s.split("```").next())
        .expect("a yaml block");
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(dir.path(), yaml);
    Command::cargo_bin("volley")
        .unwrap()
        .arg("check")
        .arg(&file)
        .assert()
        .success();
}

#[test]
fn feeders_and_saved_values_fill_session_variables() {
    let _shared = shared();
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("symbols.csv"),
        "symbol,qty\nACME,1\nGLOBEX,2\nINITECH,3\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("two.csv"), "symbol\nA\nB\n").unwrap();
    // `${TARGET_URL}` (capitals) is the environment; the others are session variables.
    let yaml = r#"baseUrl: ${TARGET_URL}
scenarios:
  - name: circular
    injection: [{atOnceUsers: 6}]
    steps:
      - feed: {file: symbols.csv, strategy: circular}
      - request: {name: echo, path: '/echo/${symbol}/${qty}', bodyContains: '${symbol}/${qty}'}
      - request: {name: json, path: /json, save: {jsonPointer: /id, name: id}}
      - request: {name: saved, path: '/echo/item-${id}', bodyContains: item-42}
      - request: {name: matched, path: /json, bodyMatches: '"id":\d+', header: {name: content-length, contains: '2'}}
      - request: {name: unmatched, path: /json, bodyMatches: '"id":"\w+"'}
      - request: {name: missing, path: /json, save: {jsonPointer: /nope, name: x}}
      - request: {name: unknown, path: '/echo/${nothing}'}
  - name: queue
    injection: [{atOnceUsers: 3}]
    steps:
      - feed: {file: two.csv}
      - request: {name: queued, path: '/echo/${symbol}'}
"#;
    let file = scenario(dir.path(), yaml);
    Command::cargo_bin("volley")
        .unwrap()
        .env("TARGET_URL", format!("http://{addr}"))
        .arg("run")
        .arg(&file)
        .arg("--out")
        .arg(dir.path().join("out"))
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    let r = results(dir.path());
    let q = &r["requests"];
    assert_eq!(
        q["echo"]["ok"]["count"], 6,
        "every symbol and quantity filled in: {}",
        r["errors"]
    );
    assert_eq!(
        q["saved"]["ok"]["count"], 6,
        "the saved id was used: {}",
        r["errors"]
    );
    assert_eq!(r["errors"]["jsonPointer(/nope) not found"], 6);
    assert_eq!(q["matched"]["ok"]["count"], 6, "{}", r["errors"]);
    assert_eq!(
        r["errors"][r#"regex("\"id\":\"\\w+\"").find.exists, but it was not found"#], 6,
        "{}",
        r["errors"]
    );
    assert_eq!(r["errors"]["no session variable ${nothing}"], 6);
    // A queue of two records serves two users; the third finds it empty.
    assert_eq!(q["queued"]["ok"]["count"], 2);
    assert_eq!(r["errors"]["feeder two.csv is empty"], 1);
}

/// The throttle's rate is judged on tokio's paused clock (tests/paused.rs) and its limiter
/// in a table (src/engine.rs); here, a bad step is reported where it is.
#[test]
fn a_bad_throttle_step_is_reported_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        "baseUrl: http://127.0.0.1:1\nthrottle: [{reachRps: 10}]\nscenarios:\n  - name: t\n    injection: [{atOnceUsers: 1}]\n    steps: [{pause: 1s}]\n",
    );
    let err = check_fails(&file);
    assert!(
        err.contains("scenario.yaml:2:12: Invalid value at: throttle[0]; reachRps needs `in`"),
        "{err}"
    );
}

/// A ramp of concurrent users is judged on tokio's paused clock (tests/paused.rs); here,
/// its mistakes are reported where they are.
#[test]
fn a_bad_concurrent_ramp_is_reported_where_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        "baseUrl: http://127.0.0.1:1\nscenarios:\n  - name: r\n    injection:\n      - rampConcurrentUsers: 1\n        during: 1s\n      \
         - rampConcurrentUsers: 1\n        to: 2.5\n        during: 1s\n      - rampConcurrentUsers: 1\n        to: 2\n    steps: [{pause: 1s}]\n",
    );
    let err = check_fails(&file);
    assert!(
        err.contains("scenario.yaml:5:9: Invalid value at: scenarios[0].injection[0]; rampConcurrentUsers needs `to`"),
        "{err}"
    );
    assert!(
        err.contains(
            "injection[1]; `to` of rampConcurrentUsers must be a number of users, not 2.5"
        ),
        "{err}"
    );
    assert!(
        err.contains("injection[2]; rampConcurrentUsers needs `during`"),
        "{err}"
    );
}

#[test]
fn json_checks_pass_and_fail_in_gatlings_words() {
    let _shared = shared();
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("names.csv"), "symbol\nACME\nGLOBEX\n").unwrap();
    let yaml = format!(
        r#"baseUrl: http://{addr}
scenarios:
  - name: json
    injection: [{{atOnceUsers: 2}}]
    steps:
      - feed: {{file: names.csv}}
      - request: {{name: exists, path: /json, json: {{pointer: /id}}}}
      - request: {{name: text, path: /json, json: {{pointer: /name, equals: ACME}}}}
      - request: {{name: number, path: /json, json: {{pointer: /id, equals: 42}}}}
      - request: {{name: wrong, path: /json, json: {{pointer: /id, equals: '43'}}}}
      - request: {{name: absent, path: /json, json: {{pointer: /nope}}}}
      - request: {{name: session, path: /json, json: {{pointer: /name, equals: '${{symbol}}'}}}}
      - request: {{name: notjson, path: /ok, json: {{pointer: /id}}}}
"#
    );
    let r = succeed(dir.path(), &yaml);
    let q = &r["requests"];
    for name in ["exists", "text", "number"] {
        assert_eq!(q[name]["ok"]["count"], 2, "{name}: {}", r["errors"]);
    }
    let errors = &r["errors"];
    assert_eq!(
        errors["jsonPointer(/id).find.is(43), but actually found 42"], 2,
        "{errors}"
    );
    assert_eq!(
        errors["jsonPointer(/nope).find.exists, but it was not found"], 2,
        "{errors}"
    );
    // The user fed GLOBEX expects it; the one fed ACME finds it.
    assert_eq!(q["session"]["ok"]["count"], 1, "{errors}");
    assert_eq!(
        errors["jsonPointer(/name).find.is(GLOBEX), but actually found ACME"], 1,
        "{errors}"
    );
    assert_eq!(
        errors["jsonPointer(/id).find.exists preparation crashed: the body is not JSON"], 2,
        "{errors}"
    );

    // A pointer that is not one is refused when the file is loaded.
    let file = scenario(
        dir.path(),
        "baseUrl: http://127.0.0.1:1\nscenarios:\n  - name: j\n    injection: [{atOnceUsers: 1}]\n    steps:\n      - request: {name: j, path: /json, json: {pointer: id}}\n",
    );
    let err = check_fails(&file);
    assert!(
        err.contains("Invalid value at: scenarios[0].steps[0].request.json.pointer; must be empty or start with /"),
        "{err}"
    );
}

#[test]
fn a_file_fed_with_two_strategies_has_a_feeder_for_each() {
    let _shared = shared();
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("two.csv"), "symbol\nA\nB\n").unwrap();
    // The circular feeder never runs dry; the queue of the same file serves two users.
    let yaml = format!(
        r#"baseUrl: http://{addr}
scenarios:
  - name: circular
    injection: [{{atOnceUsers: 3}}]
    steps:
      - feed: {{file: two.csv, strategy: circular}}
      - request: {{name: circular, path: '/echo/${{symbol}}'}}
  - name: queue
    injection: [{{nothingFor: 500ms}}, {{atOnceUsers: 3}}]
    steps:
      - feed: {{file: two.csv, strategy: queue}}
      - request: {{name: queued, path: '/echo/${{symbol}}'}}
"#
    );
    let r = succeed(dir.path(), &yaml);
    assert_eq!(
        r["requests"]["circular"]["ok"]["count"], 3,
        "{}",
        r["errors"]
    );
    assert_eq!(r["requests"]["queued"]["ok"]["count"], 2, "{}", r["errors"]);
    assert_eq!(r["errors"]["feeder two.csv is empty"], 1, "{}", r["errors"]);
}

#[test]
fn http_read_buffer_bounds_the_response_head_not_the_body() {
    let _shared = shared();
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    let run = |read_buffer: &str| {
        succeed(
            dir.path(),
            &format!(
                "baseUrl: http://{addr}\n{read_buffer}scenarios:\n  - name: b\n    injection: [{{atOnceUsers: 2}}]\n    \
                 steps:\n      - request: {{name: head, path: /big-head}}\n      - request: {{name: body, path: /big, bodyContains: END}}\n"
            ),
        )
    };
    // The default, 2 KiB, holds a 1,500-byte header; 100 kB bodies pass through any buffer.
    let r = run("");
    assert_eq!(r["global"]["ok"]["count"], 4, "{}", r["errors"]);
    let r = run("http: {readBuffer: 1KiB}\n");
    assert_eq!(r["requests"]["body"]["ok"]["count"], 2, "{}", r["errors"]);
    assert_eq!(
        r["errors"]["Response head larger than http.readBuffer (1KiB)"], 2,
        "{}",
        r["errors"]
    );
    // Too small a buffer is refused when the file is loaded.
    let file = scenario(
        dir.path(),
        "baseUrl: http://127.0.0.1:1\nhttp:\n  readBuffer: 100B\nscenarios:\n  - name: b\n    injection: [{atOnceUsers: 1}]\n    steps: [{pause: 1s}]\n",
    );
    let err = check_fails(&file);
    assert!(
        err.contains(
            "scenario.yaml:3:15: Invalid value at: http.readBuffer; must be at least 512B"
        ),
        "{err}"
    );
}

fn volley_cmd() -> Command {
    Command::cargo_bin("volley").unwrap()
}

#[test]
fn the_committed_schema_is_what_volley_schema_prints() {
    let _shared = shared();
    let out = volley_cmd().arg("schema").assert().success();
    let printed = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let committed =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("results.schema.json"))
            .unwrap();
    assert!(
        printed == committed,
        "crates/volley/results.schema.json is out of date; write it again with \
         `cargo run -p volley -- schema > crates/volley/results.schema.json`"
    );
}

#[test]
fn results_json_follows_its_schema_and_a_newer_one_is_refused() {
    let _shared = shared();
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    // An assertion on a request that does not exist has nothing to measure: `actual` is
    // null, and the file must still validate and load.
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nscenarios:\n  - name: s\n    injection: [{{atOnceUsers: 3}}]\n    \
             steps: [{{request: {{name: r, path: /ok}}}}, {{request: {{name: m, path: /missing}}}}]\n\
             assertions:\n  - {{scope: {{details: nothere}}, stat: allRequests, metric: count, condition: {{gt: 0}}}}\n"
        ),
    );
    volley(dir.path(), &file).code(2);
    let r = results(dir.path());
    assert_eq!(r["schema"], 2);
    // An open model: nothing corrected, so no correction named.
    assert!(r["coordinatedOmission"].is_null());
    assert_eq!(r["seriesInterval"], 1);
    assert!(r["assertions"][0]["actual"].is_null());
    // A connection per user, its connect time apart; no TLS to a plain http:// target.
    assert_eq!(r["connections"]["connect"]["count"], 3);
    assert!(r["connections"]["connect"]["max"].as_f64().unwrap() > 0.0);
    assert_eq!(r["connections"]["tlsHandshake"]["count"], 0);
    let schema: serde_json::Value = serde_json::from_slice(
        &std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("results.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let problems: Vec<String> = validator.iter_errors(&r).map(|e| e.to_string()).collect();
    assert!(problems.is_empty(), "{problems:#?}");
    // The schema is not vacuous: a file missing a field, or with one of the wrong type, fails.
    let mut broken = r.clone();
    broken.as_object_mut().unwrap().remove("global");
    assert!(!validator.is_valid(&broken));
    let mut broken = r.clone();
    broken["seconds"][0]["requests"] = serde_json::json!("many");
    assert!(!validator.is_valid(&broken));

    // `report` reads it back; a newer schema is refused by `report` and `merge`, exit 1.
    let path = dir.path().join("out/results.json");
    volley_cmd().arg("report").arg(&path).assert().success();
    let mut newer = r.clone();
    newer["schema"] = serde_json::json!(3);
    let newer_path = dir.path().join("newer.json");
    std::fs::write(&newer_path, serde_json::to_vec(&newer).unwrap()).unwrap();
    for args in [vec!["report"], vec!["merge", "-o", "merged.json"]] {
        let out = volley_cmd()
            .current_dir(dir.path())
            .args(&args)
            .arg(&newer_path)
            .assert()
            .code(1);
        let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
        assert!(
            stderr.contains("newer.json has results schema 3, newer than schema 2"),
            "{args:?}: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    // A file of an older volley, without `schema` (nor `seriesInterval`), still loads.
    let mut older = r.clone();
    older.as_object_mut().unwrap().remove("schema");
    older.as_object_mut().unwrap().remove("seriesInterval");
    let older_path = dir.path().join("older.json");
    std::fs::write(&older_path, serde_json::to_vec(&older).unwrap()).unwrap();
    volley_cmd()
        .arg("report")
        .arg(&older_path)
        .assert()
        .success();
    volley_cmd()
        .arg("merge")
        .arg(&older_path)
        .arg(&path)
        .arg("-o")
        .arg(dir.path().join("merged.json"))
        .assert()
        .success();
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("merged.json")).unwrap()).unwrap();
    assert_eq!(merged["global"]["total"]["count"], 12);
    assert_eq!(merged["schema"], 2);
    let problems: Vec<String> = validator
        .iter_errors(&merged)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{problems:#?}");
}

/// `http.tls` with a plain `http://` target, `caFile` beside `insecure: true` (quoted too), a
/// version volley does not speak, and a user name in `baseUrl` are each refused where they
/// are written; `version: 2` and `1.1`, written as numbers, are the versions' names.
#[test]
fn http_settings_that_could_not_act_are_refused_where_written() {
    let dir = tempfile::tempdir().unwrap();
    let body = |base: &str, http: &str| {
        format!(
            "baseUrl: {base}\nhttp:\n{http}scenarios:\n  - name: s\n    injection: [{{atOnceUsers: 1}}]\n    steps: [{{pause: 1s}}]\n"
        )
    };
    let file = scenario(
        dir.path(),
        &body(
            "http://127.0.0.1:1",
            "  tls: {insecure: true}\n  version: 3\n",
        ),
    );
    let err = check_fails(&file);
    assert!(
        err.contains(
            "scenario.yaml:3:3: Invalid value at: http.tls; tls applies to an https:// baseUrl only"
        ),
        "{err}"
    );
    assert!(
        err.contains("scenario.yaml:4:12: Incorrect type of value at: http.version")
            && err.contains("expected: one of 1.1, 2"),
        "{err}"
    );
    let file = scenario(
        dir.path(),
        &body(
            "https://127.0.0.1:1",
            "  tls:\n    insecure: true\n    caFile: ca.pem\n",
        ),
    );
    let err = check_fails(&file);
    assert!(
        err.contains("scenario.yaml:5:5: Invalid value at: http.tls.caFile; caFile has no effect with insecure: true"),
        "{err}"
    );
    let file = scenario(
        dir.path(),
        &body(
            "https://127.0.0.1:1",
            "  tls:\n    insecure: 'TRUE'\n    caFile: ca.pem\n",
        ),
    );
    let err = check_fails(&file);
    assert!(
        err.contains("http.tls.caFile; caFile has no effect"),
        "{err}"
    );
    let file = scenario(dir.path(), &body("https://user:secret@127.0.0.1:1", ""));
    let err = check_fails(&file);
    assert!(
        err.contains("baseUrl; must not hold a user name or password"),
        "{err}"
    );
    for version in ["2", "1.1", "'2'"] {
        let file = scenario(
            dir.path(),
            &body("https://127.0.0.1:1", &format!("  version: {version}\n")),
        );
        Command::cargo_bin("volley")
            .unwrap()
            .arg("check")
            .arg(&file)
            .assert()
            .success();
    }
}
