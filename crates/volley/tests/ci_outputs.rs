//! What CI reads: `--junit FILE` and `--csv DIR` of `volley run` and `volley report`, from the
//! real binary against a small hyper server on loopback, read back with a real XML parser
//! (roxmltree) and the csv crate.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use assert_cmd::Command;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};

mod support;
use support::{results, scenario, volley};

/// Serves `/ok` (200) and anything else as 404 on a free port.
fn serve() -> SocketAddr {
    support::serve(|req: Request<hyper::body::Incoming>| {
        let status = if req.uri().path() == "/ok" { 200 } else { 404 };
        let mut response = Response::new(Full::new(Bytes::from("ok")));
        *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
        async move { response }
    })
}

/// The request name XML must escape: `<`, `&` and `"`.
const ODD_NAME: &str = r#"a<b&"c""#;

/// One assertion that holds and one that cannot (no response takes less than 0 ms), on a
/// request whose name XML must escape: exit 2, and the JUnit file has a test case each, named
/// by Gatling's sentence, the failed one with a failure giving the sentence and the measured
/// value, and the name read back as written.
///
/// Catches: every test case written without its failure, the failures count of the passed
/// ones, the message without the measured value, a name written unescaped (the file does
/// not parse), the file skipped when an assertion failed.
#[test]
fn junit_has_a_test_case_per_assertion_and_a_failure_for_the_one_that_failed() {
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nscenarios:\n  - name: s\n    injection: [{{constantUsersPerSec: 10, during: 1s}}]\n    steps:\n      \
             - request: {{name: ok, path: /ok}}\n      - request: {{name: '{ODD_NAME}', path: /ok}}\nassertions:\n  \
             - {{scope: global, stat: failedRequests, metric: percent, condition: {{lte: 0}}}}\n  \
             - {{scope: {{details: '{ODD_NAME}'}}, stat: responseTime, metric: max, condition: {{lt: 0}}}}\n"
        ),
    );
    let junit = dir.path().join("reports/junit.xml");
    let out = volley(dir.path(), &file, &[Path::new("--junit"), &junit]).code(2);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(
        stdout.contains(&format!("JUnit: {}", junit.display())),
        "{stdout}"
    );

    let text = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{e}: {text}"));
    let root = doc.root_element();
    assert_eq!(root.tag_name().name(), "testsuites");
    assert_eq!(
        (root.attribute("tests"), root.attribute("failures")),
        (Some("2"), Some("1"))
    );
    let suite = root.first_element_child().unwrap();
    assert_eq!(suite.tag_name().name(), "testsuite");
    assert_eq!(suite.attribute("name"), Some("scenario"));
    assert_eq!(
        (suite.attribute("tests"), suite.attribute("failures")),
        (Some("2"), Some("1"))
    );
    assert!(suite.attribute("timestamp").is_some());
    let r = results(dir.path());
    let duration = r["durationSeconds"].as_f64().unwrap();
    assert!(duration > 0.5, "{duration}");
    assert_eq!(
        suite.attribute("time"),
        Some(format!("{duration:.3}").as_str())
    );

    let cases: Vec<_> = suite.children().filter(|n| n.is_element()).collect();
    assert_eq!(cases.len(), 2, "{text}");
    assert!(cases.iter().all(|c| c.tag_name().name() == "testcase"));
    let outcomes = &r["assertions"];
    let passed = cases[0];
    assert_eq!(
        passed.attribute("name"),
        Some("Global: percentage of failed events is less than or equal to 0.0")
    );
    assert_eq!(
        passed.attribute("name"),
        outcomes[0]["description"].as_str()
    );
    assert_eq!(passed.children().filter(|n| n.is_element()).count(), 0);

    let failed = cases[1];
    let sentence = format!("{ODD_NAME}: max of response time is less than 0.0");
    assert_eq!(failed.attribute("name"), Some(sentence.as_str()));
    assert_eq!(
        failed.attribute("name"),
        outcomes[1]["description"].as_str()
    );
    assert_eq!(failed.attribute("classname"), Some("scenario"));
    let failure = failed.first_element_child().unwrap();
    assert_eq!(failure.tag_name().name(), "failure");
    let actual = outcomes[1]["actual"].as_f64().unwrap();
    assert!(actual > 0.0);
    assert_eq!(
        failure.attribute("message"),
        Some(format!("{sentence} : actual value {actual:.1}").as_str())
    );
    assert_eq!(
        failure.text(),
        Some(format!("{sentence} : false (actual : {actual:.1})").as_str()),
        "the console's line"
    );
}

/// A CSV file's header and rows.
fn rows(path: &Path) -> (Vec<String>, Vec<csv::StringRecord>) {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header = reader.headers().unwrap().iter().map(String::from).collect();
    let rows = reader.records().map(Result::unwrap).collect();
    (header, rows)
}

/// `row`'s value in the column `name`.
fn column<'a>(header: &[String], row: &'a csv::StringRecord, name: &str) -> &'a str {
    let i = header.iter().position(|h| h == name).unwrap();
    &row[i]
}

/// Serves as [`serve`] does, each answer a millisecond later than the one before (the n-th
/// after n ms): no two response times are alike, so every percentile of a run differs from
/// the others, in all and in each second.
fn serve_spread() -> SocketAddr {
    let answered = Arc::new(AtomicU64::new(0));
    support::serve(move |req: Request<hyper::body::Incoming>| {
        let n = answered.fetch_add(1, Ordering::Relaxed);
        let status = if req.uri().path() == "/ok" { 200 } else { 404 };
        async move {
            tokio::time::sleep(Duration::from_millis(n)).await;
            let mut response = Response::new(Full::new(Bytes::from("ok")));
            *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
            response
        }
    })
}

/// The figure of results.json that `requests.csv`'s column `col` holds, in `figures` (the
/// global figures or a request's).
fn request_figure<'a>(figures: &'a serde_json::Value, col: &str) -> &'a serde_json::Value {
    let figure = match col {
        "count" => &figures["total"]["count"],
        "ok" | "ko" => &figures[col]["count"],
        "min" | "p50" | "p75" | "p95" | "p99" | "max" | "mean" | "stdDev" => &figures["total"][col],
        "meanRps" => &figures["meanRps"],
        _ => panic!("requests.csv has a column {col:?} this test does not know"),
    };
    assert!(
        !figure.is_null(),
        "results.json has no figure for {col:?}: {figures}"
    );
    figure
}

/// Whether the CSV cell `cell` is the number `figure` of results.json: a count written as the
/// same integer, a time or a rate read back as the same `f64`.
fn same_number(cell: &str, figure: &serde_json::Value) -> bool {
    match figure.as_u64() {
        Some(n) => cell == n.to_string(),
        None => cell.parse::<f64>().ok() == figure.as_f64(),
    }
}

/// `--csv DIR` writes the series (a row per entry of `seconds`) and the per-request table
/// (the global row first, then a row per request name), each with its header; every cell of
/// every row is the figure of results.json its column names, found by the column's name, and
/// the run's response times all differ (each answer a millisecond later than the one before),
/// so that the percentiles differ from each other and a column that holds another's figure
/// shows. `volley report RESULTS --csv` writes the same files from results.json, and a run
/// without assertions gives a JUnit suite of no test cases.
///
/// Catches: a series entry skipped, two columns swapped or one holding another's figure (p95
/// and p99, p50 and p75, min and max, mean and stdDev, a request's OK and KO), a field of
/// results.json's series entries without its column, the global row left out or not told
/// from a request named `Global`, `report` ignoring `--csv`, a run without assertions writing
/// no JUnit file.
#[test]
fn csv_files_hold_every_figure_of_results_json() {
    let addr = serve_spread();
    let dir = tempfile::tempdir().unwrap();
    // One thread, so one stripe of measurements: a series entry's percentiles are those of
    // its responses, not the highest of several stripes' (which may coincide).
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nthreads: 1\nscenarios:\n  - name: s\n    injection: [{{constantUsersPerSec: 30, during: 2s}}]\n    steps:\n      \
             - request: {{name: Global, path: /ok}}\n      - request: {{name: missing, path: /missing}}\n"
        ),
    );
    let csv_dir = dir.path().join("csv");
    let junit = dir.path().join("junit.xml");
    volley(
        dir.path(),
        &file,
        &[Path::new("--csv"), &csv_dir, Path::new("--junit"), &junit],
    )
    .success();
    let r = results(dir.path());

    // The run's percentiles differ, in all, for each request and in the series: a column
    // swapped with another changes what the files hold.
    let figures = std::iter::once(("all requests", &r["global"])).chain(
        r["requests"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(name, f)| (name.as_str(), f)),
    );
    for (name, f) in figures {
        let t = &f["total"];
        let times: Vec<f64> = ["min", "p50", "p75", "p95", "p99"]
            .iter()
            .map(|k| t[*k].as_f64().unwrap())
            .collect();
        assert!(
            times.windows(2).all(|w| w[0] < w[1]),
            "{name}: min and the percentiles are not all different: {t}"
        );
        assert_ne!(t["mean"], t["stdDev"], "{name}: {t}");
    }
    for (name, f) in r["requests"].as_object().unwrap() {
        assert_ne!(f["ok"]["count"], f["ko"]["count"], "{name}: {f}");
    }
    let seconds = r["seconds"].as_array().unwrap();
    assert!(seconds.len() >= 2, "a 2 s injection: {seconds:?}");
    assert!(
        seconds.iter().any(|e| {
            let (p50, p95, p99) = (e["p50"].as_f64(), e["p95"].as_f64(), e["p99"].as_f64());
            p50 < p95 && p95 < p99
        }),
        "no entry of the series whose percentiles all differ: {seconds:?}"
    );

    let (header, series) = rows(&csv_dir.join("series.csv"));
    assert_eq!(
        header,
        [
            "second",
            "requests",
            "ok",
            "ko",
            "activeUsers",
            "p50",
            "p95",
            "p99"
        ]
    );
    assert_eq!(series.len(), seconds.len());
    for (i, (row, entry)) in series.iter().zip(seconds).enumerate() {
        let mut fields: Vec<&String> = entry.as_object().unwrap().keys().collect();
        let mut columns: Vec<&String> = header.iter().collect();
        fields.sort();
        columns.sort();
        assert_eq!(
            columns, fields,
            "series.csv's columns are the entries' fields"
        );
        for (col, cell) in header.iter().zip(row) {
            assert!(
                same_number(cell, &entry[col]),
                "series.csv row {i}, {col}: {cell}, but results.json has {}: {entry}",
                entry[col]
            );
        }
    }

    let (header, requests) = rows(&csv_dir.join("requests.csv"));
    assert_eq!(
        header,
        [
            "scope", "name", "count", "ok", "ko", "min", "p50", "p75", "p95", "p99", "max", "mean",
            "stdDev", "meanRps"
        ]
    );
    let names: Vec<(&str, &str)> = requests
        .iter()
        .map(|row| (column(&header, row, "scope"), column(&header, row, "name")))
        .collect();
    assert_eq!(
        names,
        [
            ("global", "Global"),
            ("request", "Global"),
            ("request", "missing")
        ]
    );
    for row in &requests {
        let (scope, name) = (column(&header, row, "scope"), column(&header, row, "name"));
        let figures = match scope {
            "global" => &r["global"],
            _ => &r["requests"][name],
        };
        for (col, cell) in header.iter().zip(row) {
            if col == "scope" || col == "name" {
                continue;
            }
            let figure = request_figure(figures, col);
            assert!(
                same_number(cell, figure),
                "requests.csv {scope} {name}, {col}: {cell}, but results.json has {figure}"
            );
        }
    }
    assert_eq!(column(&header, &requests[2], "ok"), "0", "/missing is 404");
    assert_ne!(column(&header, &requests[2], "ko"), "0");

    let text = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let suite = doc.root_element().first_element_child().unwrap();
    assert_eq!(suite.attribute("tests"), Some("0"));
    assert_eq!(suite.children().filter(|n| n.is_element()).count(), 0);

    // From results.json alone, the same tables.
    let again = dir.path().join("again");
    Command::cargo_bin("volley")
        .unwrap()
        .arg("report")
        .arg(dir.path().join("out/results.json"))
        .arg("--csv")
        .arg(&again)
        .assert()
        .success();
    for name in ["series.csv", "requests.csv"] {
        assert_eq!(
            std::fs::read(again.join(name)).unwrap(),
            std::fs::read(csv_dir.join(name)).unwrap(),
            "{name}"
        );
    }
}

/// A `--junit` path that cannot be written (its folder is a regular file) fails the run with
/// exit 1 and an error naming the path, after results.json is written; the CSV files asked
/// for beside it are still written.
///
/// Catches: the error ignored (exit 0), the path left out of the message, the JUnit file
/// written before results.json with `?` (results lost), the first failed export skipping
/// the others.
#[test]
fn an_unwritable_junit_path_is_exit_1_naming_it_and_loses_no_results() {
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nscenarios:\n  - name: s\n    injection: [{{atOnceUsers: 5}}]\n    steps: [{{request: {{name: ok, path: /ok}}}}]\n"
        ),
    );
    let blocker = dir.path().join("blocker");
    std::fs::write(&blocker, "a regular file").unwrap();
    let junit = blocker.join("junit.xml");
    let csv_dir = dir.path().join("csv");
    let out = volley(
        dir.path(),
        &file,
        &[Path::new("--junit"), &junit, Path::new("--csv"), &csv_dir],
    )
    .code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains(&format!("volley: cannot write {}", junit.display())),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("cannot create its folder {}", blocker.display())),
        "{stderr}"
    );
    assert_eq!(results(dir.path())["global"]["total"]["count"], 5);
    assert!(csv_dir.join("requests.csv").is_file());
}

/// Ctrl-C still writes the JUnit file, with the assertions judged on what ran; the exit code
/// is the interrupt's (130). The interrupt is sent as soon as volley says it started (its
/// handler is in place by then): the assertion holds for any number of requests, so no wait
/// for load is needed.
///
/// Catches: the JUnit file written only when the injection finished.
#[test]
fn ctrl_c_still_writes_the_junit_file() {
    let addr = serve();
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nscenarios:\n  - name: long\n    injection: [{{constantConcurrentUsers: 2, during: 1h}}]\n    \
             steps: [{{request: {{name: r, path: /ok}}}}, {{pause: 20ms}}]\nassertions:\n  \
             - {{scope: global, stat: allRequests, metric: count, condition: {{gte: 0}}}}\n"
        ),
    );
    let junit = dir.path().join("junit.xml");
    let mut child = support::spawn_run(dir.path(), &file, &[Path::new("--junit"), &junit]);
    let mut stdout = support::started(&mut child);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let mut rest = Vec::new();
    std::io::Read::read_to_end(&mut stdout, &mut rest).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130));
    let text = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let suite = doc.root_element().first_element_child().unwrap();
    assert_eq!(
        (suite.attribute("tests"), suite.attribute("failures")),
        (Some("1"), Some("0")),
        "{text}"
    );
}

/// The repository's CI scenario (examples/realtime/load/ci.yaml, the one README's CI job
/// runs), shortened, against the real `realtime`: it loads, every request of it is answered
/// as it expects, and its JUnit file has a test case per assertion. Whether the timing
/// assertions pass is this machine's business (the exit code is 0 or 2); the failed-requests
/// one must.
///
/// Catches: the scenario drifting from the service (a path, a body or a status it no longer
/// answers so: KOs), or from volley's keys (exit 1).
#[test]
fn the_repositorys_ci_scenario_runs_against_realtime() {
    let dir = tempfile::tempdir().unwrap();
    let service = support::realtime::Realtime::start(dir.path(), &["ACME".to_owned()]);
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/realtime/load/ci.yaml");
    let junit = dir.path().join("junit.xml");
    let base = format!("baseUrl=http://{}", service.addr);
    let set = Path::new("--set");
    let args = [
        Path::new("--junit"),
        &junit,
        set,
        Path::new(&base),
        set,
        Path::new("scenarios[0].injection[0].during=1s"),
        set,
        Path::new("scenarios[0].injection[1].during=1s"),
    ];
    let run = volley(dir.path(), &file, &args);
    let out = run.get_output();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(matches!(out.status.code(), Some(0 | 2)), "{said}");
    let r = results(dir.path());
    assert_eq!(r["global"]["ko"]["count"], 0, "{:?}", r["errors"]);
    for name in ["all quotes", "quote", "event"] {
        assert!(
            r["requests"][name]["total"]["count"].as_u64() > Some(0),
            "{name}: {said}"
        );
    }
    let text = std::fs::read_to_string(&junit).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap();
    let cases: Vec<_> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .collect();
    assert_eq!(cases.len(), 4, "{text}");
    let failed = cases
        .iter()
        .find(|c| {
            c.attribute("name") == Some("Global: percentage of failed events is less than 1.0")
        })
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(
        failed.children().filter(|n| n.is_element()).count(),
        0,
        "{text}"
    );
}
