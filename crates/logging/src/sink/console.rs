//! stdout or stderr.

use std::io::Write;

use crate::config::ConsoleTarget;

/// The process's stdout or stderr.
pub struct Console(pub ConsoleTarget);

impl super::Sink for Console {
    fn write(&mut self, batch: &[u8], _: &[usize]) -> std::io::Result<()> {
        match self.0 {
            ConsoleTarget::Stdout => std::io::stdout().lock().write_all(batch),
            ConsoleTarget::Stderr => std::io::stderr().lock().write_all(batch),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self.0 {
            ConsoleTarget::Stdout => std::io::stdout().flush(),
            ConsoleTarget::Stderr => std::io::stderr().flush(),
        }
    }

    fn describe(&self) -> String {
        match self.0 {
            ConsoleTarget::Stdout => "console stdout".into(),
            ConsoleTarget::Stderr => "console stderr".into(),
        }
    }
}
