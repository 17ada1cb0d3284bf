//! An event-stream route's events, counted, and ended at shutdown.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use axum::BoxError;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures_util::Stream;
use futures_util::stream::BoxStream;

use super::streams::{Kind, OpenGuard, Streams};
use super::tally::{Tallied, Tally};

/// A response of server-sent events ([`Streams::sse`]): axum's [`Sse`] with its events
/// counted, ended cleanly when the server shuts down.
#[must_use = "an EventStream does nothing until it is returned as a response"]
pub struct EventStream {
    events: Counted,
    keep_alive: Option<KeepAlive>,
}

impl std::fmt::Debug for EventStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventStream").finish_non_exhaustive()
    }
}

impl EventStream {
    /// Sends a comment when no event went out for a while, as [`Sse::keep_alive`] does
    /// (proxies close connections they think idle).
    pub fn keep_alive(mut self, keep_alive: KeepAlive) -> EventStream {
        self.keep_alive = Some(keep_alive);
        self
    }
}

impl IntoResponse for EventStream {
    fn into_response(self) -> Response {
        let tally = self.events.tally.clone();
        let sse = Sse::new(self.events);
        let mut response = match self.keep_alive {
            Some(k) => sse.keep_alive(k).into_response(),
            None => sse.into_response(),
        };
        response.extensions_mut().insert(Tallied {
            tally,
            upgraded: false,
        });
        response
    }
}

/// The handler's events, counted, until they end or the server shuts down.
struct Counted {
    events: BoxStream<'static, Result<Event, BoxError>>,
    closing: Pin<Box<dyn Future<Output = ()> + Send>>,
    /// Dropped at the end: the stream is no longer open.
    guard: Option<OpenGuard>,
    tally: Arc<Tally>,
}

impl Stream for Counted {
    type Item = Result<Event, BoxError>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = &mut *self;
        if this.guard.is_none() {
            return Poll::Ready(None);
        }
        if this.closing.as_mut().poll(cx).is_ready() {
            this.guard = None;
            return Poll::Ready(None);
        }
        let next = this.events.as_mut().poll_next(cx);
        match &next {
            Poll::Ready(Some(Ok(_))) => {
                if let Some(g) = &this.guard {
                    g.message_out(0);
                }
            }
            Poll::Ready(None) => this.guard = None,
            _ => {}
        }
        next
    }
}

impl Streams {
    /// A response of the server-sent events `events`, as axum's [`Sse`], with the events
    /// counted: the request-log line, written when the stream ends, gives them, and the
    /// metrics count the stream open and its events. When the server shuts down the stream
    /// ends cleanly after the event being sent (the client sees the response end, not a
    /// broken connection).
    ///
    /// ```
    /// use ferrowizard::axum::extract::State;
    /// use ferrowizard::axum::response::sse::{Event, KeepAlive};
    /// use ferrowizard::stream::{EventStream, Streams};
    ///
    /// async fn ticks(State(streams): State<Streams>) -> EventStream {
    ///     let events = (1..=3).map(|n| Ok::<_, std::convert::Infallible>(Event::default().data(n.to_string())));
    ///     streams
    ///         .sse(futures_util::stream::iter(events))
    ///         .keep_alive(KeepAlive::default())
    /// }
    /// ```
    pub fn sse<S, E>(&self, events: S) -> EventStream
    where
        S: Stream<Item = Result<Event, E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        use futures_util::StreamExt;
        let tally = Arc::new(Tally::default());
        EventStream {
            events: Counted {
                events: events.map(|e| e.map_err(Into::into)).boxed(),
                closing: Box::pin(self.closing()),
                guard: Some(self.opened(Kind::Sse, tally.clone())),
                tally,
            },
            keep_alive: None,
        }
    }
}
