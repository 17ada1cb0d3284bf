//! The export in a build with the `otlp` feature: the adapters between startup and the observe
//! stage and [`super::otlp`].

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use ferrowizard_logging::config::LoggingType;
use ferrowizard_logging::{AppenderLayer, InstallError, Logging, LoggingGuard};
use tracing_subscriber::layer::SubscriberExt;

use super::error::ExportError;
use crate::config::opentelemetry::OpenTelemetryFactory;

pub(crate) use super::otlp::{RequestSpan, decide, start};

/// The export `opentelemetry:` asks for, running; none when it is off.
pub(crate) struct Export {
    running: Option<super::otlp::Export>,
}

impl Export {
    /// Starts the exporters `factory` (`opentelemetry:`) asks for, for the service
    /// `app_name`, once the rest of the configuration is checked to give what they need: the
    /// requests' spans (`trace_context`, `server.traceContext.enabled`) and a subscriber
    /// ferrowizard installs (`logging`, `logging.type`).
    pub(crate) fn start(
        factory: &OpenTelemetryFactory,
        trace_context: bool,
        logging: LoggingType,
        app_name: &str,
    ) -> Result<Export, ExportError> {
        if !factory.enabled {
            return Ok(Export { running: None });
        }
        if !trace_context {
            return Err(ExportError::NoTraceContext);
        }
        if logging == LoggingType::External {
            return Err(ExportError::ExternalLogging);
        }
        let running = super::otlp::Export::start(factory, app_name)?;
        Ok(Export {
            running: Some(running),
        })
    }

    /// Installs `logging` with its `layer`, and the export's layers beside it, as the
    /// process's subscriber (`timeout`: how long a stop waits for the log lines queued).
    pub(crate) fn install(
        &self,
        logging: Logging,
        layer: AppenderLayer,
        timeout: Duration,
    ) -> Result<LoggingGuard, InstallError> {
        // Two subscribers' types rather than an optional layer: without an export, the events
        // go through the logging layer alone.
        match &self.running {
            Some(export) => logging.install(
                tracing_subscriber::registry()
                    .with(layer)
                    .with(export.layer()),
                timeout,
            ),
            None => logging.install(tracing_subscriber::registry().with(layer), timeout),
        }
    }

    /// The export's counters, to publish as gauges by name.
    pub(crate) fn counters(&self) -> Vec<(&'static str, Arc<AtomicU64>)> {
        match &self.running {
            Some(export) => vec![
                (
                    "ferrowizard.opentelemetry.spans.dropped",
                    export.dropped_spans(),
                ),
                (
                    "ferrowizard.opentelemetry.logs.dropped",
                    export.dropped_logs(),
                ),
            ],
            None => Vec::new(),
        }
    }

    /// Exports what is queued and stops. Blocks: call it outside any runtime's worker.
    pub(crate) fn shutdown(self) {
        if let Some(export) = self.running {
            export.shutdown();
        }
    }
}
