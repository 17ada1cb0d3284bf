//! A WebSocket route's socket, counted, and ended with 1001 at shutdown.

use std::sync::Arc;

use axum::extract::ws::{self, CloseFrame, Message, WebSocketUpgrade};
use axum::response::Response;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::Mutex;

use super::streams::{Kind, OpenGuard, Streams};
use super::tally::{Ending, Tallied, Tally};

/// axum's [`WebSocket`](ws::WebSocket), as [`Streams::websocket`] hands it to a handler: the
/// same `recv` and `send`, with the messages counted (text and binary ones; pings, pongs and
/// close frames are the protocol's own) for the request log and the metrics.
pub struct WebSocket {
    stream: SplitStream<ws::WebSocket>,
    /// Shared with the task that runs the handler, which sends the close frame at shutdown
    /// after dropping the handler.
    sink: Arc<Mutex<SplitSink<ws::WebSocket, Message>>>,
    guard: Arc<OpenGuard>,
}

impl std::fmt::Debug for WebSocket {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebSocket").finish_non_exhaustive()
    }
}

impl WebSocket {
    /// The next message; `None` once the connection is closed.
    pub async fn recv(&mut self) -> Option<Result<Message, axum::Error>> {
        let message = self.stream.next().await;
        if let Some(Ok(Message::Text(_) | Message::Binary(_))) = &message {
            self.guard.message_in();
        }
        message
    }

    /// Sends `message` (and flushes it).
    pub async fn send(&mut self, message: Message) -> Result<(), axum::Error> {
        let bytes = match &message {
            Message::Text(t) => Some(t.len()),
            Message::Binary(b) => Some(b.len()),
            _ => None,
        };
        self.sink.lock().await.send(message).await?;
        if let Some(n) = bytes {
            self.guard.message_out(n);
        }
        Ok(())
    }
}

/// How long a WebSocket's close frame may take to go out at shutdown.
const CLOSE_WRITE: std::time::Duration = std::time::Duration::from_secs(1);

impl Streams {
    /// Upgrades the request to a WebSocket run by `handler`, as axum's
    /// [`WebSocketUpgrade::on_upgrade`] does, with the socket counted: the request-log line
    /// is written when the socket ends (status 101, its duration, the bytes and messages
    /// sent, the messages received), and the metrics count it open and its messages. When
    /// the server shuts down, `handler` is dropped and the client gets a close frame with
    /// code 1001 (going away).
    ///
    /// ```
    /// use ferrowizard::axum::extract::{State, ws::WebSocketUpgrade};
    /// use ferrowizard::axum::response::Response;
    /// use ferrowizard::stream::Streams;
    ///
    /// async fn echo(State(streams): State<Streams>, upgrade: WebSocketUpgrade) -> Response {
    ///     streams.websocket(upgrade, |mut socket| async move {
    ///         while let Some(Ok(message)) = socket.recv().await {
    ///             if socket.send(message).await.is_err() {
    ///                 break;
    ///             }
    ///         }
    ///     })
    /// }
    /// ```
    pub fn websocket<F, Fut>(&self, upgrade: WebSocketUpgrade, handler: F) -> Response
    where
        F: FnOnce(WebSocket) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let tally = Arc::new(Tally::default());
        let ending = Ending(tally.clone());
        let streams = self.clone();
        let counted = tally.clone();
        let mut response = upgrade.on_upgrade(move |socket| async move {
            let guard = Arc::new(streams.opened(Kind::WebSocket, counted));
            let (sink, stream) = socket.split();
            let sink = Arc::new(Mutex::new(sink));
            let socket = WebSocket {
                stream,
                sink: sink.clone(),
                guard: guard.clone(),
            };
            let shutting_down = tokio::select! {
                () = handler(socket) => false,
                () = streams.closing() => true,
            };
            // The handler (and its half of the socket) is dropped by now: the sink is free.
            if shutting_down {
                let close = Message::Close(Some(CloseFrame {
                    code: 1001,
                    reason: "server shutting down".into(),
                }));
                let mut sink = sink.lock().await;
                let _ = tokio::time::timeout(CLOSE_WRITE, async {
                    let _ = sink.send(close).await;
                    let _ = sink.close().await;
                })
                .await;
            }
            // The line first, then the count: a shutdown waiting for the streams to end
            // finds the line written.
            drop(ending);
            drop(guard);
        });
        response.extensions_mut().insert(Tallied {
            tally,
            upgraded: true,
        });
        response
    }
}
