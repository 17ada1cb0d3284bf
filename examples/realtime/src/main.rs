//! "Realtime interface": the service of the 2014 DropWizard logging report's experiment, built on ferrowizard.

use std::process::ExitCode;

fn main() -> ExitCode {
    ferrowizard::run(realtime::app::Realtime)
}
