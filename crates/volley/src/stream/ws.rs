//! `ws:` steps: the user's WebSocket (tokio-tungstenite over the target's stream).

use tokio::time::Instant;

use futures_util::{FutureExt, SinkExt, StreamExt};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::{self, Message, client::IntoClientRequest};

use super::message::Awaiting;
use super::target::{Acted, Target};
use crate::scenario::{Await, WsStep};
use crate::session::Session;
use crate::transport::Stream;

/// A user's open WebSocket.
pub struct Socket(WebSocketStream<Stream>);

/// Runs `step` on `open`'s socket (opening it on `target` for a connect).
pub async fn act(
    target: &Target<'_>,
    open: &mut Option<Socket>,
    session: &mut Session,
    step: &WsStep,
) -> Acted {
    let started = Instant::now();
    if let Some(path) = &step.connect {
        // A socket still open goes first, as a browser's page would close it.
        *open = None;
        let mut acted = Acted::new(started, true);
        let connected = tokio::time::timeout(target.timeout, connect(target, path, step, session))
            .await
            .unwrap_or_else(|_| Err((timed_out(target), None)));
        match connected {
            Ok((socket, opened)) => {
                acted.opened = Some(opened);
                let socket = open.insert(socket);
                if let Some(wait) = &step.wait
                    && let Err(e) = awaited(socket, wait, session).await
                {
                    return acted.failed(e);
                }
                return acted;
            }
            Err((e, opened)) => {
                acted.opened = opened;
                return acted.failed(e);
            }
        }
    }
    let timed = step.wait.is_some() || step.close.is_some();
    let acted = Acted::new(started, timed);
    let Some(socket) = open.as_mut() else {
        return acted.failed(format!(
            "{}: no WebSocket open (connect it in an earlier ws step)",
            step.name
        ));
    };
    // Messages that came before this step are not the ones it awaits.
    socket.drain();
    if let Some(text) = &step.send {
        let text = match crate::template::interpolate(text, session) {
            Ok(t) => t.into_owned(),
            Err(e) => return acted.failed(e),
        };
        let sent = tokio::time::timeout(target.timeout, socket.0.send(Message::text(text))).await;
        let failed = match sent {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(format!("WebSocket send failed: {e}")),
            Err(_) => Some(timed_out(target)),
        };
        if let Some(e) = failed {
            *open = None;
            return acted.failed(e);
        }
    }
    if step.close == Some(true) {
        let result = socket.close(target.timeout).await;
        *open = None;
        return match result {
            Ok(()) => acted,
            Err(e) => acted.failed(e),
        };
    }
    if let Some(wait) = &step.wait
        && let Err(e) = awaited(socket, wait, session).await
    {
        return acted.failed(e);
    }
    acted
}

/// Opens the socket at `path`; on a failure, the error and the connection opened, if one was.
async fn connect(
    target: &Target<'_>,
    path: &str,
    step: &WsStep,
    session: &Session,
) -> Result<(Socket, crate::transport::Opened), (String, Option<crate::transport::Opened>)> {
    let built = (|| {
        let path = target.path(path, session)?;
        let scheme = if target.transport.scheme() == &http::uri::Scheme::HTTPS {
            "wss"
        } else {
            "ws"
        };
        let url = format!("{scheme}://{}{path}", target.transport.authority());
        let mut request = url
            .as_str()
            .into_client_request()
            .map_err(|e| format!("invalid WebSocket URL {url}: {e}"))?;
        for (k, v) in &target.headers(&step.headers, session)? {
            request.headers_mut().insert(k.clone(), v.clone());
        }
        Ok::<_, String>(request)
    })();
    let request = built.map_err(|e| (e, None))?;
    let (io, opened) = target.stream().await?;
    // tungstenite zeroes its whole read buffer before each read: at its default of 128 KiB
    // that costs more than the message; `http.readBuffer` also keeps 10,000 sockets small.
    let config = tokio_tungstenite::tungstenite::protocol::WebSocketConfig::default()
        .read_buffer_size(target.transport.read_buffer());
    match tokio_tungstenite::client_async_with_config(request, io, Some(config)).await {
        Ok((socket, _)) => Ok((Socket(socket), opened)),
        Err(tungstenite::Error::Http(response)) => Err((
            format!(
                "status.find.is(101), but actually found {}",
                response.status().as_u16()
            ),
            Some(opened),
        )),
        Err(e) => Err((format!("WebSocket handshake failed: {e}"), Some(opened))),
    }
}

/// Waits for `wait`'s messages on `socket`.
async fn awaited(socket: &mut Socket, wait: &Await, session: &mut Session) -> Result<(), String> {
    let deadline = tokio::time::Instant::now() + wait.timeout.get();
    let mut awaiting = Awaiting::new(wait);
    while !awaiting.done() {
        let message = match tokio::time::timeout_at(deadline, socket.0.next()).await {
            Err(_) => {
                return Err(awaiting.short(&format!("await timed out ({})", wait.timeout)));
            }
            Ok(None) => return Err(awaiting.short("WebSocket closed")),
            Ok(Some(Err(e))) => return Err(awaiting.short(&format!("WebSocket failed ({e})"))),
            Ok(Some(Ok(m))) => m,
        };
        let text = match message {
            Message::Text(t) => t.as_str().to_owned(),
            Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            Message::Close(frame) => {
                let code = frame.map_or(1005, |f| u16::from(f.code));
                return Err(awaiting.short(&format!("WebSocket closed by the server ({code})")));
            }
            // Pings are answered by tungstenite as it reads.
            Message::Ping(_) | Message::Pong(_) | Message::Frame(_) => continue,
        };
        awaiting.take(text, session)?;
    }
    awaiting.save(session)
}

impl Socket {
    /// Reads and drops what has arrived already, without waiting.
    fn drain(&mut self) {
        while let Some(Some(Ok(_))) = self.0.next().now_or_never() {}
    }

    /// Sends a close frame (1000) and waits for the server's, at most `timeout`.
    async fn close(&mut self, timeout: std::time::Duration) -> Result<(), String> {
        let normal = tungstenite::protocol::CloseFrame {
            code: tungstenite::protocol::frame::coding::CloseCode::Normal,
            reason: "".into(),
        };
        self.0
            .close(Some(normal))
            .await
            .map_err(|e| format!("WebSocket close failed: {e}"))?;
        let answered = tokio::time::timeout(timeout, async {
            while let Some(Ok(_)) = self.0.next().await {}
        })
        .await;
        answered.map_err(|_| {
            format!(
                "WebSocket close: no answer within {} ms",
                timeout.as_millis()
            )
        })
    }
}

/// A step that took longer than `http.requestTimeout`, in the words of a request's.
fn timed_out(target: &Target<'_>) -> String {
    format!("Request timeout after {} ms", target.timeout.as_millis())
}
