//! Why the export did not start.

// Without the `otlp` feature only the refusal and `NoExport` are made.
#![cfg_attr(not(feature = "otlp"), allow(dead_code))]

/// `opentelemetry:` asks for what this build or the rest of the configuration cannot give, or
/// its exporters could not start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ExportError {
    /// The build has no `otlp` feature.
    #[cfg_attr(feature = "otlp", allow(dead_code))]
    #[error(
        "opentelemetry.enabled: this build of {app} has no OpenTelemetry export; build it \
         with ferrowizard's `otlp` feature, or set enabled: false"
    )]
    NotBuilt {
        /// The application's name.
        app: String,
    },
    /// The spans exported are the requests', which need trace context.
    #[error(
        "opentelemetry.enabled needs server.traceContext.enabled: true (the spans exported \
         are the requests')"
    )]
    NoTraceContext,
    /// The export's layers go into the subscriber ferrowizard installs.
    #[error(
        "opentelemetry.enabled needs logging.type: default (with an external subscriber, add \
         tracing-opentelemetry's layer to it yourself)"
    )]
    ExternalLogging,
    /// An exporter, or the export's runtime, did not start.
    #[error("opentelemetry: {0}")]
    Failed(String),
}
