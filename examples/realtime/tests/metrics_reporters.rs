//! `metrics:` on the real binary: `frequency`, `reportOnStop` and the `log` and `csv`
//! reporters with their own `frequency`, `includes` and `excludes`, shown on disk and in the
//! log.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{Service, connect, get, sigterm, start, wait_exit, write_config};

fn config(dir: &Path, metrics: &str) -> std::path::PathBuf {
    write_config(
        dir,
        &format!(
            "server:\n  applicationConnectors:\n    - type: http\n      port: 0\n      bindHost: 127.0.0.1\n  \
             adminConnectors:\n    - type: http\n      port: 0\n      bindHost: 127.0.0.1\n  requestLog:\n    appenders: []\n\
             logging:\n  level: WARN\n  loggers:\n    metrics: INFO\n  appenders:\n    - type: file\n      currentLogFilename: DIR/app.log\n      archive: false\n      logFormat: '%-5p %c: %m%n'\n\
             metrics:\n{metrics}"
        ),
    )
}

fn requests(service: &Service, n: usize) {
    let mut c = connect(service.app);
    for _ in 0..n {
        assert_eq!(get(&mut c, "/realtime/quotes/ACME").unwrap(), 200);
    }
}

fn stop(mut service: Service) {
    sigterm(&service.child);
    assert!(wait_exit(&mut service.child).success());
}

/// The rows (header first) of `file`, once it has at least `rows` lines; waits up to 20 s.
fn rows(file: &Path, rows: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= rows || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn the_csv_reporter_writes_a_file_per_metric_every_interval() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(&config(
        dir.path(),
        "  frequency: 1 hour\n  reporters:\n    - type: csv\n      file: DIR/csv\n      frequency: 100ms\n      excludes: ['ferrowizard.connections.application[0]']\n",
    ));
    requests(&service, 3);
    let file = dir.path().join("csv/ferrowizard.requests.csv");
    let lines = rows(&file, 4);
    assert_eq!(
        lines[0],
        "t,count,max,mean,min,stddev,p50,p75,p95,p98,p99,p999,mean_rate,m1_rate,m5_rate,m15_rate,rate_unit,duration_unit"
    );
    assert!(lines.len() >= 4, "{lines:?}");
    let last = lines.last().unwrap();
    let fields: Vec<&str> = last.split(',').collect();
    assert_eq!(fields.len(), 18, "{last}");
    assert!(
        fields[0].parse::<u64>().unwrap() > 1_700_000_000,
        "t in epoch seconds: {last}"
    );
    assert_eq!(fields[1], "3", "{last}");
    assert!(last.ends_with(",calls/second,milliseconds"));
    // A route's series: its template's slashes written `-`.
    assert!(
        dir.path()
            .join("csv/ferrowizard.routes.GET.-realtime-quotes-{symbol}.csv")
            .exists()
    );
    assert!(
        !dir.path()
            .join("csv/ferrowizard.connections.application[0].csv")
            .exists()
    );
    stop(service);
}

#[test]
fn the_log_reporter_writes_slf4j_lines_to_its_logger_and_includes_pick_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let service = start(&config(
        dir.path(),
        "  frequency: 100ms\n  reporters:\n    - type: log\n      logger: metrics\n      includes: [ferrowizard.requests]\n",
    ));
    requests(&service, 2);
    let log = dir.path().join("app.log");
    let deadline = Instant::now() + Duration::from_secs(20);
    let line = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(l) = text
            .lines()
            .find(|l| l.contains("name=ferrowizard.requests, count=2,"))
        {
            break l.to_owned();
        }
        assert!(
            Instant::now() < deadline,
            "no report with count=2 in:\n{text}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(
        line.starts_with("INFO  metrics: type=TIMER, name=ferrowizard.requests, count=2, min="),
        "{line}"
    );
    assert!(line.ends_with("rate_unit=events/second, duration_unit=milliseconds"));
    stop(service);
    // Only the included metric was reported.
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.lines()
            .filter(|l| l.contains("type="))
            .all(|l| l.contains("name=ferrowizard.requests,")),
        "{text}"
    );
}

#[test]
fn report_on_stop_reports_once_more_after_the_last_request() {
    for on_stop in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let service = start(&config(
            dir.path(),
            &format!(
                "  frequency: 1 hour\n  reportOnStop: {on_stop}\n  reporters:\n    - type: csv\n      file: DIR/csv\n"
            ),
        ));
        requests(&service, 5);
        stop(service);
        let file = dir.path().join("csv/ferrowizard.requests.csv");
        if on_stop {
            let text = std::fs::read_to_string(&file).unwrap();
            let lines: Vec<&str> = text.lines().collect();
            assert_eq!(lines.len(), 2, "{text}");
            assert_eq!(lines[1].split(',').nth(1), Some("5"), "{text}");
        } else {
            assert!(!file.exists(), "no report within the hour, none at stop");
        }
    }
}

#[test]
fn a_failing_reporter_warns_once_and_the_service_serves_on() {
    let dir = tempfile::tempdir().unwrap();
    // A file where the directory should be: every report fails.
    std::fs::write(dir.path().join("taken"), "").unwrap();
    let service = start(&config(
        dir.path(),
        "  frequency: 50ms\n  reporters:\n    - type: csv\n      file: DIR/taken\n",
    ));
    std::thread::sleep(Duration::from_millis(600));
    requests(&service, 3);
    stop(service);
    let text = std::fs::read_to_string(dir.path().join("app.log")).unwrap();
    let warnings = text
        .lines()
        .filter(|l| l.contains("cannot report metrics"))
        .count();
    assert_eq!(warnings, 1, "{text}");
}
