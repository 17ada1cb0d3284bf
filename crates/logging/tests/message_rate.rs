//! `messageRate`: an appender lets at most one event a period through, whatever its level;
//! the rest are dropped and counted, as DropWizard's throttling appender drops them.

use std::path::Path;
use std::time::Duration;

use ferrowizard_config::Duration as ConfigDuration;
use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::{AppenderFactory, FileAppenderFactory};

fn factory(path: &Path, rate: Option<ConfigDuration>) -> LoggingFactory {
    LoggingFactory {
        appenders: vec![AppenderFactory::File(FileAppenderFactory {
            common: ferrowizard_logging::config::AppenderCommon {
                log_format: Some("%-5p %m%n".into()),
                message_rate: rate,
                ..Default::default()
            },
            current_log_filename: Some(path.display().to_string()),
            archive: false,
            ..Default::default()
        })],
        ..Default::default()
    }
}

/// Logs `events` (alternating INFO and ERROR) and returns the lines written and the counts
/// (written, dropped).
fn run(rate: Option<ConfigDuration>, events: usize, pause: Duration) -> (Vec<String>, (u64, u64)) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let (logging, subscriber) = factory(&path, rate).build("rate-test").unwrap();
    let dispatch = tracing::Dispatch::new(subscriber);
    tracing::dispatcher::with_default(&dispatch, || {
        for i in 0..events {
            if i % 2 == 0 {
                tracing::info!("event {i}");
            } else {
                tracing::error!("event {i}");
            }
            std::thread::sleep(pause);
        }
    });
    assert!(logging.flush(Duration::from_secs(10)));
    let total = logging.stats()[0].total();
    let lines = std::fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    (lines, (total.written, total.dropped))
}

#[test]
fn one_event_a_period_passes_and_the_rest_are_counted_dropped() {
    // No rate: every event.
    let (lines, counts) = run(None, 100, Duration::ZERO);
    assert_eq!((lines.len(), counts), (100, (100, 0)));
    // A minute: the first event only, ERROR or not.
    let (lines, counts) = run(Some(ConfigDuration::minutes(1)), 100, Duration::ZERO);
    assert_eq!(lines, ["INFO  event 0"]);
    assert_eq!(counts, (1, 99));
    // A period shorter than the pause between events: every one passes.
    let (lines, counts) = run(
        Some(ConfigDuration::milliseconds(1)),
        5,
        Duration::from_millis(3),
    );
    assert_eq!((lines.len(), counts), (5, (5, 0)));
}

#[test]
fn a_rate_outside_dropwizards_bounds_is_refused() {
    for (rate, ok) in [
        ("1ms", true),
        ("1 minute", true),
        ("0s", false),
        ("61s", false),
    ] {
        let text = format!("appenders:\n  - type: console\n    messageRate: {rate}\n");
        let loaded =
            ferrowizard_config::Loader::new().load_str::<LoggingFactory>("logging.yaml", &text);
        assert_eq!(loaded.is_ok(), ok, "{rate}: {loaded:?}");
    }
}
