//! The quotes as streams: a WebSocket that answers a symbol with its quote and then pushes it
//! at every price move, and an event stream of one symbol's moves. Both go through
//! ferrowizard's [`Streams`], which logs them when they end, counts them in the metrics and
//! ends them at shutdown.

use std::sync::Arc;

use axum::Router;
use axum::extract::ws::{Message, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::response::sse::{Event, KeepAlive};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ferrowizard::stream::{Streams, WebSocket};

use crate::Feed;

/// The feed and the server's streams.
#[derive(Clone)]
struct Live {
    feed: Arc<Feed>,
    streams: Streams,
}

/// The streaming routes:
/// - `GET /realtime/stream` (WebSocket): each text message names a symbol; the answer is its
///   quote at once (`{"error": ...}` for an unknown one), and from then on the quote of the
///   last symbol named after every price move;
/// - `GET /realtime/quotes/{symbol}/events` (server-sent events): a `quote` event at once
///   and after every price move, its `id` the feed's tick.
pub fn router(feed: &Arc<Feed>, streams: Streams) -> Router {
    Router::new()
        .route("/realtime/stream", get(websocket))
        .route("/realtime/quotes/{symbol}/events", get(events))
        .with_state(Live {
            feed: feed.clone(),
            streams,
        })
}

async fn websocket(State(live): State<Live>, upgrade: WebSocketUpgrade) -> Response {
    let feed = live.feed.clone();
    live.streams
        .websocket(upgrade, move |socket| subscribe(feed, socket))
}

/// Answers each symbol named, and pushes the last one's quote after every move.
async fn subscribe(feed: Arc<Feed>, mut socket: WebSocket) {
    let mut ticked = feed.ticked.subscribe();
    let mut symbol: Option<String> = None;
    loop {
        let text = tokio::select! {
            message = socket.recv() => match message {
                Some(Ok(Message::Text(text))) => {
                    let named = text.trim().to_ascii_uppercase();
                    let answer = quote_json(&feed, &named).await;
                    symbol = answer.is_ok().then_some(named);
                    answer.unwrap_or_else(|e| e)
                }
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return,
                // Pings are answered by the protocol; binary messages name nothing.
                Some(Ok(_)) => continue,
            },
            moved = ticked.changed() => {
                if moved.is_err() {
                    return;
                }
                match &symbol {
                    Some(s) => match quote_json(&feed, s).await {
                        Ok(json) => json,
                        Err(_) => continue,
                    },
                    None => continue,
                }
            }
        };
        if socket.send(Message::text(text)).await.is_err() {
            return;
        }
    }
}

/// `symbol`'s quote as JSON, or the error's JSON.
async fn quote_json(feed: &Feed, symbol: &str) -> Result<String, String> {
    match feed.quotes.read().await.get(symbol) {
        Some(q) => Ok(serde_json::to_string(q).unwrap_or_default()),
        None => Err(serde_json::json!({ "error": format!("unknown symbol {symbol}") }).to_string()),
    }
}

async fn events(State(live): State<Live>, Path(symbol): Path<String>) -> Response {
    let symbol = symbol.to_ascii_uppercase();
    // Subscribed before the first quote is read, so that a move in between is not missed.
    let ticked = live.feed.ticked.subscribe();
    if !live.feed.quotes.read().await.contains_key(&symbol) {
        return crate::unknown(&symbol);
    }
    let feed = live.feed.clone();
    let moves = futures_util::stream::unfold(
        (feed, ticked, symbol, true),
        |(feed, mut ticked, symbol, first)| async move {
            if !first && ticked.changed().await.is_err() {
                return None;
            }
            let tick = *ticked.borrow_and_update();
            let data = quote_json(&feed, &symbol).await.ok()?;
            let event = Event::default()
                .event("quote")
                .id(tick.to_string())
                .data(data);
            Some((
                Ok::<_, std::convert::Infallible>(event),
                (feed, ticked, symbol, false),
            ))
        },
    );
    live.streams
        .sse(moves)
        .keep_alive(KeepAlive::default())
        .into_response()
}
