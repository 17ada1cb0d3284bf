//! The command line every application gets: `check CONFIG [--set k=v]... [--dump]`.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::config::{self, Configuration};

/// An application built on ferrowizard.
pub trait Application {
    /// Its configuration, declared with [`configuration!`](crate::configuration).
    type Config: Configuration;

    /// The name shown in `--help` and at startup.
    fn name(&self) -> &str;
}

#[derive(Debug, Parser)]
#[command(version, about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
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
    let cli = match Cli::command_for(app.name()).try_get_matches_from(args) {
        Ok(matches) => match <Cli as clap::FromArgMatches>::from_arg_matches(&matches) {
            Ok(cli) => cli,
            Err(e) => return usage_error(e),
        },
        Err(e) => return usage_error(e),
    };
    match cli.command {
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
