//! A user's WebSocket ([`ws`]) and event stream ([`sse`]): opened on the target's address
//! ([`Transport::stream`](crate::transport::Transport::stream)), their messages awaited and
//! checked ([`message`]). Each action says what it did; the engine records it.

pub mod message;
pub mod sse;
mod target;
pub mod ws;

pub use target::{Acted, Target};

/// The sockets a user holds open between its steps.
#[derive(Default)]
pub struct Open {
    /// Its WebSocket.
    pub ws: Option<ws::Socket>,
    /// Its event stream.
    pub sse: Option<sse::Events>,
}
