//! The quotes as streams, on the real binary: the WebSocket `/realtime/stream` and the event
//! stream `/realtime/quotes/{symbol}/events`, and both ended by SIGTERM (close code 1001,
//! the event stream's last chunk), each with its request-log line.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use common::{Service, sigterm, start, wait_exit, write_config};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

#[path = "../../../crates/ferrowizard/tests/support/event_stream.rs"]
mod event_stream;

fn service(dir: &std::path::Path) -> Service {
    let config = write_config(
        dir,
        "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
         adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  shutdownGracePeriod: 30s\n  \
         requestLog:\n    appenders:\n      - {type: file, currentLogFilename: DIR/requests.log, archive: false}\n\
         logging:\n  appenders: []\nquotes:\n  tickInterval: 20ms\n",
    );
    start(&config)
}

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

async fn websocket(service: &Service) -> Socket {
    let tcp = tokio::net::TcpStream::connect(service.app).await.unwrap();
    let url = format!("ws://{}/realtime/stream", service.app);
    tokio_tungstenite::client_async(url.as_str(), tcp)
        .await
        .unwrap()
        .0
}

/// The next text message, as JSON.
async fn next_json(ws: &mut Socket) -> serde_json::Value {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
            Ok(Some(Ok(Message::Text(text)))) => return serde_json::from_str(&text).unwrap(),
            Ok(Some(Ok(_))) => continue,
            other => panic!("no message: {other:?}"),
        }
    }
}

/// A symbol named gets its quote at once, then one after each move; an unknown one gets an
/// error and stops the pushes; naming another symbol moves them.
///
/// Catches: no answer until the next move, pushes for a symbol never named, an unknown
/// symbol closing the socket.
#[test]
fn the_websocket_answers_a_symbol_and_pushes_its_moves() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(dir.path());
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let mut ws = websocket(&service).await;
        ws.send(Message::text("acme")).await.unwrap();
        assert_eq!(next_json(&mut ws).await["symbol"], "ACME");
        for _ in 0..3 {
            assert_eq!(next_json(&mut ws).await["symbol"], "ACME", "a pushed move");
        }
        ws.send(Message::text("NOPE")).await.unwrap();
        loop {
            // Moves pushed before the name arrived may come first.
            let answer = next_json(&mut ws).await;
            if answer.get("error").is_some() {
                assert_eq!(answer["error"], "unknown symbol NOPE");
                break;
            }
        }
        ws.send(Message::text("globex")).await.unwrap();
        assert_eq!(next_json(&mut ws).await["symbol"], "GLOBEX");
        assert_eq!(next_json(&mut ws).await["symbol"], "GLOBEX");
    });
}

/// The event stream gives a `quote` event at once and after each move, its id the feed's
/// tick, rising; SIGTERM then ends it with its last chunk and sends the open WebSocket the
/// close code 1001; the service exits 0 long before its grace period, and both streams have
/// their request-log lines with what they sent.
///
/// Catches: the streams left to the grace period (the service stops after 30 s, cutting
/// them), an event stream cut rather than ended, ids that do not rise, lines lost at
/// shutdown.
#[test]
fn sigterm_ends_the_quote_streams_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let mut service = service(dir.path());
    let mut sse = TcpStream::connect(service.app).unwrap();
    write!(
        sse,
        "GET /realtime/quotes/acme/events HTTP/1.1\r\nHost: t\r\n\r\n"
    )
    .unwrap();
    sse.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let (seen, events_seen) = std::sync::mpsc::channel();
    let events = std::thread::spawn(move || event_stream::read(sse, seen));
    for _ in 0..3 {
        events_seen.recv_timeout(Duration::from_secs(10)).unwrap();
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut ws = runtime.block_on(async {
        let mut ws = websocket(&service).await;
        ws.send(Message::text("ACME")).await.unwrap();
        next_json(&mut ws).await;
        ws
    });
    let started = std::time::Instant::now();
    sigterm(&service.child);
    let frame = runtime.block_on(async {
        loop {
            match tokio::time::timeout(Duration::from_secs(20), ws.next()).await {
                Ok(Some(Ok(Message::Close(frame)))) => return frame,
                Ok(Some(Ok(_))) => continue,
                other => panic!("no close frame: {other:?}"),
            }
        }
    });
    assert_eq!(u16::from(frame.expect("a close code").code), 1001);
    let stream = events.join().unwrap();
    assert_eq!(stream.status, 200);
    assert!(stream.clean, "the event stream ends with its last chunk");
    let events: Vec<(u64, serde_json::Value)> = stream
        .events
        .iter()
        .map(|e| {
            (
                e.id.parse().unwrap(),
                serde_json::from_str(&e.data).unwrap(),
            )
        })
        .collect();
    assert!(events.iter().all(|(_, q)| q["symbol"] == "ACME"));
    assert!(events.windows(2).all(|w| w[0].0 < w[1].0), "{events:?}");
    assert!(wait_exit(&mut service.child).success());
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "within the grace period"
    );
    let log = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
    let line = |request: &str| {
        log.lines()
            .find(|l| l.contains(request))
            .unwrap_or_else(|| panic!("no {request} in\n{log}"))
            .to_owned()
    };
    let ws_line = line("GET /realtime/stream ");
    assert!(
        ws_line.contains("\" 101 ") && ws_line.contains(" in=1 out="),
        "{ws_line}"
    );
    let sse_line = line("GET /realtime/quotes/acme/events ");
    let sent = format!(" in=0 out={}", events.len());
    assert!(sse_line.ends_with(&sent), "{sse_line}");
}

/// An unknown symbol's event stream is a 404, as its quote is.
#[test]
fn an_unknown_symbols_event_stream_is_404() {
    let dir = tempfile::tempdir().unwrap();
    let service = service(dir.path());
    let mut stream = common::connect(service.app);
    assert_eq!(
        common::get(&mut stream, "/realtime/quotes/NOPE/events").unwrap(),
        404
    );
}
