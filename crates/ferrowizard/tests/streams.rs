//! WebSocket and event-stream routes (`ferrowizard::stream`) on real sockets: a
//! tokio-tungstenite client and a raw HTTP/1.1 reader against a `TestService`. Their
//! request-log lines, their metrics, and their end at shutdown.

use std::io::Write;
use std::net::TcpStream;
use std::time::Duration;

use ferrowizard::axum::extract::State;
use ferrowizard::axum::extract::ws::{Message, WebSocketUpgrade};
use ferrowizard::axum::response::Response;
use ferrowizard::axum::response::sse::Event;
use ferrowizard::axum::{Router, routing::get};
use ferrowizard::config::FrameworkConfiguration;
use ferrowizard::stream::{EventStream, Streams};
use ferrowizard::testing::TestService;
use ferrowizard::{Application, Config, Environment, RunError};
use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite;

#[path = "support/event_stream.rs"]
mod event_stream;

/// ferrowizard's sections only.
#[derive(Clone, Debug, Config)]
pub struct StreamsConfig {
    /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
    #[config(framework)]
    pub framework: FrameworkConfiguration,
}

/// Echoes every text and binary message back (pings are answered by the protocol).
async fn echo(State(streams): State<Streams>, upgrade: WebSocketUpgrade) -> Response {
    streams.websocket(upgrade, |mut socket| async move {
        while let Some(Ok(message)) = socket.recv().await {
            let echoed = matches!(message, Message::Text(_) | Message::Binary(_));
            if echoed && socket.send(message).await.is_err() {
                break;
            }
        }
    })
}

/// Sends a message every 20 ms, for ever, never reading: only the server can end it.
async fn push(State(streams): State<Streams>, upgrade: WebSocketUpgrade) -> Response {
    streams.websocket(upgrade, |mut socket| async move {
        let mut n = 0u64;
        loop {
            n += 1;
            if socket.send(Message::text(n.to_string())).await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
}

/// An event every 20 ms, for ever.
async fn ticks(State(streams): State<Streams>) -> EventStream {
    let events = futures_util::stream::unfold(0u64, |n| async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        Some((
            Ok::<_, std::convert::Infallible>(Event::default().data(n.to_string())),
            n + 1,
        ))
    });
    streams.sse(events)
}

struct App;

impl Application for App {
    type Config = StreamsConfig;

    fn name(&self) -> &str {
        "streams"
    }

    async fn run(&self, _: &StreamsConfig, env: &mut Environment) -> Result<(), RunError> {
        let streams = env.streams()?;
        env.routes(
            Router::new()
                .route("/echo", get(echo))
                .route("/push", get(push))
                .route("/ticks", get(ticks))
                .with_state(streams),
        );
        Ok(())
    }
}

fn start(log: &std::path::Path) -> TestService {
    let yaml = format!(
        "server:\n  shutdownGracePeriod: 30s\n  requestLog:\n    appenders:\n      \
         - {{type: file, currentLogFilename: {}, archive: false}}\n      \
         - {{type: file, currentLogFilename: {}, archive: false, layout: {{type: access-json}}}}\n",
        log.display(),
        log.with_extension("json").display()
    );
    TestService::start(App, &yaml).unwrap()
}

/// The request-log line of `path` that holds `request`, once written (within 10 s).
fn line_of(path: &std::path::Path, request: &str) -> Option<String> {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let found = text
            .lines()
            .find(|l| l.contains(request))
            .map(str::to_owned);
        if found.is_some() || std::time::Instant::now() > deadline {
            return found;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The value of the Prometheus sample `name{labels}` at `/metrics/prometheus`.
async fn sample(service: &TestService, series: &str) -> f64 {
    let text = service
        .admin_get("/metrics/prometheus")
        .await
        .unwrap()
        .text();
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in\n{text}"))
}

async fn connect(
    service: &TestService,
    path: &str,
) -> tokio_tungstenite::WebSocketStream<tokio::net::TcpStream> {
    let url = service.application_url().replace("http://", "ws://") + path;
    let host = url.trim_start_matches("ws://").split('/').next().unwrap();
    let tcp = tokio::net::TcpStream::connect(host).await.unwrap();
    tokio_tungstenite::client_async(url.as_str(), tcp)
        .await
        .unwrap()
        .0
}

/// An echo socket: three messages each way, counted open while it is, its messages in the
/// meters, and one request-log line once it closes: status 101, its duration, the bytes and
/// the messages in and out.
///
/// Catches: the 101 logged at once (no counts, no duration), messages counted twice or not
/// at all, pings or close frames counted as messages, the open count never given back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_websocket_is_counted_and_logged_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.log");
    let service = start(&log);
    let mut ws = connect(&service, "/echo").await;
    for word in ["one", "two", "three"] {
        ws.send(tungstenite::Message::text(word)).await.unwrap();
        let back = ws.next().await.unwrap().unwrap();
        assert_eq!(back.into_text().unwrap().as_str(), word);
    }
    ws.send(tungstenite::Message::Ping(vec![1].into()))
        .await
        .unwrap();
    assert!(ws.next().await.unwrap().unwrap().is_pong());
    let open = r#"ferrowizard_streams_open{kind="websocket"}"#;
    assert_eq!(sample(&service, open).await, 1.0);
    let received = r#"ferrowizard_streams_messages_total{kind="websocket",direction="in"}"#;
    assert_eq!(sample(&service, received).await, 3.0);
    assert!(
        !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("GET /echo"),
        "no line while the socket is open"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    ws.close(None).await.unwrap();
    while ws.next().await.is_some() {}
    let line = &line_of(&log, "GET /echo").unwrap();
    assert!(line.contains("\"GET /echo HTTP/1.1\" 101 11 "), "{line}");
    assert!(line.ends_with(" in=3 out=3"), "{line}");
    let elapsed: u64 = line
        .trim_end_matches(" in=3 out=3")
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        elapsed >= 100,
        "the socket's duration, not the upgrade's: {line}"
    );
    let json = line_of(&log.with_extension("json"), "/echo").unwrap();
    assert!(json.contains(r#""messagesIn":3,"messagesOut":3"#), "{json}");
    assert_eq!(sample(&service, open).await, 0.0);
    let count = r#"ferrowizard_streams_duration_seconds_count{kind="websocket"}"#;
    assert_eq!(sample(&service, count).await, 1.0);
}

/// At shutdown, a WebSocket whose handler never reads gets a close frame with code 1001,
/// and an event stream ends with its last chunk; both are logged with what they sent, and
/// the service stops well before its grace period of 30 s would cut them.
///
/// Catches: upgraded sockets left to the grace period (the client sees the connection cut,
/// not 1001), an event stream cut instead of ended, their lines lost at shutdown.
#[test]
fn shutdown_closes_websockets_with_1001_and_ends_event_streams() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests.log");
    let service = start(&log);
    let base = service.application_url().to_owned();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut ws = runtime.block_on(connect(&service, "/push"));
    let addr = base.trim_start_matches("http://").trim_end_matches('/');
    let mut sse = TcpStream::connect(addr).unwrap();
    write!(sse, "GET /ticks HTTP/1.1\r\nHost: t\r\n\r\n").unwrap();
    sse.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let (seen, events_seen) = std::sync::mpsc::channel();
    let events = std::thread::spawn(move || event_stream::read(sse, seen));
    // A few messages first: the socket and the stream are running.
    runtime.block_on(async {
        for _ in 0..3 {
            assert!(ws.next().await.unwrap().unwrap().is_text());
        }
    });
    for _ in 0..3 {
        events_seen.recv_timeout(Duration::from_secs(10)).unwrap();
    }
    let started = std::time::Instant::now();
    let stopping = std::thread::spawn(move || drop(service));
    let close = runtime.block_on(async {
        loop {
            match tokio::time::timeout(Duration::from_secs(20), ws.next()).await {
                Ok(Some(Ok(tungstenite::Message::Close(frame)))) => return frame,
                Ok(Some(Ok(_))) => continue,
                other => panic!("no close frame: {other:?}"),
            }
        }
    });
    let frame = close.expect("a close frame with a code");
    assert_eq!(u16::from(frame.code), 1001);
    assert_eq!(frame.reason.as_str(), "server shutting down");
    let stream = events.join().unwrap();
    let (events, clean) = (stream.events, stream.clean);
    assert!(events.len() >= 3, "{events:?}");
    assert!(clean, "the event stream ends with its last chunk");
    stopping.join().unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "stopped within the grace period"
    );
    let push = line_of(&log, "GET /push").unwrap();
    assert!(
        push.contains("\" 101 ") && push.contains(" in=0 out="),
        "{push}"
    );
    let ticks = line_of(&log, "GET /ticks").unwrap();
    let sent = format!(" in=0 out={}", events.len());
    assert!(
        ticks.contains("\" 200 ") && ticks.ends_with(&sent),
        "{ticks}"
    );
}
