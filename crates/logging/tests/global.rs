//! Installed as the process's subscriber: `log` records are bridged and follow level
//! changes, and the guard writes everything on drop. (Its own test binary: it installs a
//! global subscriber.)

use std::time::Duration;

use ferrowizard_config::Level;
use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::{AppenderFactory, FileAppenderFactory, LoggerConfig};

#[test]
fn log_records_are_bridged_and_follow_level_changes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("global.log");
    let appender = FileAppenderFactory {
        common: ferrowizard_logging::config::AppenderCommon {
            log_format: Some("%-5p %c %m%n".into()),
            discarding_threshold: 0,
            ..Default::default()
        },
        current_log_filename: Some(path.display().to_string()),
        archive: false,
        // Lossless: this test is about the bridge and the guard, not the drop policy.
        ..Default::default()
    };
    let audit_path = dir.path().join("audit.log");
    let audit = FileAppenderFactory {
        common: ferrowizard_logging::config::AppenderCommon {
            log_format: Some("%c %m%n".into()),
            discarding_threshold: 0,
            ..Default::default()
        },
        current_log_filename: Some(audit_path.display().to_string()),
        archive: false,
        ..Default::default()
    };
    let audit = LoggerConfig {
        level: Level::Info,
        additive: false,
        appenders: vec![AppenderFactory::File(audit)],
    };
    let factory = LoggingFactory {
        loggers: [("legacy::audit".to_owned(), audit)].into(),
        appenders: vec![AppenderFactory::File(appender)],
        ..Default::default()
    };
    let (logging, subscriber) = factory.build("global-test").unwrap();
    let guard = logging.install(subscriber, Duration::from_secs(5)).unwrap();
    let levels = guard.logging().levels().clone();

    log::info!(target: "legacy::db", "connected to {}", "db1");
    log::warn!(target: "legacy::audit::login", "admin signed in");
    log::debug!(target: "legacy::db", "hidden at INFO");
    tracing::info!(target: "modern", user = 7, "signed in");
    levels.set("legacy::db", Some(Level::Debug), None).unwrap();
    assert_eq!(log::max_level(), log::LevelFilter::Debug);
    log::debug!(target: "legacy::db", "visible at DEBUG");
    log::trace!(target: "legacy::db", "still hidden");
    levels.set("legacy::db", None, None).unwrap();
    assert_eq!(log::max_level(), log::LevelFilter::Info);
    log::debug!(target: "legacy::db", "hidden again");
    for i in 0..10_000 {
        tracing::info!(target: "modern", i, "burst");
    }
    drop(guard);

    let text = std::fs::read_to_string(&path).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "INFO  legacy::db connected to db1");
    assert_eq!(lines[1], "INFO  modern signed in user=7");
    assert_eq!(lines[2], "DEBUG legacy::db visible at DEBUG");
    assert!(!text.contains("hidden"), "{text}");
    assert_eq!(lines.len(), 3 + 10_000, "the guard wrote everything queued");
    // A `log` record is routed by its own target to its logger's appender.
    assert_eq!(
        std::fs::read_to_string(&audit_path).unwrap(),
        "legacy::audit::login admin signed in\n"
    );
}
