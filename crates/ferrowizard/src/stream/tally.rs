//! What a stream moved, for its request-log line.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// What a stream moved, shared by the stream and its request-log line, which the server
/// finds in the response's extensions.
#[derive(Default)]
pub(crate) struct Tally {
    pub(super) messages_in: AtomicU64,
    pub(super) messages_out: AtomicU64,
    pub(super) bytes_out: AtomicU64,
    /// A WebSocket's end, and what runs then (its request-log line); an event stream's line
    /// is written when its body ends instead.
    end: std::sync::Mutex<End>,
}

/// A WebSocket's end.
#[derive(Default)]
enum End {
    #[default]
    Open,
    /// Open, with what runs when it ends.
    Then(Box<dyn FnOnce(&Tally) + Send>),
    Ended,
}

impl std::fmt::Debug for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tally")
            .field("messages", &self.messages())
            .finish_non_exhaustive()
    }
}

impl Tally {
    /// Messages received and sent so far.
    pub(crate) fn messages(&self) -> (u64, u64) {
        (
            self.messages_in.load(Relaxed),
            self.messages_out.load(Relaxed),
        )
    }

    /// The bytes of the messages sent so far (a WebSocket's payloads).
    pub(crate) fn bytes_out(&self) -> u64 {
        self.bytes_out.load(Relaxed)
    }

    /// Runs `then` when the WebSocket has ended, or was never opened; at once if that is
    /// already so.
    pub(crate) fn when_ended(&self, then: Box<dyn FnOnce(&Tally) + Send>) {
        let mut end = self.end.lock().unwrap_or_else(|e| e.into_inner());
        if matches!(*end, End::Ended) {
            drop(end);
            then(self);
        } else {
            *end = End::Then(then);
        }
    }

    fn ended(&self) {
        let end = std::mem::replace(
            &mut *self.end.lock().unwrap_or_else(|e| e.into_inner()),
            End::Ended,
        );
        if let End::Then(then) = end {
            then(self);
        }
    }
}

/// The response extension that carries a stream's [`Tally`] to the request log.
#[derive(Clone, Debug)]
pub(crate) struct Tallied {
    pub(crate) tally: Arc<Tally>,
    /// A WebSocket: its line waits for its end ([`Tally::when_ended`]).
    pub(crate) upgraded: bool,
}

/// Ends the tally when dropped: when the WebSocket's task ends, or when its upgrade never
/// happened (the client went away first) and the task is dropped unrun.
pub(super) struct Ending(pub(super) Arc<Tally>);

impl Drop for Ending {
    fn drop(&mut self) {
        self.0.ended();
    }
}
