//! Logging as a layer of the application's `tracing_subscriber::Registry`: composed beside a
//! layer of the application's own (here one that counts the events it sees), both get every
//! event the configured levels let through, and none they turn away.
//!
//! Catches: `build_layer` returning a layer without its levels (the DEBUG event would reach
//! both), and a layer that keeps events from the layers beside it.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::{AppenderFactory, FileAppenderFactory};
use tracing_subscriber::layer::SubscriberExt;

/// Counts the events it is given.
struct Counting(Arc<AtomicUsize>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Counting {
    fn on_event(&self, _: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        self.0.fetch_add(1, SeqCst);
    }
}

#[test]
fn the_layer_composes_with_the_applications_own_under_the_configured_levels() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("app.log");
    let factory = LoggingFactory {
        appenders: vec![AppenderFactory::File(FileAppenderFactory {
            common: ferrowizard_logging::config::AppenderCommon {
                log_format: Some("%-5level %m%n".into()),
                ..Default::default()
            },
            current_log_filename: Some(path.display().to_string()),
            archive: false,
            ..Default::default()
        })],
        ..Default::default()
    };
    let (logging, layer) = factory.build_layer("compose").unwrap();
    let seen = Arc::new(AtomicUsize::new(0));
    let subscriber = tracing_subscriber::Registry::default()
        .with(layer)
        .with(Counting(seen.clone()));
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!("kept");
        tracing::debug!("below the default INFO");
        tracing::warn!("kept too");
    });
    logging.shutdown(Duration::from_secs(5));
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(text, "INFO  kept\nWARN  kept too\n");
    assert_eq!(seen.load(SeqCst), 2);
}
