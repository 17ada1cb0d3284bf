//! "Realtime interface": the handlers of the report's service, shared by the ferrowizard
//! service (`realtime`) and the bare baseline used in benchmarks (`realtime-bare`).

pub mod app;
pub mod bare;
pub mod page;
pub mod stream;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use ferrowizard::health::{Health, HealthCheck};
use serde::{Deserialize, Serialize};
use tokio::sync::RwLock;

/// One symbol's quote.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Quote {
    /// The symbol.
    pub symbol: String,
    /// The last price.
    pub price: f64,
    /// Change since the feed started.
    pub change: f64,
    /// Shares traded through `POST /realtime/events`.
    pub volume: u64,
    /// Milliseconds since the Unix epoch of the last tick.
    pub updated_at: u64,
}

/// The in-memory feed.
pub struct Feed {
    quotes: RwLock<BTreeMap<String, Quote>>,
    /// Set by an operator (the `feed` admin task): prices stop moving.
    paused: AtomicBool,
    last_tick: std::sync::Mutex<Instant>,
    interval: Duration,
    /// How long a long poll waits for the next move before it answers 204.
    long_poll: Duration,
    events: AtomicU64,
    /// The ticks so far: for the health check, and for long polls
    /// (`GET /realtime/quotes/{symbol}/next`) to wait on.
    ticked: tokio::sync::watch::Sender<u64>,
}

/// How long `GET /realtime/quotes/{symbol}/next` waits by default for the next price move
/// before it answers 204 No Content (the client asks again): shorter than the usual proxy
/// and client timeouts of 60 s, so that a quiet feed never looks like a broken server.
pub const LONG_POLL: Duration = Duration::from_secs(30);

fn epoch_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Feed {
    /// A feed for `symbols`, moving every `interval`, whose long polls wait [`LONG_POLL`].
    pub fn new(symbols: &[String], interval: Duration) -> Arc<Feed> {
        Feed::with_long_poll(symbols, interval, LONG_POLL)
    }

    /// A feed for `symbols`, moving every `interval`, whose long polls wait `long_poll`.
    ///
    /// ```
    /// let feed = realtime::Feed::with_long_poll(
    ///     &["ACME".to_owned()],
    ///     std::time::Duration::from_millis(100),
    ///     std::time::Duration::from_secs(5),
    /// );
    /// assert!(feed.healthy().is_healthy());
    /// ```
    pub fn with_long_poll(
        symbols: &[String],
        interval: Duration,
        long_poll: Duration,
    ) -> Arc<Feed> {
        let quotes = symbols
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let price = 100.0 + 10.0 * i as f64;
                (
                    s.clone(),
                    Quote {
                        symbol: s.clone(),
                        price,
                        change: 0.0,
                        volume: 0,
                        updated_at: epoch_ms(),
                    },
                )
            })
            .collect();
        Arc::new(Feed {
            quotes: RwLock::new(quotes),
            paused: AtomicBool::new(false),
            last_tick: std::sync::Mutex::new(Instant::now()),
            interval,
            long_poll,
            events: AtomicU64::new(0),
            ticked: tokio::sync::watch::Sender::new(0),
        })
    }

    /// Moves every price a little (a deterministic walk), forever. Spawn it.
    pub async fn run(self: Arc<Self>) {
        let mut tick = tokio::time::interval(self.interval);
        loop {
            tick.tick().await;
            if self.paused.load(Relaxed) {
                continue;
            }
            let n = *self.ticked.borrow();
            let mut quotes = self.quotes.write().await;
            for (i, q) in quotes.values_mut().enumerate() {
                let step = (((n + i as u64) * 2_654_435_761) % 21) as f64 / 100.0 - 0.10;
                q.price = ((q.price + step).max(0.01) * 100.0).round() / 100.0;
                q.change = ((q.change + step) * 100.0).round() / 100.0;
                q.updated_at = epoch_ms();
            }
            drop(quotes);
            if let Ok(mut t) = self.last_tick.lock() {
                *t = Instant::now();
            }
            self.ticked.send_replace(n + 1);
            tracing::trace!(target: "realtime::feed", tick = n, "prices moved");
        }
    }

    /// Stops (`true`) or restarts the price moves: what an operator does during a market
    /// halt. Returns whether the feed was paused before.
    pub fn pause(&self, paused: bool) -> bool {
        self.paused.swap(paused, Relaxed)
    }

    /// Healthy while the feed ticks: the last tick is at most ten intervals old.
    pub fn healthy(&self) -> Health {
        if self.paused.load(Relaxed) {
            return Health::unhealthy("paused by an operator (POST /tasks/feed?action=resume)");
        }
        let age = self
            .last_tick
            .lock()
            .map(|t| t.elapsed())
            .unwrap_or_default();
        if age <= self.interval * 10 + Duration::from_millis(500) {
            Health::healthy_with(format!(
                "{} ticks, last {} ms ago",
                *self.ticked.borrow(),
                age.as_millis()
            ))
        } else {
            Health::unhealthy(format!("no tick for {} ms", age.as_millis()))
        }
    }
}

/// `{"error": message}` with a status.
fn error(status: StatusCode, message: String) -> Response {
    (status, Json(serde_json::json!({ "error": message }))).into_response()
}

// `debug_handler` names the argument axum cannot extract when a handler does not fit; it
// expands to `::axum` paths, so it needs axum among the crate's own dependencies.
#[ferrowizard::axum::debug_handler]
async fn quote(State(feed): State<Arc<Feed>>, Path(symbol): Path<String>) -> Response {
    let symbol = symbol.to_ascii_uppercase();
    tracing::debug!(target: "realtime::quotes", symbol = symbol.as_str(), "quote requested");
    current(&feed, &symbol).await
}

/// `symbol`'s quote as JSON, or 404.
async fn current(feed: &Feed, symbol: &str) -> Response {
    match feed.quotes.read().await.get(symbol) {
        Some(q) => Json(q.clone()).into_response(),
        None => unknown(symbol),
    }
}

fn unknown(symbol: &str) -> Response {
    tracing::debug!(target: "realtime::quotes", symbol, "unknown symbol");
    error(StatusCode::NOT_FOUND, format!("unknown symbol {symbol}"))
}

/// A long poll: the quote as soon as prices next move, or 204 after the feed's long poll (while an
/// operator has paused the feed, for instance). What a dashboard uses instead of polling
/// `GET /realtime/quotes/{symbol}` in a loop.
async fn next_quote(State(feed): State<Arc<Feed>>, Path(symbol): Path<String>) -> Response {
    let symbol = symbol.to_ascii_uppercase();
    // Subscribed before the symbol is looked up, so that a tick in between is not missed.
    let mut ticked = feed.ticked.subscribe();
    if !feed.quotes.read().await.contains_key(&symbol) {
        return unknown(&symbol);
    }
    tracing::debug!(target: "realtime::quotes", symbol = symbol.as_str(), "next quote awaited");
    match tokio::time::timeout(feed.long_poll, ticked.changed()).await {
        Ok(Ok(())) => current(&feed, &symbol).await,
        // No move within the long poll (or the feed is gone): nothing new to say.
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}

async fn quotes(State(feed): State<Arc<Feed>>) -> Response {
    tracing::debug!(target: "realtime::quotes", "all quotes requested");
    let all: Vec<Quote> = feed.quotes.read().await.values().cloned().collect();
    Json(all).into_response()
}

/// A market event posted by a client.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Event {
    /// The symbol it concerns.
    pub symbol: String,
    /// `trade` or `alert`.
    pub kind: String,
    /// Shares, 1 to 1,000,000.
    pub quantity: u64,
    /// For a trade: the price, above 0.
    #[serde(default)]
    pub price: Option<f64>,
}

async fn event(State(feed): State<Arc<Feed>>, body: bytes::Bytes) -> Response {
    let event: Event = match serde_json::from_slice(&body) {
        Ok(e) => e,
        Err(e) => {
            tracing::debug!(target: "realtime::events", error = %e, "rejected event");
            return error(StatusCode::BAD_REQUEST, format!("invalid event: {e}"));
        }
    };
    let symbol = event.symbol.to_ascii_uppercase();
    // A span of the request's own: a child of its `http.server.request` span when traced.
    let problem = tracing::debug_span!(target: "realtime::events", "validate").in_scope(|| {
        tracing::trace!(target: "realtime::events", kind = event.kind.as_str(), "validating");
        match (event.kind.as_str(), event.price) {
            _ if !(1..=1_000_000).contains(&event.quantity) => Some(format!(
                "quantity must be 1 to 1000000, not {}",
                event.quantity
            )),
            ("trade", Some(p)) if p > 0.0 && p.is_finite() => None,
            ("trade", _) => Some("a trade needs a price above 0".to_owned()),
            ("alert", _) => None,
            (other, _) => Some(format!("kind must be trade or alert, not {other:?}")),
        }
    });
    if let Some(problem) = problem {
        tracing::debug!(target: "realtime::events", symbol = symbol.as_str(), problem, "rejected event");
        return error(StatusCode::BAD_REQUEST, problem);
    }
    let mut quotes = feed.quotes.write().await;
    let Some(q) = quotes.get_mut(&symbol) else {
        return error(StatusCode::NOT_FOUND, format!("unknown symbol {symbol}"));
    };
    if event.kind == "trade" {
        q.volume += event.quantity;
    }
    drop(quotes);
    let id = feed.events.fetch_add(1, Relaxed) + 1;
    // Through the `metrics` facade, as a library would: it lands in ferrowizard's registry.
    metrics::counter!("realtime.events.accepted").increment(1);
    tracing::info!(target: "realtime::events", id, symbol = symbol.as_str(), kind = event.kind.as_str(), quantity = event.quantity, "event accepted");
    (StatusCode::ACCEPTED, Json(serde_json::json!({ "id": id }))).into_response()
}

/// The service's routes: an axum router whose state, the feed, is set once. ferrowizard's
/// `Environment::routes` serves it (each route timed under its template), and so does the
/// bare baseline.
pub fn router(feed: &Arc<Feed>) -> Router {
    Router::new()
        .route("/realtime/", get(page::page))
        .route("/realtime/app.css", get(page::style))
        .route("/realtime/quotes", get(quotes))
        .route("/realtime/quotes/{symbol}", get(quote))
        .route("/realtime/quotes/{symbol}/next", get(next_quote))
        .route("/realtime/events", post(event))
        .with_state(feed.clone())
}

/// The symbols quoted by default.
pub fn default_symbols() -> Vec<String> {
    ["ACME", "GLOBEX", "INITECH", "UMBRELLA"]
        .map(str::to_owned)
        .to_vec()
}

/// `/healthcheck`'s `quotes`: [`Feed::healthy`].
impl HealthCheck for Feed {
    async fn check(&self) -> Health {
        self.healthy()
    }
}
