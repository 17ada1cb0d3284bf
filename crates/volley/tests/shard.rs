//! `volley run --shard i/N`: N real volley processes, side by side against the real `realtime`
//! service, run the plan of one volley exactly, and `volley merge` makes their results that
//! run's: users, requests, histograms, and each feeder record used once.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use support::realtime::{Realtime, histogram_count, results};

/// The first scenario's users, at once: they come before the open scenario's in the run's
/// count, so that the shards' shares of the open scenario are not those of a run of it alone.
const FIRST: u64 = 2;
/// The open scenario's users: 11 over a ramp, then 20 at a randomized rate; one feeder record
/// and one quote each.
const OPEN: u64 = 11 + 20;
/// The closed scenario's busy slots. Each user pauses longer than its slot lasts, so a slot
/// starts exactly one user: the count is the plan's, not the machine's speed.
const CLOSED: u64 = 5;

/// The feeder's symbols, one a user of the open scenario.
fn symbols() -> Vec<String> {
    (0..OPEN).map(|i| format!("S{i:02}")).collect()
}

/// Writes the scenario against `addr`, with its feeder beside it.
fn scenario(dir: &Path, addr: std::net::SocketAddr) -> PathBuf {
    let csv: String = symbols().iter().map(|s| format!("{s}\n")).collect();
    std::fs::write(dir.join("symbols.csv"), format!("symbol\n{csv}")).unwrap();
    let path = dir.join("scenario.yaml");
    std::fs::write(
        &path,
        format!(
            "baseUrl: http://{addr}\nmaxDuration: 30s\nconsoleInterval: 30s\nscenarios:\n  \
             - name: first\n    injection: [{{atOnceUsers: {FIRST}}}]\n    \
             steps: [{{request: {{name: first quotes, path: /realtime/quotes}}}}]\n  \
             - name: open\n    injection:\n      - rampUsers: 11\n        during: 500ms\n      \
             - constantUsersPerSec: 20\n        during: 1s\n        randomized: true\n    steps:\n      \
             - feed: {{file: symbols.csv, strategy: queue}}\n      \
             - request: {{name: quote, path: '/realtime/quotes/${{symbol}}', \
             json: {{pointer: /symbol, equals: '${{symbol}}'}}}}\n  \
             - name: closed\n    injection:\n      - constantConcurrentUsers: {CLOSED}\n        during: 2s\n    \
             steps:\n      - request: {{name: all quotes, path: /realtime/quotes}}\n      \
             - pause: 2500ms\n"
        ),
    )
    .unwrap();
    path
}

fn volley() -> Command {
    let mut command = Command::cargo_bin("volley").unwrap();
    command
        .env_remove(volley::shard::JOB_INDEX_VAR)
        .timeout(Duration::from_secs(60));
    command
}

/// `volley run FILE --out OUT [ARGS]`: exit code, stdout, stderr.
fn run(file: &Path, out: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let output = volley()
        .arg("run")
        .arg(file)
        .arg("--out")
        .arg(out)
        .args(args)
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The started users of each scenario in a `results.json`.
fn started(r: &serde_json::Value) -> BTreeMap<String, u64> {
    support::field(r, &["users"])
        .as_object()
        .expect("results.json's users is an object")
        .iter()
        .map(|(name, u)| (name.clone(), support::count_at(u, &["started"])))
        .collect()
}

/// The response count of each request name.
fn requests(r: &serde_json::Value) -> BTreeMap<String, u64> {
    support::field(r, &["requests"])
        .as_object()
        .expect("results.json's requests is an object")
        .iter()
        .map(|(name, q)| (name.clone(), support::count_at(q, &["total", "count"])))
        .collect()
}

/// The quotes of feeder symbols among `paths`, sorted.
fn quoted(paths: &[String]) -> Vec<String> {
    let mut symbols: Vec<String> = paths
        .iter()
        .filter_map(|p| p.strip_prefix("/realtime/quotes/"))
        .map(str::to_owned)
        .collect();
    symbols.sort();
    symbols
}

/// Three shards at once, then the whole plan once, against one service: the shards together
/// are the whole run, in users, requests, histograms and feeder records.
///
/// Catches: a shard running the whole plan (3× the users), shards splitting arrivals but not
/// records (a queue's first records used three times, the last never), records split apart
/// from the users that take them (a shard with a user more than records: a KO), closed slots
/// not divided, a merge that drops the users, histograms that do not add up to the requests.
#[test]
fn three_shards_run_the_plan_of_one_volley_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let service = Realtime::start(dir.path(), &symbols());
    let file = scenario(dir.path(), service.addr);
    let total = FIRST + OPEN + CLOSED;

    let shards: Vec<(Option<i32>, String, String)> = std::thread::scope(|s| {
        let runs: Vec<_> = (0..3)
            .map(|i| {
                let (file, out) = (&file, dir.path().join(format!("shard-{i}")));
                s.spawn(move || run(file, &out, &["--shard", &format!("{i}/3")]))
            })
            .collect();
        runs.into_iter().map(|r| r.join().unwrap()).collect()
    });
    let mut inputs = Vec::new();
    let mut histograms = 0;
    for (i, (code, stdout, stderr)) in shards.iter().enumerate() {
        assert_eq!(*code, Some(0), "shard {i}/3: {stdout}{stderr}");
        assert!(
            stdout.starts_with(&format!("Simulation scenario (shard {i}/3) started...\n")),
            "{stdout}"
        );
        let path = dir.path().join(format!("shard-{i}/results.json"));
        let r = results(&path);
        assert_eq!(r["shard"], serde_json::json!({"index": i, "count": 3}));
        // 2 + 31 arrivals over 3 shards: the first scenario's 1 + 1 + 0, the open one's
        // (arrivals 2 to 32 of the run) 10 + 10 + 11; 5 slots 2 + 2 + 1.
        let expected = BTreeMap::from([
            ("closed".to_owned(), [2, 2, 1][i]),
            ("first".to_owned(), [1, 1, 0][i]),
            ("open".to_owned(), [10, 10, 11][i]),
        ]);
        assert_eq!(started(&r), expected, "shard {i}/3");
        assert_eq!(
            r["global"]["ko"]["count"], 0,
            "shard {i}/3: {:?}",
            r["errors"]
        );
        histograms += histogram_count(&r["global"]["histogram"]);
        inputs.push(path);
    }
    assert_eq!(
        histograms, total,
        "the shards' histograms hold every response once"
    );
    // Each feeder record was used once, by one shard: the service saw each symbol once.
    let logged = service.paths(total as usize);
    assert_eq!(logged.len() as u64, total, "{logged:?}");
    assert_eq!(quoted(&logged), symbols());

    let merged_path = dir.path().join("merged.json");
    let merge = volley()
        .arg("merge")
        .args(&inputs)
        .arg("-o")
        .arg(&merged_path)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&merge.get_output().stderr);
    assert!(
        stderr.is_empty(),
        "a whole split merges without warning: {stderr}"
    );
    let merged = results(&merged_path);

    // The whole plan, once, by one volley.
    let (code, stdout, stderr) = run(&file, &dir.path().join("whole"), &[]);
    assert_eq!(code, Some(0), "{stdout}{stderr}");
    assert!(
        stdout.starts_with("Simulation scenario started...\n"),
        "{stdout}"
    );
    let whole = results(&dir.path().join("whole/results.json"));
    assert!(whole["shard"].is_null());
    let all_logged = service.paths(2 * total as usize);
    assert_eq!(quoted(&all_logged[total as usize..]), symbols());

    let users = BTreeMap::from([
        ("closed".to_owned(), CLOSED),
        ("first".to_owned(), FIRST),
        ("open".to_owned(), OPEN),
    ]);
    assert_eq!(started(&whole), users);
    assert_eq!(
        started(&merged),
        users,
        "the merged run's users are the plan's"
    );
    assert_eq!(requests(&merged), requests(&whole));
    assert_eq!(
        requests(&whole),
        BTreeMap::from([
            ("all quotes".to_owned(), CLOSED),
            ("first quotes".to_owned(), FIRST),
            ("quote".to_owned(), OPEN)
        ])
    );
    assert_eq!(merged["global"]["total"]["count"], total);
    assert_eq!(merged["global"]["ko"]["count"], 0);
    assert!(merged["shard"].is_null(), "a merged run is no shard");
    // The merged histograms hold every response once: the global one, and per request.
    assert_eq!(histogram_count(&merged["global"]["histogram"]), total);
    assert_eq!(histogram_count(&whole["global"]["histogram"]), total);
    for (name, count) in requests(&whole) {
        assert_eq!(
            histogram_count(&merged["requests"][&name]["histogram"]),
            count,
            "{name}"
        );
    }

    // Two of the three shards merge too, with a warning: that is not the whole plan.
    let partial = volley()
        .arg("merge")
        .args(&inputs[..2])
        .arg("-o")
        .arg(dir.path().join("partial.json"))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&partial.get_output().stderr);
    assert_eq!(
        stderr,
        "volley: warning: shard 2/3 is missing: the merged run is not the whole plan\n"
    );
}

/// A `--shard` that names no shard, or a shard without feeder records, is refused before
/// anything is sent (exit 1), saying what is wrong.
#[test]
fn a_shard_that_cannot_run_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("two.csv"), "symbol\nA\nB\n").unwrap();
    // Port 9 (discard) on 127.0.0.1: nothing is sent, so nothing needs to listen.
    let file = dir.path().join("scenario.yaml");
    std::fs::write(
        &file,
        "baseUrl: http://127.0.0.1:9\nmaxDuration: 5s\nscenarios:\n  - name: s\n    \
         injection: [{atOnceUsers: 3}]\n    steps:\n      - feed: {file: two.csv}\n      \
         - request: {name: r, path: '/q/${symbol}'}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    let refused = |args: &[&str], env: Option<&str>| {
        let mut command = volley();
        command
            .arg("run")
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .args(args);
        if let Some(value) = env {
            command.env(volley::shard::JOB_INDEX_VAR, value);
        }
        let output = command.assert().code(1);
        String::from_utf8_lossy(&output.get_output().stderr).into_owned()
    };
    assert_eq!(
        refused(&["--shard", "3/3"], None),
        "volley: --shard 3/3: the index must be below the count (3 is not below 3)\n"
    );
    assert_eq!(
        refused(&["--shard", "3"], None),
        "volley: --shard 3: JOB_COMPLETION_INDEX is not set (a Kubernetes Indexed Job sets it \
         in each pod); elsewhere give the index: --shard 0/3\n"
    );
    assert_eq!(
        refused(&["--shard", "3"], Some("one")),
        "volley: --shard 3: JOB_COMPLETION_INDEX=\"one\" is not a whole number from 0\n"
    );
    assert_eq!(
        refused(&["--shard", "3"], Some("3")),
        "volley: --shard 3: the index must be below the count (JOB_COMPLETION_INDEX=3 is not \
         below 3)\n"
    );
    assert_eq!(
        refused(&["--shard", "0/0"], None),
        "volley: --shard 0/0: the count must be a whole number of at least 1\n"
    );
    // Two records over three shards leave shard 2 none.
    let stderr = refused(&["--shard", "2/3"], None);
    assert!(
        stderr.contains("two.csv has 2 records, too few for 3 shards: shard 2/3 has none"),
        "{stderr}"
    );
    assert!(!out.exists(), "nothing ran, nothing was written");
}
