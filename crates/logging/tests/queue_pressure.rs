//! An appender's queue under real pressure: its file is a FIFO that nobody reads yet, so the
//! writer blocks in `write` and the queue fills; what the producers then do is the policy.
//! Also what an appender lets into its queue at all (its `threshold`).

use std::path::Path;
use std::time::{Duration, Instant};

use ferrowizard_logging::config::{AppenderFactory, FileAppenderFactory};
use ferrowizard_logging::{AppenderStats, Logging, LoggingFactory};
use tracing::Dispatch;

#[path = "support/fifo.rs"]
mod fifo;
use fifo::{drain, fifo};

/// Lines of about 100 bytes: 2,000 of them are twice what a pipe holds (64 KiB).
const LINES: usize = 2_000;

/// Starts logging WARN lines to `path` through a queue of 16 slots.
fn start(path: &Path, never_block: bool) -> (Logging, Dispatch) {
    let appender = FileAppenderFactory {
        common: ferrowizard_logging::config::AppenderCommon {
            log_format: Some("%-5p %m%n".into()),
            queue_size: 16,
            never_block,
            ..Default::default()
        },
        current_log_filename: Some(path.display().to_string()),
        archive: false,
        ..Default::default()
    };
    let factory = LoggingFactory {
        appenders: vec![AppenderFactory::File(appender)],
        ..Default::default()
    };
    let (logging, subscriber) = factory.build("pressure-test").unwrap();
    (logging, Dispatch::new(subscriber))
}

/// Logs [`LINES`] WARN lines on a thread of its own.
fn flood(dispatch: &Dispatch) -> std::thread::JoinHandle<()> {
    let dispatch = dispatch.clone();
    std::thread::spawn(move || {
        tracing::dispatcher::with_default(&dispatch, || {
            for i in 0..LINES {
                tracing::warn!("line {i:05} {}", "x".repeat(80));
            }
        })
    })
}

fn stats(logging: &Logging) -> AppenderStats {
    logging.stats().remove(0)
}

/// WARN never waits with `neverBlock`: with the writer stuck, the flood finishes at once,
/// and what found the queue full is dropped and counted, never lost silently.
///
/// Catches: the `neverBlock` condition removed from `Appender::log` (the flood then waits
/// for the writer, and never finishes while nobody reads).
#[test]
fn never_block_drops_warn_instead_of_waiting() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let read_end = fifo(&path);
    let (logging, dispatch) = start(&path, true);
    let flood = flood(&dispatch);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !flood.is_finished() {
        assert!(
            Instant::now() < deadline,
            "the flood waits for the writer: {:?}",
            stats(&logging)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    flood.join().unwrap();
    let s = stats(&logging);
    assert_eq!(s.waited, 0, "{s:?}");
    let warn = &s.levels[3];
    assert!(warn.dropped > 0, "{s:?}");
    let reader = drain(read_end);
    logging.shutdown(Duration::from_secs(10));
    drop(dispatch);
    let lines = reader.join().unwrap();
    let warn = &stats(&logging).levels[3];
    assert_eq!(lines.len() as u64, warn.written);
    assert_eq!(warn.written + warn.dropped, LINES as u64);
}

/// Without `neverBlock`, WARN waits for room: with the writer stuck, the flood waits (and
/// is counted as waiting), drops nothing, and every line arrives once the FIFO is read.
///
/// Catches: WARN dropped on a full queue (the wait in `Appender::log` turned into a drop),
/// a waiting producer never woken once the writer frees slots (the flood would not end).
#[test]
fn without_never_block_warn_waits_and_nothing_is_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let read_end = fifo(&path);
    let (logging, dispatch) = start(&path, false);
    let flood = flood(&dispatch);
    let deadline = Instant::now() + Duration::from_secs(20);
    while stats(&logging).waited == 0 {
        assert!(
            Instant::now() < deadline,
            "the flood never waited: {:?}",
            stats(&logging)
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!flood.is_finished(), "a waiting flood finished");
    let reader = drain(read_end);
    flood.join().unwrap();
    logging.shutdown(Duration::from_secs(10));
    drop(dispatch);
    let lines = reader.join().unwrap();
    assert_eq!(lines.len(), LINES);
    for (i, line) in lines.iter().enumerate() {
        assert!(line.starts_with(&format!("WARN  line {i:05} ")), "{line}");
    }
    let warn = &stats(&logging).levels[3];
    assert_eq!((warn.written, warn.dropped), (LINES as u64, 0));
}

/// An appender's `threshold` drops what is less severe before it is queued, whatever the
/// logger's level; another appender of the same logger still gets it.
///
/// Catches: `Appender::accepts` answering yes to every level.
#[test]
fn an_appenders_threshold_keeps_less_severe_events_out() {
    let dir = tempfile::tempdir().unwrap();
    let appender = |name: &str, threshold| FileAppenderFactory {
        common: ferrowizard_logging::config::AppenderCommon {
            log_format: Some("%-5p %m%n".into()),
            threshold,
            ..Default::default()
        },
        current_log_filename: Some(dir.path().join(name).display().to_string()),
        archive: false,
        ..Default::default()
    };
    let factory = LoggingFactory {
        appenders: vec![
            AppenderFactory::File(appender("warn.log", ferrowizard_config::Level::Warn)),
            AppenderFactory::File(appender("all.log", ferrowizard_config::Level::All)),
        ],
        ..Default::default()
    };
    let (logging, subscriber) = factory.build("threshold-test").unwrap();
    let dispatch = Dispatch::new(subscriber);
    tracing::dispatcher::with_default(&dispatch, || {
        tracing::info!("routine");
        tracing::warn!("unusual");
        tracing::error!("broken");
    });
    logging.shutdown(Duration::from_secs(10));
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    assert_eq!(read("warn.log"), "WARN  unusual\nERROR broken\n");
    assert_eq!(
        read("all.log"),
        "INFO  routine\nWARN  unusual\nERROR broken\n"
    );
}
