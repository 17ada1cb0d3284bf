//! `realtime server` writing its request log to a disk that fills up, to a directory removed
//! while it runs, and to a path it cannot write at startup: the real binary, a real tmpfs.
//!
//! Mounting needs root (CI runs as root); elsewhere the tmpfs tests say they were skipped and
//! why, and pass.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::{
    Serving, Tmpfs, connect, fail_to_start, fill, get, request, start_with_stderr, write_config,
};

/// A service with its request log in `LOGS`, rotated every 8 KiB (about 70 lines) into three
/// archives.
const CONFIG: &str = "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
    adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  requestLog:\n    appenders:\n      \
    - type: file\n        currentLogFilename: LOGS/requests.log\n        \
    archivedLogFilenamePattern: LOGS/requests-%i.log\n        maxFileSize: 8KiB\n        \
    archivedFileCount: 3\nlogging:\n  level: WARN\n  appenders: []\n";

/// The request log's counter `name` (`write_errors`), summed over its levels.
fn request_log_counter(admin: std::net::SocketAddr, name: &str) -> u64 {
    let mut conn = connect(admin);
    let response = request(&mut conn, "GET", "/metrics", &[], b"").unwrap();
    assert_eq!(response.status, 200, "{}", response.body);
    let json: serde_json::Value = serde_json::from_str(&response.body).unwrap();
    let prefix = format!("ferrowizard.logging.{name}.requestLog.0.file.requests.log");
    json["counters"]
        .as_object()
        .unwrap()
        .iter()
        .filter(|(key, _)| key.starts_with(&prefix))
        .map(|(_, c)| c["count"].as_u64().unwrap_or(0))
        .sum()
}

/// DropWizard's default request-log line, as this test's client makes it (see server.rs).
fn is_combined(line: &str) -> bool {
    static COMBINED: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(concat!(
            r#"^127\.0\.0\.1 - - \[\d{2}/(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)/\d{4}:\d{2}:\d{2}:\d{2} [+-]\d{4}\] "#,
            r#""GET /\S* HTTP/1\.1" [1-5]\d{2} (\d+|-) "-" "realtime-test" \d+$"#
        ))
        .expect("the pattern")
    });
    COMBINED.is_match(line)
}

/// The request log's files in `dir`: the current one and its archives.
fn request_logs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("requests")
        })
        .collect();
    files.sort();
    files
}

/// Fails unless every request-log file in `dir` holds whole lines only, each ending with a
/// newline; returns them all.
fn whole_lines(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for path in request_logs(dir) {
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.is_empty() || text.ends_with('\n'),
            "{} ends in a partial line: {:?}",
            path.display(),
            &text[text.len().saturating_sub(200)..]
        );
        for line in text.lines() {
            assert!(
                is_combined(line),
                "{}: a torn line {line:?}",
                path.display()
            );
            lines.push(line.to_owned());
        }
    }
    lines
}

/// Whether `path` holds a line with `text`.
fn has(path: &Path, text: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains(text))
}

/// Sends requests tagged `phase=PHASE&n=N` (each answered 200) until `done` holds, and
/// returns the tag of the last one sent; fails after 30 s.
fn request_until(
    service: &common::Service,
    phase: &str,
    what: &str,
    done: impl Fn() -> bool,
) -> String {
    let mut conn = connect(service.app);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut n = 0;
    loop {
        let tag = format!("phase={phase}&n={n}");
        let path = format!("/realtime/quotes/ACME?{tag}");
        assert_eq!(get(&mut conn, &path).unwrap(), 200, "{path}");
        if n % 10 == 9 {
            if done() {
                return tag;
            }
            assert!(Instant::now() < deadline, "{what} within 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        n += 1;
    }
}

/// Polls `done` until it holds; fails after 30 s.
fn wait_for(what: &str, done: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !done() {
        assert!(Instant::now() < deadline, "{what} within 30 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The lines of `stderr` that report the request log's write failures.
fn failure_reports(stderr: &Path) -> Vec<String> {
    std::fs::read_to_string(stderr)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("requestLog") && l.contains("write failed"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_full_disk_keeps_the_service_serving_and_its_request_log_whole() {
    let dir = tempfile::tempdir().unwrap();
    let Some(tmpfs) = Tmpfs::mount("size=512k") else {
        return;
    };
    let logs = tmpfs.path();
    let config = write_config(
        dir.path(),
        &CONFIG.replace("LOGS", &logs.display().to_string()),
    );
    let stderr = dir.path().join("stderr.txt");
    let service = start_with_stderr(&config, &stderr);

    // Rotating before the disk is full.
    let last = request_until(&service, "before", "a first archive", || {
        logs.join("requests-1.log").exists()
    });
    let last = format!("{last} ");
    wait_for("the request log to catch up", || {
        request_logs(logs).iter().any(|p| has(p, &last))
    });

    // Full: every request is still answered, and the lost lines are counted and reported.
    let filler = fill(logs);
    let full = Instant::now();
    let mut conn = connect(service.app);
    for n in 0..300 {
        let path = format!("/realtime/quotes/ACME?phase=full&n={n}");
        assert_eq!(get(&mut conn, &path).unwrap(), 200, "{path}");
    }
    wait_for("write errors and dropped lines counted", || {
        request_log_counter(service.admin, "write_errors") > 0
            && request_log_counter(service.admin, "dropped") > 0
    });
    wait_for("the failure reported on stderr", || {
        !failure_reports(&stderr).is_empty()
    });

    // Room again: lines are written, and rotation carries on.
    std::fs::remove_file(filler).unwrap();
    request_until(
        &service,
        "after",
        "an archive of lines written after",
        || has(&logs.join("requests-1.log"), "phase=after"),
    );
    let minutes = full.elapsed().as_secs() / 60;
    service.shut_down();

    let lines = whole_lines(logs);
    assert!(lines.iter().any(|l| l.contains("phase=after")));
    // At most one report a minute.
    let reports = failure_reports(&stderr);
    assert!(
        !reports.is_empty() && reports.len() as u64 <= 1 + minutes,
        "{reports:#?}"
    );
    assert!(reports[0].contains("requests.log"), "{}", reports[0]);
}

#[test]
fn a_log_directory_removed_while_running_is_created_again() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let config = write_config(
        dir.path(),
        &CONFIG.replace("LOGS", &logs.display().to_string()),
    );
    let stderr = dir.path().join("stderr.txt");
    let service = start_with_stderr(&config, &stderr);
    let current = logs.join("requests.log");
    request_until(&service, "before", "the request log written", || {
        has(&current, "phase=before")
    });

    std::fs::remove_dir_all(&logs).unwrap();
    request_until(&service, "after", "the request log created again", || {
        has(&current, "phase=after")
    });
    service.shut_down();

    let lines = whole_lines(&logs);
    assert!(lines.iter().any(|l| l.contains("phase=after")));
    let said = std::fs::read_to_string(&stderr).unwrap();
    assert!(
        said.contains(&format!("{} was removed", current.display())),
        "{said}"
    );
}

/// A log file that cannot be opened stops the service before it serves: exit status 1 and
/// one line naming the file, for the application's log and the request log alike.
#[test]
fn an_unwritable_log_path_at_startup_is_exit_1_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    // A directory in the path that is a file: refused whoever runs the test.
    std::fs::write(dir.path().join("not-a-dir"), "").unwrap();
    let mut paths = vec![dir.path().join("not-a-dir/app.log")];
    // A read-only filesystem: refused even to root.
    let read_only = Tmpfs::mount("size=64k,ro");
    if let Some(tmpfs) = &read_only {
        paths.push(tmpfs.path().join("app.log"));
    }
    for path in &paths {
        let file = format!(
            "[{{type: file, currentLogFilename: {}, archive: false}}]",
            path.display()
        );
        for (request_log, logging) in [("[]", file.as_str()), (file.as_str(), "[]")] {
            let config = write_config(
                dir.path(),
                &format!(
                    "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
                     adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
                     requestLog: {{appenders: {request_log}}}\nlogging:\n  appenders: {logging}\n"
                ),
            );
            let (status, stderr) = fail_to_start(&config);
            assert_eq!(status.code(), Some(1), "{stderr}");
            assert_eq!(stderr.lines().count(), 1, "not one line: {stderr}");
            assert!(
                stderr.contains(&path.display().to_string()),
                "{stderr:?} does not name {}",
                path.display()
            );
        }
    }
}
