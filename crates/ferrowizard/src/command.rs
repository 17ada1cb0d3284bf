//! An application's own subcommands, beside `server` and `check`: DropWizard's `Command`
//! (arguments only) and `ConfiguredCommand` (the configuration file loaded and validated
//! first, with `--set` overrides, as `server` does).

use std::future::Future;
use std::pin::Pin;

use clap::ArgMatches;

use crate::errors::RunError;

type Outcome = Pin<Box<dyn Future<Output = Result<(), RunError>> + Send>>;

/// What runs the command.
enum Runner<C> {
    Plain(Box<dyn Fn(ArgMatches) -> Outcome + Send + Sync>),
    Configured(Box<dyn Fn(ArgMatches, C) -> Outcome + Send + Sync>),
}

/// A subcommand of an application, listed by [`Application::commands`]: its clap definition
/// (name, about, arguments) and what it runs, inside a tokio runtime. `Ok` exits 0; an error
/// is printed as one line (`NAME: COMMAND: error`) and exits 1.
///
/// ```
/// use ferrowizard::config::FrameworkConfiguration;
/// use ferrowizard::{Command, Config};
///
/// /// The service's configuration.
/// #[derive(Clone, Debug, Config)]
/// pub struct AppConfig {
///     /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
///     #[config(framework)]
///     pub framework: FrameworkConfiguration,
/// }
///
/// // `app greet --name Ada`: arguments only.
/// let greet: Command<AppConfig> = Command::new(
///     clap::Command::new("greet")
///         .about("Print a greeting")
///         .arg(clap::Arg::new("name").long("name").default_value("world")),
///     |args| async move {
///         let name = args.get_one::<String>("name").cloned().unwrap_or_default();
///         println!("hello, {name}");
///         Ok(())
///     },
/// );
/// // `app ports config.yaml [--set k=v]...`: the configuration loaded and validated first.
/// let ports: Command<AppConfig> = Command::configured(
///     clap::Command::new("ports").about("Print the configured application ports"),
///     |_, config: AppConfig| async move {
///         println!("{:?}", ferrowizard::config::Configuration::server(&config));
///         Ok(())
///     },
/// );
/// ```
///
/// [`Application::commands`]: crate::Application::commands
pub struct Command<C> {
    cli: clap::Command,
    runner: Runner<C>,
}

impl<C> Command<C> {
    /// A command that takes its arguments only (`cli` defines them).
    pub fn new<F, Fut>(cli: clap::Command, run: F) -> Command<C>
    where
        F: Fn(ArgMatches) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), RunError>> + Send + 'static,
    {
        Command {
            cli,
            runner: Runner::Plain(Box::new(move |args| Box::pin(run(args)))),
        }
    }

    /// A command that also takes the configuration file (a `CONFIG` argument and `--set`
    /// overrides, added to `cli`), loaded and validated before `run` is called; a bad file is
    /// reported as `check` reports it, and exits 1.
    pub fn configured<F, Fut>(cli: clap::Command, run: F) -> Command<C>
    where
        F: Fn(ArgMatches, C) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), RunError>> + Send + 'static,
    {
        let cli = cli
            .arg(
                clap::Arg::new(CONFIG)
                    .value_name("CONFIG")
                    .help("The YAML (or .json) configuration file")
                    .required(true)
                    .value_parser(clap::value_parser!(std::path::PathBuf)),
            )
            .arg(
                clap::Arg::new(SET)
                    .long("set")
                    .value_name("PATH=VALUE")
                    .help("Override a value (see `check --help`)")
                    .action(clap::ArgAction::Append),
            );
        Command {
            cli,
            runner: Runner::Configured(Box::new(move |args, config| Box::pin(run(args, config)))),
        }
    }

    /// The command's name.
    pub fn name(&self) -> &str {
        self.cli.get_name()
    }

    pub(crate) fn cli(&self) -> &clap::Command {
        &self.cli
    }

    /// Runs the command with its parsed `args`: the configuration loaded first when the
    /// command is configured (`load` reports a bad one as a message).
    pub(crate) async fn run(
        &self,
        args: ArgMatches,
        load: impl FnOnce(&std::path::Path, &[String]) -> Result<C, String>,
    ) -> Result<(), Failure> {
        match &self.runner {
            Runner::Plain(run) => run(args).await.map_err(Failure::Run),
            Runner::Configured(run) => {
                let path = args
                    .get_one::<std::path::PathBuf>(CONFIG)
                    .cloned()
                    .unwrap_or_default();
                let overrides: Vec<String> = args
                    .get_many::<String>(SET)
                    .map(|v| v.cloned().collect())
                    .unwrap_or_default();
                let config = load(&path, &overrides).map_err(Failure::Config)?;
                run(args, config).await.map_err(Failure::Run)
            }
        }
    }
}

/// Why a command failed.
pub(crate) enum Failure {
    /// The configuration did not load (the report, printed as is).
    Config(String),
    /// The command's runtime did not start.
    Runtime(std::io::Error),
    /// The command's own error.
    Run(RunError),
}

const CONFIG: &str = "config";
const SET: &str = "set";
