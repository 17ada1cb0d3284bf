//! "Realtime interface": the service of the seed experiment, built on ferrowizard.

use std::process::ExitCode;

fn main() -> ExitCode {
    ferrowizard::run(realtime::app::Realtime)
}
