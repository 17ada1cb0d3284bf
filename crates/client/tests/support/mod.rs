//! A service for the client to call, on a real socket: it counts the connections it accepts
//! and the requests it reads, keeps the headers of each, and answers by path:
//! - `/slow-head?ms=N`: the head after N ms;
//! - `/stall-body`: a head at once, a first piece, then nothing for 5 s;
//! - `/close-first`: the first such request the service reads is dropped with its connection
//!   (no answer); later ones are answered;
//! - `/hold?ms=N`: the answer after N ms;
//! - anything else: 200 `ok`.
#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Request, Response};
use http_body_util::{BodyExt, Full};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// What the service saw.
#[derive(Default)]
pub struct Seen {
    pub connections: AtomicUsize,
    pub closed: AtomicUsize,
    pub requests: AtomicUsize,
    pub headers: Mutex<Vec<HeaderMap>>,
    pub dropped_first: AtomicUsize,
    /// Requests in `/hold` now, and the most at once.
    pub holding: AtomicUsize,
    pub most_held: AtomicUsize,
}

/// The service, serving until the test's runtime ends.
pub struct Upstream {
    pub addr: SocketAddr,
    pub seen: Arc<Seen>,
}

impl Upstream {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    pub fn connections(&self) -> usize {
        self.seen.connections.load(Ordering::SeqCst)
    }

    pub fn last_headers(&self) -> HeaderMap {
        self.seen.headers.lock().unwrap().last().cloned().unwrap()
    }
}

type Answer = Response<http_body_util::combinators::BoxBody<Bytes, Infallible>>;

fn full(text: &'static str) -> Answer {
    Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed())
}

fn millis(req: &Request<Incoming>) -> u64 {
    req.uri()
        .query()
        .and_then(|q| q.strip_prefix("ms="))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

async fn answer(req: Request<Incoming>, seen: Arc<Seen>) -> Result<Answer, std::io::Error> {
    seen.requests.fetch_add(1, Ordering::SeqCst);
    seen.headers.lock().unwrap().push(req.headers().clone());
    match req.uri().path() {
        "/slow-head" => {
            tokio::time::sleep(Duration::from_millis(millis(&req))).await;
            Ok(full("ok"))
        }
        "/hold" => {
            let now = seen.holding.fetch_add(1, Ordering::SeqCst) + 1;
            seen.most_held.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(millis(&req))).await;
            seen.holding.fetch_sub(1, Ordering::SeqCst);
            Ok(full("ok"))
        }
        "/stall-body" => Ok(Response::new(
            Stall {
                sent: false,
                sleep: Box::pin(tokio::time::sleep(Duration::from_secs(5))),
            }
            .boxed(),
        )),
        "/close-first"
            if seen
                .dropped_first
                .compare_exchange(0, 1, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok() =>
        {
            Err(std::io::Error::other("dropped"))
        }
        "/user-agent" => {
            let agent = req
                .headers()
                .get("user-agent")
                .map(|v| v.to_str().unwrap().to_owned())
                .unwrap_or_default();
            Ok(Response::new(Full::new(Bytes::from(agent)).boxed()))
        }
        _ => Ok(full("ok")),
    }
}

/// One piece, then nothing for 5 s, then the end.
struct Stall {
    sent: bool,
    sleep: std::pin::Pin<Box<tokio::time::Sleep>>,
}

impl http_body::Body for Stall {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        use std::future::Future;
        if !self.sent {
            self.sent = true;
            return std::task::Poll::Ready(Some(Ok(Frame::data(Bytes::from_static(b"first")))));
        }
        self.sleep.as_mut().poll(cx).map(|()| None)
    }
}

/// Starts the service on a free port of 127.0.0.1, on the current runtime.
pub async fn start() -> Upstream {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let seen = Arc::new(Seen::default());
    let shared = seen.clone();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            shared.connections.fetch_add(1, Ordering::SeqCst);
            let seen = shared.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| answer(req, seen.clone()));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .await;
            });
            let _ = &shared.closed;
        }
    });
    Upstream { addr, seen }
}

/// A client section from YAML.
pub fn section(yaml: &str) -> ferrowizard_client::HttpClientConfiguration {
    ferrowizard::config::loader(&[])
        .load_str("client.yaml", if yaml.is_empty() { "{}" } else { yaml })
        .unwrap()
}

/// A client built from `yaml` in an environment of the application `orders`.
pub fn client(yaml: &str) -> (ferrowizard_client::HttpClient, ferrowizard::Environment) {
    let mut environment = ferrowizard::Environment::named("orders");
    let client = section(yaml).build("quotes", &mut environment).unwrap();
    (client, environment)
}

/// Reads a gauge or counter of the environment's registry by name.
pub fn metric(environment: &ferrowizard::Environment, name: &str) -> serde_json::Value {
    let json = environment.metrics().render_json(false);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    for kind in ["gauges", "counters", "meters", "timers"] {
        if let Some(found) = value[kind].get(name) {
            return found.clone();
        }
    }
    panic!("no metric {name} in {json}")
}
