//! The experiment end to end, with the real binaries: the services started as child
//! processes, loaded by volley for a second or two per config, stopped with SIGTERM.
//!
//! No test judges speed: each checks what was written, kept and deleted, and what the
//! reports say; a loaded machine only makes them slower.

use std::path::Path;

use assert_cmd::Command;
use serde_json::Value;

mod common;

const CONFIGS: [&str; 5] = [
    "before",
    "before-lossless",
    "after",
    "production",
    "naive-rust",
];

fn json(path: &Path) -> Value {
    let text = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_slice(&text).unwrap()
}

/// The bytes of every file under `dir`.
fn bytes_under(dir: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        total += if path.is_dir() {
            bytes_under(&path)
        } else {
            entry.metadata().unwrap().len()
        };
    }
    total
}

fn round_folders(out: &Path) -> Vec<String> {
    let mut rounds: Vec<String> = std::fs::read_dir(out)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("round-"))
        .collect();
    rounds.sort();
    rounds
}

/// Run on its own with no `--out`, the experiment writes to `$CARGO_TARGET_DIR/experiment`
/// (not to the directory it ran in), finds the services beside itself, and by default keeps
/// none of their output: each run's is counted, then deleted, and the summary and console
/// say how much.
///
/// Catches: the output written relative to the working directory (`./target/experiment`),
/// a service's output left on disk by default, a deletion the summary does not mention.
#[test]
fn by_default_nothing_is_kept_and_the_output_goes_to_the_target_directory() {
    common::services();
    let target = tempfile::tempdir().unwrap();
    let cwd = tempfile::tempdir().unwrap();
    let output = Command::cargo_bin("experiment")
        .unwrap()
        .env_remove("CARGO")
        .env("CARGO_TARGET_DIR", target.path())
        .current_dir(cwd.path())
        .args(["--duration", "1s", "--rounds", "1", "--users", "5"])
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let out = target.path().join("experiment");
    assert!(out.join("summary.md").is_file(), "{stdout}");
    assert!(
        std::fs::read_dir(cwd.path()).unwrap().next().is_none(),
        "nothing in the working directory"
    );
    assert!(
        stdout.contains(&format!(
            "(beside {})",
            Path::new(env!("CARGO_BIN_EXE_experiment")).display()
        )),
        "{stdout}"
    );
    assert_eq!(
        round_folders(&out),
        Vec::<String>::new(),
        "no run's output kept"
    );
    assert_eq!(
        stdout.matches("round 1 of 1: the service wrote ").count(),
        CONFIGS.len(),
        "{stdout}"
    );
    assert_eq!(
        stdout
            .matches("; counted, then deleted (--keep-logs none)")
            .count(),
        CONFIGS.len(),
        "{stdout}"
    );
    let summary = json(&out.join("summary.json"));
    let logs = &summary["logs"];
    assert_eq!(logs["keep"], "none");
    assert_eq!(logs["keptBytes"], 0);
    assert!(logs["writtenBytes"].as_u64().unwrap() > 0, "{logs}");
    assert_eq!(logs["deletedBytes"], logs["writtenBytes"]);
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains("Each run's output was counted, then deleted ("),
        "{md}"
    );
    for config in CONFIGS {
        assert!(out.join(format!("{config}.html")).is_file(), "{config}");
    }
}

/// Run by cargo, the experiment has cargo build the services and takes their paths from
/// cargo's messages. `--keep-logs last` keeps exactly the last round's output of every
/// config, and the summary says where and how much, and how much was deleted. Each config's
/// report says when it started, and its two rounds join with no entry empty of requests or
/// users before the run's own end.
///
/// Catches: the services looked for beside the experiment when cargo could build them, the
/// first round kept instead of the last, a report's start left blank ("Started , ran"),
/// rounds merged with an empty second between them.
#[test]
fn via_cargo_keep_logs_last_keeps_the_last_round_and_the_rounds_join() {
    let out_dir = tempfile::tempdir().unwrap();
    let out = out_dir.path().join("out");
    let before_run = jiff::Timestamp::now();
    let output = Command::cargo_bin("experiment")
        .unwrap()
        .args(["--duration", "2s", "--rounds", "2", "--users", "5"])
        .args(["--keep-logs", "last", "--out"])
        .arg(&out)
        .assert()
        .success()
        .get_output()
        .clone();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let exe_dir = Path::new(env!("CARGO_BIN_EXE_experiment"))
        .parent()
        .unwrap();
    assert!(
        stdout.contains(&format!(
            "Services: {} and {} (built by cargo, profile ",
            exe_dir.join("realtime").display(),
            exe_dir.join("realtime-bare").display()
        )),
        "{stdout}"
    );

    // What was kept: round 2's folder of each config, with what the service wrote.
    assert_eq!(round_folders(&out), ["round-2"]);
    for config in CONFIGS {
        let folder = out.join("round-2").join(config);
        assert!(folder.join("stdout").is_file(), "{config}");
        assert!(folder.join("stderr").is_file(), "{config}");
    }
    assert!(out.join("round-2/production/requests.log").is_file());
    assert!(
        std::fs::metadata(out.join("round-2/before/stdout"))
            .unwrap()
            .len()
            > 0,
        "before logs every request to stdout"
    );
    let summary = json(&out.join("summary.json"));
    let logs = &summary["logs"];
    assert_eq!(logs["keep"], "last");
    assert_eq!(
        logs["keptBytes"].as_u64().unwrap(),
        bytes_under(&out.join("round-2")),
        "the bytes kept are those on disk"
    );
    assert!(logs["deletedBytes"].as_u64().unwrap() > 0, "round 1's");
    for config in summary["configs"].as_array().unwrap() {
        let rounds = config["byRound"].as_array().unwrap();
        assert_eq!(rounds.len(), 2, "{config}");
        assert_eq!(rounds[0]["kept"], Value::Null, "{config}");
        let name = config["name"].as_str().unwrap();
        assert_eq!(
            rounds[1]["kept"].as_str(),
            Some(
                out.join("round-2")
                    .join(name)
                    .display()
                    .to_string()
                    .as_str()
            ),
            "{config}"
        );
    }
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(
        md.contains(&format!(
            "Kept (`--keep-logs last`): {} in `{}`;",
            experiment::output::size(logs["keptBytes"].as_u64().unwrap()),
            out.join("round-2").display()
        )),
        "{md}"
    );
    assert!(md.contains("**What this says.** Each ratio is"), "{md}");

    // Each report: its start, and its rounds joined.
    for config in CONFIGS {
        let results = json(&out.join(format!("{config}.json")));
        let started = results["startedAt"].as_str().unwrap();
        let at: jiff::Timestamp = started
            .parse()
            .unwrap_or_else(|e| panic!("{config}: startedAt {started:?}: {e}"));
        // Written to the second.
        assert!(
            before_run.as_second() <= at.as_second() && at <= jiff::Timestamp::now(),
            "{config}: {at}"
        );
        let html = std::fs::read_to_string(out.join(format!("{config}.html"))).unwrap();
        let shown = at.strftime("%Y-%m-%d %H:%M:%S UTC").to_string();
        assert!(
            html.contains(&format!("Started {shown}, ran ")),
            "{config}: the report's start"
        );
        let seconds = results["seconds"].as_array().unwrap();
        let at: Vec<u64> = seconds
            .iter()
            .map(|e| e["second"].as_u64().unwrap())
            .collect();
        assert_eq!(
            at,
            (0..at.len() as u64).collect::<Vec<_>>(),
            "{config}: one entry a second"
        );
        assert!(at.len() >= 2, "{config}: two rounds of a second");
        let (_, joined) = seconds.split_last().unwrap();
        for e in joined {
            assert!(
                e["requests"].as_u64().unwrap() > 0 && e["activeUsers"].as_u64().unwrap() > 0,
                "{config}: an empty entry before the end: {e} in {seconds:?}"
            );
        }
    }
}
