//! `flush` and `immediateFlush` on a real file, read while the appender still runs: a flush
//! returns once every line logged before it is in the file; without `immediateFlush`, lines
//! wait in the appender's buffer until then.
//!
//! Catches (the mutation run of `appender/`): a flush target taken below the queue's tail
//! (`Ring::tail`), a flush answered without flushing the file (`Worker::flush_sink`), and
//! flushes answered before their target (`Worker::answer_flushes`).

use std::path::Path;
use std::time::Duration;

use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::{AppenderFactory, FileAppenderFactory};

fn factory(path: &Path, immediate_flush: bool) -> LoggingFactory {
    LoggingFactory {
        appenders: vec![AppenderFactory::File(FileAppenderFactory {
            common: ferrowizard_logging::config::AppenderCommon {
                log_format: Some("%m%n".into()),
                discarding_threshold: 0,
                ..Default::default()
            },
            current_log_filename: Some(path.display().to_string()),
            archive: false,
            immediate_flush,
            ..Default::default()
        })],
        ..Default::default()
    }
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_flush_returns_once_every_earlier_line_is_in_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let (logging, subscriber) = factory(&path, false).build("flush-test").unwrap();
    let dispatch = tracing::Dispatch::new(subscriber);
    for round in 0..3 {
        tracing::dispatcher::with_default(&dispatch, || {
            for i in 0..20_000 {
                tracing::info!("{round} {i}");
            }
        });
        assert!(logging.flush(Duration::from_secs(30)));
        // Read while the appender runs: everything logged so far, in order.
        let got = lines(&path);
        assert_eq!(got.len(), 20_000 * (round + 1), "round {round}");
        assert_eq!(
            got.last().map(String::as_str),
            Some(format!("{round} 19999").as_str())
        );
    }
}

#[test]
fn without_immediate_flush_lines_wait_in_the_buffer_until_a_flush() {
    for immediate in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        let (logging, subscriber) = factory(&path, immediate).build("flush-test").unwrap();
        let dispatch = tracing::Dispatch::new(subscriber);
        tracing::dispatcher::with_default(&dispatch, || {
            for i in 0..10 {
                tracing::info!("line {i}");
            }
        });
        // The writer has long taken the lines (it holds a batch at most 5 ms).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while logging.stats()[0].queue_depth > 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        std::thread::sleep(Duration::from_millis(300));
        let before = lines(&path).len();
        assert_eq!(
            before,
            if immediate { 10 } else { 0 },
            "immediateFlush {immediate}"
        );
        assert!(logging.flush(Duration::from_secs(10)));
        assert_eq!(lines(&path).len(), 10, "immediateFlush {immediate}");
    }
}
