//! SIGTERM and SIGINT, which stop a service in order.

/// SIGTERM and SIGINT, handled from when this is installed.
pub(super) struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
}

impl Signals {
    /// Installs the handlers: from now on, neither signal ends the process by its default
    /// action. Must be called inside a tokio runtime.
    pub(super) fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(Signals {
            term: signal(SignalKind::terminate())?,
            int: signal(SignalKind::interrupt())?,
        })
    }

    /// The name of the first signal to come.
    pub(super) async fn recv(&mut self) -> &'static str {
        tokio::select! {
            _ = self.term.recv() => "SIGTERM",
            _ = self.int.recv() => "SIGINT",
        }
    }
}
