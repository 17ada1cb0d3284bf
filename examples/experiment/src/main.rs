//! `experiment`: the 2014 DropWizard logging report's experiment in one command (see the library's docs and `--help`).

use std::process::ExitCode;

use clap::{CommandFactory, Parser};

use experiment::Options;

fn main() -> ExitCode {
    let options = Options::parse();
    if let Err(message) = options.check() {
        Options::command()
            .error(clap::error::ErrorKind::ArgumentConflict, message)
            .exit();
    }
    match experiment::run(&options) {
        Ok(report) if report.failures.is_empty() => ExitCode::SUCCESS,
        Ok(report) => {
            for f in &report.failures {
                eprintln!("experiment: {f}");
            }
            ExitCode::FAILURE
        }
        Err(e) => {
            eprintln!("experiment: {e}");
            ExitCode::FAILURE
        }
    }
}
