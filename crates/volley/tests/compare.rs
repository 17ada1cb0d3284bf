//! `volley compare`: two real runs of the binary against a server on loopback, the second
//! with one request made slower and one failing, compared by the binary; its Markdown and
//! JUnit read back.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use assert_cmd::Command;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};

mod support;
use support::{scenario, volley};

/// Two runs of 40 requests to `/fast` and `/slow`: in the first `/slow` takes 2 ms and
/// `/flaky` answers 200; in the second `/slow` takes 30 ms and `/flaky` answers 500.
/// Returns the two results.json.
fn two_runs(dir: &Path) -> (PathBuf, PathBuf) {
    let worse = Arc::new(AtomicBool::new(false));
    let flag = worse.clone();
    let addr = support::serve(move |req: Request<hyper::body::Incoming>| {
        let worse = flag.load(Ordering::SeqCst);
        let path = req.uri().path().to_owned();
        async move {
            let (wait, status) = match (path.as_str(), worse) {
                ("/slow", false) => (2, 200),
                ("/slow", true) => (30, 200),
                ("/flaky", true) => (0, 500),
                _ => (0, 200),
            };
            tokio::time::sleep(Duration::from_millis(wait)).await;
            let mut response = Response::new(Full::new(Bytes::from("ok")));
            *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
            response
        }
    });
    let file = scenario(
        dir,
        &format!(
            "baseUrl: http://{addr}\nscenarios:\n  - name: s\n    injection: [{{atOnceUsers: 40}}]\n    \
             steps:\n      - request: {{name: fast, path: /fast}}\n      - request: {{name: slow, path: /slow}}\n      \
             - request: {{name: flaky, path: /flaky}}\n"
        ),
    );
    let mut out = Vec::new();
    for (i, slower) in [false, true].into_iter().enumerate() {
        worse.store(slower, Ordering::SeqCst);
        volley(dir, &file, &[]).success();
        let kept = dir.join(format!("run{i}.json"));
        std::fs::rename(dir.join("out/results.json"), &kept).unwrap();
        out.push(kept);
    }
    (out.remove(0), out.remove(0))
}

fn compare(dir: &Path, args: &[&str]) -> assert_cmd::assert::Assert {
    Command::cargo_bin("volley")
        .unwrap()
        .current_dir(dir)
        .arg("compare")
        .args(args)
        .timeout(Duration::from_secs(30))
        .assert()
}

/// The gate: `slow`'s p99 from 2 to 30 ms fails `*:p99=50%`, `flaky`'s KO from 0 to 100%
/// fails `*:ko=1` (and its p99, with no OK response left), `fast` passes both; exit 2. The same runs with generous limits pass, exit
/// 0. The Markdown and the JUnit file say the same, a test case per request and threshold.
///
/// Catches: a failed threshold not changing the exit code, the gate judged on Global only,
/// the Markdown or JUnit missing a verdict, and the runs read the wrong way round (the base
/// judged against the new one, where `slow` got faster).
#[test]
fn a_regression_past_a_threshold_fails_the_gate_with_markdown_and_junit() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = two_runs(dir.path());
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let out = compare(
        dir.path(),
        &[
            base,
            new,
            "--threshold",
            "*:p99=50%",
            "--threshold",
            "*:ko=1",
            "--markdown",
            "compare.md",
            "--junit",
            "compare.xml",
        ],
    )
    .code(2);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(stdout.contains("3 of 6 thresholds failed"), "{stdout}");
    let md = std::fs::read_to_string(dir.path().join("compare.md")).unwrap();
    assert!(md.contains("**Failed**: 3 of 6 thresholds failed."), "{md}");
    let line = |prefix: &str| {
        md.lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line {prefix:?} in\n{md}"))
            .to_owned()
    };
    assert!(line("| slow: p99 at most 50% higher |").ends_with("| FAILED |"));
    assert!(line("| fast: p99 at most 50% higher |").ends_with("| passed |"));
    // Every flaky response failed: no OK response is left to time, which fails its gate.
    assert!(
        line("| flaky: p99 at most 50% higher (no OK response to time) |").ends_with("| FAILED |")
    );
    assert!(
        line("| flaky: ko at most 1 pp higher |")
            .contains("| 0.00% | 100.00% | +100.00 pp | FAILED |")
    );
    let xml = std::fs::read_to_string(dir.path().join("compare.xml")).unwrap();
    let doc = roxmltree::Document::parse(&xml).unwrap();
    let suite = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .unwrap();
    assert_eq!(suite.attribute("tests"), Some("6"));
    assert_eq!(suite.attribute("failures"), Some("3"));
    // The other way round, slow got faster and flaky healed: nothing is worse.
    compare(
        dir.path(),
        &[
            new,
            base,
            "--threshold",
            "slow:p99=50%",
            "--threshold",
            "*:ko=1",
        ],
    )
    .code(0);
    compare(
        dir.path(),
        &[
            base,
            new,
            "--threshold",
            "slow:p99=100ms",
            "--threshold",
            "ko=100",
        ],
    )
    .code(0);
}

/// A bad threshold, on the command line or in a file, and an unreadable file each exit 1
/// with a line naming what and where.
///
/// Catches: a threshold that does not parse ignored (a gate that cannot fail), a file's bad
/// line not named, a panic on a missing file.
#[test]
fn bad_thresholds_and_missing_files_exit_1_naming_them() {
    let dir = tempfile::tempdir().unwrap();
    let (base, new) = two_runs(dir.path());
    let (base, new) = (base.to_str().unwrap(), new.to_str().unwrap());
    let err = |args: &[&str]| {
        let out = compare(dir.path(), args).code(1);
        String::from_utf8_lossy(&out.get_output().stderr).into_owned()
    };
    assert!(err(&[base, new, "--threshold", "p99>10%"]).contains("[SCOPE:]METRIC=LIMIT"));
    std::fs::write(
        dir.path().join("gate.txt"),
        "# the gate\np99=10%\nspeed=1\n",
    )
    .unwrap();
    let e = err(&[base, new, "--threshold-file", "gate.txt"]);
    assert!(
        e.contains("gate.txt:3:") && e.contains("unknown metric \"speed\""),
        "{e}"
    );
    let e = err(&[base, "nothere.json"]);
    assert!(e.contains("cannot read nothere.json"), "{e}");
    std::fs::write(dir.path().join("gate.txt"), "*:ko=100\nslow:p99=10000%\n").unwrap();
    compare(dir.path(), &[base, new, "--threshold-file", "gate.txt"]).code(0);
}
