//! `realtime check` on every file in `tests/cases/`, driving the real binary.
//!
//! A case's first lines may carry `# args: ...` (extra command-line arguments) and
//! `# env: NAME=value ...` (environment). Files named `valid-*`, `report2014-after*` or
//! `report2014-before*` must pass; all others must fail. The full output is snapshotted.

use std::path::Path;

use assert_cmd::Command;

fn header<'a>(text: &'a str, key: &str) -> Vec<&'a str> {
    text.lines()
        .filter_map(|l| l.strip_prefix(&format!("# {key}: ")))
        .flat_map(|rest| {
            rest.split(" --set ")
                .map(|s| s.trim_start_matches("--set ").trim())
        })
        .filter(|s| !s.is_empty())
        .collect()
}

fn run_case(path: &Path) -> (bool, String) {
    let name = path.file_name().unwrap().to_str().unwrap().to_owned();
    let text = std::fs::read_to_string(path).unwrap();
    let mut cmd = Command::cargo_bin("realtime").unwrap();
    cmd.current_dir(path.parent().unwrap())
        .arg("check")
        .arg(&name);
    for set in header(&text, "args") {
        cmd.arg("--set").arg(set);
    }
    for pair in header(&text, "env")
        .iter()
        .flat_map(|s| s.split_whitespace())
    {
        let (k, v) = pair.split_once('=').unwrap();
        cmd.env(k, v);
    }
    let out = cmd.output().unwrap();
    let report = format!(
        "exit: {}\n--- stdout\n{}--- stderr\n{}",
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), report)
}

#[test]
fn every_case_is_accepted_or_rejected_as_named_with_its_report() {
    let mut count = 0;
    insta::glob!("cases/*.{yaml,json}", |path| {
        count += 1;
        let name = path.file_name().unwrap().to_str().unwrap();
        let (ok, report) = run_case(path);
        let should_pass = name.starts_with("valid-")
            || name.starts_with("report2014-after")
            || name.starts_with("report2014-before");
        assert_eq!(ok, should_pass, "{name}:\n{report}");
        if !ok {
            assert!(!report.contains("panicked"), "{name} panicked:\n{report}");
            assert!(
                report.contains("has the following"),
                "{name} has no report:\n{report}"
            );
        }
        insta::assert_snapshot!(report);
    });
    assert!(count >= 40, "only {count} cases");
}

#[test]
fn dump_shows_the_normalized_config_and_reloads() {
    let dir = tempfile::tempdir().unwrap();
    let cases = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    for config in ["before.yaml", "before-lossless.yaml", "after.yaml"] {
        let out = Command::cargo_bin("realtime")
            .unwrap()
            .current_dir(&cases)
            .args(["check", config, "--dump"])
            .output()
            .unwrap();
        assert!(out.status.success());
        let dumped = dir.path().join(config);
        std::fs::write(&dumped, &out.stdout).unwrap();
        // The dump is itself a valid 4.x config that dumps to the same text.
        let again = Command::cargo_bin("realtime")
            .unwrap()
            .args(["check", "--dump"])
            .arg(&dumped)
            .output()
            .unwrap();
        assert!(
            again.status.success(),
            "{}",
            String::from_utf8_lossy(&again.stderr)
        );
        assert_eq!(
            String::from_utf8_lossy(&again.stdout),
            String::from_utf8_lossy(&out.stdout)
        );
        insta::assert_snapshot!(
            format!("dump-{config}"),
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

#[test]
fn missing_file_and_bad_arguments_exit_1() {
    let out = Command::cargo_bin("realtime")
        .unwrap()
        .args(["check", "/nonexistent/config.yaml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("/nonexistent/config.yaml has the following error:"),
        "{err}"
    );
    assert!(err.contains("Cannot read the file"), "{err}");
    let out = Command::cargo_bin("realtime")
        .unwrap()
        .args(["check"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let out = Command::cargo_bin("realtime")
        .unwrap()
        .args(["frobnicate"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
}
