//! Logging keys on the real binary: a console appender's `target`, and the logger a `log`
//! metrics reporter writes to (`metrics.reporters[].logger`), each shown changing where the
//! service's lines land.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{sigterm, start, wait_exit, write_config};

/// Both connectors on free ports of 127.0.0.1, no request log, then `rest` (top-level
/// sections, `logging:` and after).
fn config(dir: &Path, rest: &str) -> std::path::PathBuf {
    write_config(
        dir,
        &format!(
            "server:\n  applicationConnectors:\n    - type: http\n      port: 0\n      bindHost: 127.0.0.1\n  \
             adminConnectors:\n    - type: http\n      port: 0\n      bindHost: 127.0.0.1\n  requestLog:\n    appenders: []\n{rest}"
        ),
    )
}

/// Reads all of `stream` into a shared string, on a thread of its own.
fn collect(
    mut stream: impl Read + Send + 'static,
) -> (Arc<Mutex<String>>, std::thread::JoinHandle<()>) {
    let text = Arc::new(Mutex::new(String::new()));
    let sink = text.clone();
    let handle = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match stream.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => sink
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n])),
            }
        }
    });
    (text, handle)
}

/// Runs `realtime server CONFIG` with stdout and stderr both captured, until it has logged
/// `started realtime` (on either), then stops it with SIGTERM; returns (stdout, stderr).
fn run_until_started(config: &Path) -> (String, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_realtime"))
        .arg("server")
        .arg(config)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn realtime");
    let (stdout, out_thread) = collect(child.stdout.take().expect("stdout"));
    let (stderr, err_thread) = collect(child.stderr.take().expect("stderr"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let started = |s: &Arc<Mutex<String>>| s.lock().unwrap().contains("started realtime");
        if started(&stdout) || started(&stderr) {
            break;
        }
        if Instant::now() > deadline || child.try_wait().expect("wait").is_some() {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "realtime never logged `started realtime`\nstdout:\n{}\nstderr:\n{}",
                stdout.lock().unwrap(),
                stderr.lock().unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    sigterm(&child);
    assert!(wait_exit(&mut child).success());
    out_thread.join().unwrap();
    err_thread.join().unwrap();
    let take = |s: Arc<Mutex<String>>| std::mem::take(&mut *s.lock().unwrap());
    (take(stdout), take(stderr))
}

/// `logging.appenders[].target` (console appender): with `target: stderr` the service's
/// INFO lines (`started realtime`, logged by ferrowizard) go to stderr and none to stdout;
/// with `target: stdout` the opposite. The service's own `listening on` lines are on stdout
/// both times (the capture works).
///
/// Catches: `target` ignored (every line on stdout, the default, with `target: stderr`),
/// or the two streams swapped.
#[test]
fn console_target_picks_the_stream_the_log_lines_go_to() {
    for (target, on_stderr) in [("stderr", true), ("stdout", false)] {
        let dir = tempfile::tempdir().unwrap();
        let (stdout, stderr) = run_until_started(&config(
            dir.path(),
            &format!(
                "logging:\n  level: INFO\n  appenders:\n    - type: console\n      target: {target}\n      \
                 logFormat: 'KEYS %c: %m%n'\n"
            ),
        ));
        let started = "KEYS ferrowizard::server: started realtime";
        let (to, other, other_name) = if on_stderr {
            (&stderr, &stdout, "stdout")
        } else {
            (&stdout, &stderr, "stderr")
        };
        assert!(
            to.lines().any(|l| l == started),
            "target {target}: no `{started}` there:\n{to}"
        );
        assert!(
            !other.lines().any(|l| l.starts_with("KEYS ")),
            "target {target}: log lines on {other_name}:\n{other}"
        );
        assert!(
            stdout.contains("application listening on "),
            "target {target}: stdout not captured:\n{stdout}"
        );
    }
}

/// `metrics.reporters[].logger`: a `log` reporter with `logger: reports` writes its lines
/// under the logger `reports`, whose level (INFO) lets them through while the root is at
/// WARN: every report line starts with `reports type=`, none with the default logger's
/// name (`metrics`).
///
/// Catches: `logger` ignored (lines under `metrics`, which is at WARN here: no report line
/// at all).
#[test]
fn a_log_reporter_writes_to_the_logger_it_names() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = start(&config(
        dir.path(),
        "logging:\n  level: WARN\n  loggers:\n    reports: INFO\n  appenders:\n    - type: file\n      \
         currentLogFilename: DIR/app.log\n      archive: false\n      logFormat: '%c %m%n'\n\
         metrics:\n  frequency: 1 hour\n  reporters:\n    - type: log\n      logger: reports\n      \
         frequency: 100ms\n",
    ));
    let log = dir.path().join("app.log");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if text.lines().any(|l| l.starts_with("reports type=")) {
            break;
        }
        assert!(Instant::now() < deadline, "no report line in:\n{text}");
        std::thread::sleep(Duration::from_millis(50));
    }
    sigterm(&service.child);
    assert!(wait_exit(&mut service.child).success());
    let text = std::fs::read_to_string(&log).unwrap();
    let reports: Vec<&str> = text.lines().filter(|l| l.contains(" type=")).collect();
    assert!(!reports.is_empty(), "{text}");
    assert!(
        reports.iter().all(|l| l.starts_with("reports type=")),
        "{text}"
    );
    assert!(!text.lines().any(|l| l.starts_with("metrics ")), "{text}");
}
