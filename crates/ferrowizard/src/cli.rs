//! The command line every application gets: `server CONFIG`, `check CONFIG [--set k=v]... [--dump]`,
//! and the application's own commands ([`crate::Command`]). It parses, loads the configuration
//! and hands over to [`crate::startup`]; failures are printed here, one line each.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::app::Application;
use crate::command::Failure;
use crate::config::{self, Configuration};
use crate::startup;

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
        let load = |path: &std::path::Path, overrides: &[String]| {
            config::load::<A::Config>(path, overrides).map_err(|report| report.to_string())
        };
        return match startup::command(command, args.clone(), load) {
            Ok(()) => ExitCode::SUCCESS,
            Err(Failure::Config(report)) => {
                eprintln!("{report}");
                ExitCode::FAILURE
            }
            Err(Failure::Runtime(e)) => {
                eprintln!("{}: cannot start the runtime: {e}", app.name());
                ExitCode::FAILURE
            }
            Err(Failure::Run(e)) => {
                eprintln!("{}: {}: {e}", app.name(), command.name());
                ExitCode::FAILURE
            }
        };
    }
    let cli = match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
        Ok(cli) => cli,
        Err(e) => return usage_error(e),
    };
    match cli.command {
        Command::Server {
            config: path,
            overrides,
        } => match config::load::<A::Config>(&path, &overrides) {
            Ok(config) => {
                let name = app.name().to_owned();
                match startup::serve(app, config) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("{name}: {e}");
                        ExitCode::FAILURE
                    }
                }
            }
            Err(report) => {
                eprintln!("{report}");
                ExitCode::FAILURE
            }
        },
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
