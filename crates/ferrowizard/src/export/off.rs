//! The export in a build without the `otlp` feature: `opentelemetry.enabled: true` is refused,
//! and the rest does nothing.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use ferrowizard_logging::{AppenderLayer, InstallError, Logging, LoggingGuard};

use super::error::ExportError;
use super::span::{Recording, ServerSpan};
use crate::config::opentelemetry::OpenTelemetryFactory;
use crate::trace::TraceContext;
use ferrowizard_logging::config::LoggingType;

/// No export: there is none to start.
pub(crate) struct Export;

impl Export {
    /// Refuses `opentelemetry.enabled: true`, which this build cannot honour.
    pub(crate) fn start(
        factory: &OpenTelemetryFactory,
        _trace_context: bool,
        _logging: LoggingType,
        app_name: &str,
    ) -> Result<Export, ExportError> {
        if factory.enabled {
            return Err(ExportError::NotBuilt {
                app: app_name.to_owned(),
            });
        }
        Ok(Export)
    }

    /// Installs `logging` with its `layer` as the process's subscriber (`timeout`: how long a
    /// stop waits for the log lines queued).
    pub(crate) fn install(
        &self,
        logging: Logging,
        layer: AppenderLayer,
        timeout: Duration,
    ) -> Result<LoggingGuard, InstallError> {
        use tracing_subscriber::layer::SubscriberExt;
        logging.install(tracing_subscriber::registry().with(layer), timeout)
    }

    /// No counters: nothing is dropped.
    pub(crate) fn counters(&self) -> Vec<(&'static str, Arc<AtomicU64>)> {
        Vec::new()
    }

    /// Nothing is queued.
    pub(crate) fn shutdown(self) {}
}

/// A request's open span: there is none without an export (the type has no value).
pub(crate) enum RequestSpan {}

/// A request's OpenTelemetry context in place: none without an export.
pub(crate) enum Entered {}

impl RequestSpan {
    /// Makes the request's context current until the guard drops.
    pub(crate) fn enter(&self) -> Entered {
        match *self {}
    }

    /// The route a merged router found after the span started.
    pub(crate) fn routed(&mut self, _route: &str) {
        match *self {}
    }

    /// Ends the span with its response's status.
    pub(crate) fn end(self, _status: u16) {
        match self {}
    }
}

/// No export decides: the caller's sampled flag stands.
#[inline(always)]
pub(crate) fn decide(_trace: &TraceContext) -> Option<bool> {
    None
}

/// No export records the request.
#[inline(always)]
pub(crate) fn start<'a>(
    _trace: &mut TraceContext,
    _span: impl FnOnce() -> ServerSpan<'a>,
) -> Recording<RequestSpan> {
    Recording::NoExport
}
