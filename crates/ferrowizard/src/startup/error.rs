//! Why a service did not start: each step of the sequence names itself.

use ferrowizard_logging::{BuildError, InstallError};
use ferrowizard_metrics::RegistryError;

use crate::errors::RunError;
use crate::export::ExportError;
use crate::health::schedule::Unregistered;
use crate::lifecycle::StartFailed;

/// A step of the startup sequence that failed, printed as one line after the application's
/// name.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StartupError {
    /// `opentelemetry:` cannot be honoured, or its exporters did not start.
    #[error(transparent)]
    Export(#[from] ExportError),
    /// An appender of `logging:` did not start (a file it cannot open, say).
    #[error("cannot start logging: {0}")]
    Logging(BuildError),
    /// Another subscriber is already the process's.
    #[error(transparent)]
    InstallLogging(#[from] InstallError),
    /// The runtime's threads did not start.
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    /// The SIGTERM and SIGINT handlers could not be installed.
    #[error("cannot handle signals: {0}")]
    Signals(std::io::Error),
    /// The application's `run` failed.
    #[error("cannot start: {0}")]
    Run(RunError),
    /// `health.healthChecks` schedules a check the application did not register.
    #[error(transparent)]
    Health(#[from] Unregistered),
    /// A metric's name is taken.
    #[error("metrics: {0}")]
    Metrics(#[from] RegistryError),
    /// A managed resource did not start (the ones started before it are stopped).
    #[error("cannot start: {0}")]
    Managed(#[from] StartFailed),
    /// A connector did not bind.
    #[error(transparent)]
    Server(#[from] crate::server::StartError),
    /// A reporter's thread did not start.
    #[error(transparent)]
    Reporters(#[from] crate::reporters::StartError),
}
