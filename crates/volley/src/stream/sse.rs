//! `sse:` steps: the user's event stream (a GET on an HTTP/1.1 connection of its own, its body
//! parsed by eventsource-stream).

use std::pin::Pin;
use tokio::time::Instant;

use bytes::Bytes;
use eventsource_stream::Eventsource;
use futures_util::{Stream, StreamExt};
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;

use super::message::Awaiting;
use super::target::{Acted, Target};
use crate::scenario::{Await, SseStep};
use crate::session::Session;

type EventItem = Result<eventsource_stream::Event, String>;

/// A user's open event stream: its events, and the connection's task (ended with it).
pub struct Events {
    events: Pin<Box<dyn Stream<Item = EventItem> + Send>>,
    connection: tokio::task::JoinHandle<()>,
}

impl Drop for Events {
    fn drop(&mut self) {
        self.connection.abort();
    }
}

/// Runs `step` on `open`'s stream (opening it on `target` for a connect).
pub async fn act(
    target: &Target<'_>,
    open: &mut Option<Events>,
    session: &mut Session,
    step: &SseStep,
) -> Acted {
    let started = Instant::now();
    let mut acted = Acted::new(started, true);
    if let Some(path) = &step.connect {
        *open = None;
        let connected = tokio::time::timeout(target.timeout, connect(target, path, step, session))
            .await
            .unwrap_or_else(|_| {
                Err((
                    format!("Request timeout after {} ms", target.timeout.as_millis()),
                    None,
                ))
            });
        match connected {
            Ok((events, opened)) => {
                acted.opened = Some(opened);
                *open = Some(events);
            }
            Err((e, opened)) => {
                acted.opened = opened;
                return acted.failed(e);
            }
        }
    } else if step.close == Some(true) {
        return match open.take() {
            Some(_) => acted,
            None => acted.failed(format!("{}: no event stream open", step.name)),
        };
    }
    let Some(events) = open.as_mut() else {
        return acted.failed(format!(
            "{}: no event stream open (connect it in an earlier sse step)",
            step.name
        ));
    };
    if step.connect.is_none() {
        // Events that came before this step are not the ones it awaits.
        events.drain();
    }
    if let Some(wait) = &step.wait
        && let Err(e) = awaited(events, wait, step.event.as_deref(), session).await
    {
        return acted.failed(e);
    }
    acted
}

type Failed = (String, Option<crate::transport::Opened>);

/// GETs `path` with `Accept: text/event-stream` and reads the response's head.
async fn connect(
    target: &Target<'_>,
    path: &str,
    step: &SseStep,
    session: &Session,
) -> Result<(Events, crate::transport::Opened), Failed> {
    let built = (|| {
        let path = target.path(path, session)?;
        let mut request = http::Request::get(path.as_str())
            .body(Empty::<Bytes>::new())
            .map_err(|e| format!("invalid path {path:?}: {e}"))?;
        *request.headers_mut() = target.headers(&step.headers, session)?;
        let host = http::HeaderValue::from_str(target.transport.authority().as_str())
            .map_err(|e| format!("invalid host: {e}"))?;
        request.headers_mut().insert(http::header::HOST, host);
        request.headers_mut().insert(
            http::header::ACCEPT,
            http::HeaderValue::from_static("text/event-stream"),
        );
        Ok::<_, String>(request)
    })();
    let request = built.map_err(|e| (e, None))?;
    let (io, opened) = target.stream().await?;
    let failed = |e: String| (e, Some(opened));
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| failed(format!("Connection failed: {e}")))?;
    let connection = tokio::spawn(async move {
        let _ = connection.await;
    });
    let response = match sender.send_request(request).await {
        Ok(r) => r,
        Err(e) => {
            connection.abort();
            return Err(failed(format!("Request failed: {e}")));
        }
    };
    let status = response.status().as_u16();
    if status != 200 {
        connection.abort();
        return Err(failed(format!(
            "status.find.is(200), but actually found {status}"
        )));
    }
    let content_type = response
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    if !content_type.starts_with("text/event-stream") {
        connection.abort();
        return Err(failed(format!(
            "header(Content-Type).find.is(text/event-stream), but actually found {content_type:?}"
        )));
    }
    let events = response
        .into_body()
        .into_data_stream()
        .eventsource()
        .map(|e| e.map_err(|e| e.to_string()))
        .boxed();
    Ok((Events { events, connection }, opened))
}

/// Waits for `wait`'s events on `events`: those of the type `event`, when given.
async fn awaited(
    events: &mut Events,
    wait: &Await,
    event: Option<&str>,
    session: &mut Session,
) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + wait.timeout.get();
    let mut awaiting = Awaiting::new(wait);
    while !awaiting.done() {
        let e = match tokio::time::timeout_at(deadline, events.events.next()).await {
            Err(_) => {
                return Err(awaiting.short(&format!("await timed out ({})", wait.timeout)));
            }
            Ok(None) => return Err(awaiting.short("event stream ended")),
            Ok(Some(Err(e))) => return Err(awaiting.short(&format!("event stream failed ({e})"))),
            Ok(Some(Ok(e))) => e,
        };
        let kind = if e.event.is_empty() {
            "message"
        } else {
            e.event.as_str()
        };
        if event.is_some_and(|wanted| wanted != kind) {
            continue;
        }
        awaiting.take(e.data, session)?;
    }
    awaiting.save(session)
}

impl Events {
    /// Reads and drops what has arrived already, without waiting.
    fn drain(&mut self) {
        use futures_util::FutureExt;
        while let Some(Some(Ok(_))) = self.events.next().now_or_never() {}
    }
}
