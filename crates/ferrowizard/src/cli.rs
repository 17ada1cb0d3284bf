//! The command line every application gets: `server CONFIG`, `check CONFIG [--set k=v]... [--dump]`,
//! and the application's own commands ([`crate::Command`]).

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Parser, Subcommand};

use crate::app::Application;
use crate::command::{Command as AppCommand, Failure};
use crate::config::{self, Configuration};
use crate::running::Running;
use ferrowizard_logging::config::LoggingType;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Debug, Parser)]
#[command(version, about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the service until SIGTERM or SIGINT.
    Server {
        /// The YAML (or .json) configuration file.
        config: PathBuf,
        /// Override a value (see `check --help`).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        overrides: Vec<String>,
    },
    /// Load and validate a configuration file, then exit.
    Check {
        /// The YAML (or .json) configuration file.
        config: PathBuf,
        /// Override a value: `server.applicationConnectors[0].port=9090` (repeatable; the
        /// value is read as YAML).
        #[arg(long = "set", value_name = "PATH=VALUE")]
        overrides: Vec<String>,
        /// Print the effective configuration, every default filled in.
        #[arg(long)]
        dump: bool,
    },
}

/// Runs the application's command line from the process arguments.
pub fn run<A: Application>(app: A) -> ExitCode {
    run_from(app, std::env::args_os())
}

/// Runs the application's command line from `args` (the first is the program name).
/// Exit codes: 0 success, 1 bad configuration or command line.
pub fn run_from<A: Application>(
    app: A,
    args: impl IntoIterator<Item = impl Into<OsString> + Clone>,
) -> ExitCode {
    let commands = app.commands();
    let mut cli = Cli::command_for(app.name());
    for command in &commands {
        if cli.find_subcommand(command.name()).is_some() {
            eprintln!(
                "{}: the command {:?} is ferrowizard's own: give the application's another name",
                app.name(),
                command.name()
            );
            return ExitCode::FAILURE;
        }
        cli = cli.subcommand(command.cli().clone());
    }
    let matches = match cli.try_get_matches_from(args) {
        Ok(matches) => matches,
        Err(e) => return usage_error(e),
    };
    if let Some((name, args)) = matches.subcommand()
        && let Some(command) = commands.iter().find(|c| c.name() == name)
    {
        return run_command::<A>(app.name(), command, args.clone());
    }
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match cli.command {
        Command::Server {
            config: path,
            overrides,
        } => serve(app, &path, &overrides),
        Command::Check {
            config: path,
            overrides,
            dump,
        } => match config::load::<A::Config>(&path, &overrides) {
            Ok(cfg) if dump => match config::dump(&cfg) {
                Ok(yaml) => {
                    let _ = std::io::stdout().write_all(yaml.as_bytes());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("cannot print the configuration: {e}");
                    ExitCode::FAILURE
                }
            },
            Ok(cfg) => {
                // DropWizard's Java logger names stand for Rust targets: say which.
                let loggers = cfg.logging().loggers.keys();
                for line in ferrowizard_logging::names::describe_mappings(loggers) {
                    println!("{line}");
                }
                println!("Configuration is OK");
                ExitCode::SUCCESS
            }
            Err(report) => {
                eprintln!("{report}");
                ExitCode::FAILURE
            }
        },
    }
}

/// The OpenTelemetry export `opentelemetry:` asks for, started; `None` when it is off.
#[cfg(feature = "otlp")]
fn export<C: config::Configuration>(
    config: &C,
    app_name: &str,
) -> Result<Option<crate::otlp::Export>, String> {
    let factory = config.opentelemetry();
    if !factory.enabled {
        return Ok(None);
    }
    exportable(config)?;
    crate::otlp::Export::start(factory, app_name)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// Without the `otlp` feature, `opentelemetry.enabled: true` is refused.
#[cfg(not(feature = "otlp"))]
fn export<C: config::Configuration>(config: &C, app_name: &str) -> Result<Option<()>, String> {
    if config.opentelemetry().enabled {
        return Err(format!(
            "opentelemetry.enabled: this build of {app_name} has no OpenTelemetry export; \
             build it with ferrowizard's `otlp` feature, or set enabled: false"
        ));
    }
    Ok(None)
}

/// What the export needs of the rest of the configuration: the requests' spans, and a
/// subscriber ferrowizard installs.
#[cfg(feature = "otlp")]
fn exportable<C: config::Configuration>(config: &C) -> Result<(), String> {
    if !config.server().common().trace_context.enabled {
        return Err(
            "opentelemetry.enabled needs server.traceContext.enabled: true (the spans \
                    exported are the requests')"
                .to_owned(),
        );
    }
    if config.logging().kind == LoggingType::External {
        return Err(
            "opentelemetry.enabled needs logging.type: default (with an external \
                    subscriber, add tracing-opentelemetry's layer to it yourself)"
                .to_owned(),
        );
    }
    Ok(())
}

/// `server`: load, start logging, start the server, wait for a signal, shut down in order.
fn serve<A: Application>(app: A, path: &std::path::Path, overrides: &[String]) -> ExitCode {
    let config = match config::load::<A::Config>(path, overrides) {
        Ok(c) => c,
        Err(report) => {
            eprintln!("{report}");
            return ExitCode::FAILURE;
        }
    };
    // Without the `otlp` feature, only its refusal of `enabled: true` is used.
    #[cfg_attr(not(feature = "otlp"), allow(unused_variables))]
    let export = match export(&config, app.name()) {
        Ok(export) => export,
        Err(e) => {
            eprintln!("{}: {e}", app.name());
            return ExitCode::FAILURE;
        }
    };
    // `logging.type: external`: the application's own subscriber stays in place.
    let guard = match config.logging().kind {
        LoggingType::External => None,
        LoggingType::Default => {
            let (logging, layer) = match config.logging().build_layer(app.name()) {
                Ok(built) => built,
                Err(e) => {
                    eprintln!("{}: cannot start logging: {e}", app.name());
                    return ExitCode::FAILURE;
                }
            };
            #[cfg(feature = "otlp")]
            let installed = match &export {
                Some(export) => logging.install(
                    tracing_subscriber::registry()
                        .with(layer)
                        .with(export.layer()),
                    std::time::Duration::from_secs(5),
                ),
                None => logging.install(
                    tracing_subscriber::registry().with(layer),
                    std::time::Duration::from_secs(5),
                ),
            };
            #[cfg(not(feature = "otlp"))]
            let installed = logging.install(
                tracing_subscriber::registry().with(layer),
                std::time::Duration::from_secs(5),
            );
            match installed {
                Ok(g) => Some(g),
                Err(e) => {
                    eprintln!("{}: {e}", app.name());
                    return ExitCode::FAILURE;
                }
            }
        }
    };
    let logging = guard.as_ref().map(|g| g.logging().clone());
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(format!("{}-worker", app.name()))
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{}: cannot start the runtime: {e}", app.name());
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(async {
        // The handlers are in place before the addresses are printed: a SIGTERM sent as soon
        // as the service says it listens stops it in order, never by the default action.
        let mut signals = match Signals::install() {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{}: cannot handle signals: {e}", app.name());
                return ExitCode::FAILURE;
            }
        };
        #[cfg(feature = "otlp")]
        let counters: Vec<(&str, Arc<std::sync::atomic::AtomicU64>)> = match &export {
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
        };
        #[cfg(not(feature = "otlp"))]
        let counters: Vec<(&str, Arc<std::sync::atomic::AtomicU64>)> = Vec::new();
        let running = match Running::start(&app, &config, logging.as_ref(), &counters).await {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{}: {e}", app.name());
                return ExitCode::FAILURE;
            }
        };
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
        ExitCode::SUCCESS
    });
    runtime.shutdown_timeout(std::time::Duration::from_secs(1));
    // The spans and log events still queued go to the collector before logging stops.
    #[cfg(feature = "otlp")]
    if let Some(export) = export {
        export.shutdown();
    }
    // Dropping the guard writes every queued log line and reports losses on stderr.
    drop(guard);
    code
}

/// Runs an application's own command in a runtime of its own.
fn run_command<A: Application>(
    name: &str,
    command: &AppCommand<A::Config>,
    args: clap::ArgMatches,
) -> ExitCode {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{name}: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let load = |path: &std::path::Path, overrides: &[String]| {
        config::load::<A::Config>(path, overrides).map_err(|report| report.to_string())
    };
    match runtime.block_on(command.run(args, load)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Config(report)) => {
            eprintln!("{report}");
            ExitCode::FAILURE
        }
        Err(Failure::Run(e)) => {
            eprintln!("{name}: {}: {e}", command.name());
            ExitCode::FAILURE
        }
    }
}

/// SIGTERM and SIGINT, handled from when this is installed.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The name of the first signal to come.
    async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}

fn usage_error(e: clap::Error) -> ExitCode {
    let code = if e.use_stderr() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    };
    let _ = e.print();
    code
}

impl Cli {
    fn command_for(name: &str) -> clap::Command {
        <Cli as clap::CommandFactory>::command().name(name.to_owned())
    }
}
