//! Long-lived responses: WebSockets and server-sent events, written with axum's own types
//! ([`WebSocketUpgrade`](axum::extract::ws::WebSocketUpgrade),
//! [`Message`](axum::extract::ws::Message), [`Event`](axum::response::sse::Event),
//! [`KeepAlive`](axum::response::sse::KeepAlive)) and handed to [`Streams`], which gives them
//! what a request gets from the server:
//! - a request-log line when the stream ends, with its duration and the messages in and out;
//! - metrics: streams open, messages, and how long streams last;
//! - an end at shutdown: a WebSocket gets the close code 1001 (going away), an event stream
//!   ends cleanly, both within `shutdownGracePeriod`.
//!
//! ```no_run
//! use ferrowizard::axum::extract::State;
//! use ferrowizard::axum::extract::ws::{Message, WebSocketUpgrade};
//! use ferrowizard::axum::response::sse::Event;
//! use ferrowizard::axum::response::Response;
//! use ferrowizard::axum::{Router, routing::get};
//! use ferrowizard::stream::{EventStream, Streams};
//!
//! /// Echoes every message back.
//! async fn echo(State(streams): State<Streams>, upgrade: WebSocketUpgrade) -> Response {
//!     streams.websocket(upgrade, |mut socket| async move {
//!         while let Some(Ok(message)) = socket.recv().await {
//!             if socket.send(message).await.is_err() {
//!                 break;
//!             }
//!         }
//!     })
//! }
//!
//! /// Three events, then the end.
//! async fn ticks(State(streams): State<Streams>) -> EventStream {
//!     let events = (1..=3).map(|n| Ok::<_, std::convert::Infallible>(Event::default().data(n.to_string())));
//!     streams.sse(futures_util::stream::iter(events))
//! }
//!
//! fn routes(environment: &mut ferrowizard::Environment) -> Result<(), ferrowizard::RunError> {
//!     let streams = environment.streams()?;
//!     environment.routes(
//!         Router::new()
//!             .route("/echo", get(echo))
//!             .route("/ticks", get(ticks))
//!             .with_state(streams),
//!     );
//!     Ok(())
//! }
//! ```

mod sse;
mod streams;
mod tally;
mod websocket;

pub use sse::EventStream;
pub use streams::Streams;
pub(crate) use tally::{Tallied, Tally};
pub use websocket::WebSocket;
