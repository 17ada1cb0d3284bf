//! The one startup sequence, and its stop in the reverse order.
//!
//! `server` (the command) starts, in order:
//! 1. the export `opentelemetry:` asks for, once the rest of the configuration is checked to
//!    give what it needs;
//! 2. logging, as the process's subscriber, with the export's layers beside it;
//! 3. the runtime, and the SIGTERM and SIGINT handlers;
//! 4. what [`Running::start`] starts, which is also what [`crate::testing::TestService`]
//!    runs: the application's `run`, its managed resources, the server, the reporters.
//!
//! On a signal it stops in the reverse order: the server drains, the managed resources and
//! the reporters stop, the runtime ends, the export sends what it holds, and logging writes
//! its last lines. A step that fails names itself ([`StartupError`]); the ones before it are
//! undone.

mod error;
mod running;
mod signals;

use std::time::Duration;

use ferrowizard_logging::config::LoggingType;

use crate::app::Application;
use crate::command::{Command, Failure};
use crate::config::Configuration;
use crate::export::Export;
pub(crate) use error::StartupError;
pub(crate) use running::Running;
use signals::Signals;

/// How long a stop waits for the log lines still queued.
const LOG_FLUSH: Duration = Duration::from_secs(5);

/// How long the runtime's blocking tasks get once the service has stopped.
const RUNTIME_SHUTDOWN: Duration = Duration::from_secs(1);

/// Runs `app` with `config` until SIGTERM or SIGINT, printing the addresses it listens on and,
/// at the end, how it stopped.
pub(crate) fn serve<A: Application>(app: A, config: A::Config) -> Result<(), StartupError> {
    let export = Export::start(
        config.opentelemetry(),
        config.server().common().trace_context.enabled,
        config.logging().kind,
        app.name(),
    )?;
    // `logging.type: external`: the application's own subscriber stays in place.
    let guard = match config.logging().kind {
        LoggingType::External => None,
        LoggingType::Default => {
            let (logging, layer) = config
                .logging()
                .build_layer(app.name())
                .map_err(StartupError::Logging)?;
            Some(export.install(logging, layer, LOG_FLUSH)?)
        }
    };
    let logging = guard.as_ref().map(|g| g.logging().clone());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(format!("{}-worker", app.name()))
        .build()
        .map_err(StartupError::Runtime)?;
    let served = runtime.block_on(async {
        // The handlers are in place before the addresses are printed: a SIGTERM sent as soon
        // as the service says it listens stops it in order, never by the default action.
        let mut signals = Signals::install().map_err(StartupError::Signals)?;
        let running = Running::start(&app, &config, logging.as_ref(), &export.counters()).await?;
        for b in running.bound() {
            println!(
                "{}: {} listening on {}://{}",
                app.name(),
                b.role,
                b.scheme,
                b.addr
            );
        }
        let signal = signals.recv().await;
        tracing::info!(target: "ferrowizard::server", signal, "shutting down");
        let left = running.stop().await;
        println!(
            "{}: stopped ({signal}; {left} connections cut at the end of the grace period)",
            app.name()
        );
        Ok(())
    });
    runtime.shutdown_timeout(RUNTIME_SHUTDOWN);
    // The spans and log events still queued go to the collector before logging stops.
    export.shutdown();
    // Dropping the guard writes every queued log line and reports losses on stderr.
    drop(guard);
    served
}

/// Runs an application's own `command` with its `args` in a runtime of its own (`load`: how
/// a configured command loads its configuration file).
pub(crate) fn command<C>(
    command: &Command<C>,
    args: clap::ArgMatches,
    load: impl FnOnce(&std::path::Path, &[String]) -> Result<C, String>,
) -> Result<(), Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Failure::Runtime)?;
    runtime.block_on(command.run(args, load))
}
