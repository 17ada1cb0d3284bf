//! An event whose `Debug` logs: the nested events must never wait for room that the outer
//! event's unfinished slot holds back. (Its own test binary: it installs the global
//! subscriber, which, unlike a scoped one, lets logging re-enter.)

use std::fmt;
use std::time::Duration;

use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::{AppenderFactory, FileAppenderFactory};

/// Logs `n` WARN events when formatted.
struct Noisy(usize);

impl fmt::Debug for Noisy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for i in 0..self.0 {
            tracing::warn!(target: "reentrant::inner", i, "logged while formatting");
        }
        f.write_str("noisy")
    }
}

#[test]
fn events_logged_while_capturing_another_never_deadlock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("reentrant.log");
    let factory = LoggingFactory {
        appenders: vec![AppenderFactory::File(FileAppenderFactory {
            common: ferrowizard_logging::config::AppenderCommon {
                queue_size: 4,
                discarding_threshold: 0,
                ..Default::default()
            },
            current_log_filename: Some(path.display().to_string()),
            archive: false,
            // Lossless and tiny: the nested events fill it while the outer slot is open.
            ..Default::default()
        })],
        ..Default::default()
    };
    let (logging, subscriber) = factory.build("test").unwrap();
    let guard = logging.install(subscriber, Duration::from_secs(5)).unwrap();
    let (done, finished) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for _ in 0..20 {
            tracing::warn!(target: "reentrant::outer", payload = ?Noisy(10), "outer");
        }
        let _ = done.send(());
    });
    finished
        .recv_timeout(Duration::from_secs(20))
        .expect("logging deadlocked on its own unfinished slot");
    let stats = guard.logging().shutdown(Duration::from_secs(5));
    let t = stats[0].total();
    assert_eq!(t.emitted, 20 * 11, "{t:?}");
    assert_eq!(t.emitted, t.written + t.dropped, "{t:?}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        text.lines().filter(|l| l.contains("outer")).count(),
        20,
        "the outer events all waited and were written"
    );
}
