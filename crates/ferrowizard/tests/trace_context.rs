//! W3C trace context on real sockets: a well-formed `traceparent` makes the request a child
//! of the caller's span, a malformed one starts a new trace and is never an error; the
//! handler's [`TraceContext`] carries the trace on (`traceparent`, `tracestate`); every event
//! logged while the request is handled has `traceId` and `spanId` (pattern and JSON layouts),
//! as has its access-json line; the request's span has OpenTelemetry's HTTP attributes; and
//! `traceContext.enabled` changes what happens.

mod common;

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::routing::get;
use common::header;
use ferrowizard::server::Routes;
use ferrowizard::trace::TraceContext;
use http::StatusCode;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// The fields of every span that closed, by the span's name.
#[derive(Clone, Default)]
struct ClosedSpans(Arc<Mutex<Vec<(String, Fields)>>>);

#[derive(Clone, Debug, Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for ClosedSpans {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        ctx.span(id).unwrap().extensions_mut().insert(fields);
    }
    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let span = ctx.span(id).unwrap();
        let mut ext = span.extensions_mut();
        values.record(ext.get_mut::<Fields>().unwrap());
    }
    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let span = ctx.span(&id).unwrap();
        let fields = span.extensions().get::<Fields>().cloned().unwrap();
        self.0
            .lock()
            .unwrap()
            .push((span.name().to_owned(), fields));
    }
}

fn routes() -> Routes {
    Routes::new()
        .route(
            "/quotes/{id}",
            get(|trace: TraceContext| async move {
                tracing::info!(target: "app", "quoted");
                let state = trace
                    .tracestate()
                    .map(|v| v.to_str().unwrap().to_owned())
                    .unwrap_or_default();
                format!("{} {}", trace.traceparent().to_str().unwrap(), state)
            }),
        )
        .route("/fail", get(|| async { StatusCode::SERVICE_UNAVAILABLE }))
        .merge(Router::new().route(
            "/merged/{x}",
            get(|| async {
                tracing::info!(target: "app", "merged");
            }),
        ))
}

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Catches: the caller's trace not followed (a new trace id, the caller's span not the
/// parent, the sampled flag lost), a malformed header answered with an error or followed,
/// `tracestate` dropped or mangled, the handler's events without `traceId`/`spanId` or with
/// another request's, a span id that is not the one handlers pass on, the span's attributes
/// missing or wrong (route, status, error status on a 5xx), access-json's fields missing, and
/// `traceContext.enabled` ignored either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_follow_the_callers_trace_or_start_one() {
    let dir = tempfile::tempdir().unwrap();
    let text = dir.path().join("app.log");
    let json = dir.path().join("app.json");
    let logging: ferrowizard_logging::LoggingFactory = ferrowizard_config::Loader::new()
        .load_str(
            "logging.yaml",
            &format!(
                "level: INFO\nappenders:\n  - {{type: file, currentLogFilename: {}, archive: false, \
                 logFormat: '%X{{traceId}} %X{{spanId}} %m%n'}}\n  - {{type: file, \
                 currentLogFilename: {}, archive: false, layout: {{type: json}}}}\n",
                text.display(),
                json.display()
            ),
        )
        .unwrap();
    let (logging, layer) = logging.build_layer("trace-test").unwrap();
    let spans = ClosedSpans::default();
    let subscriber = tracing_subscriber::registry()
        .with(layer)
        .with(spans.clone());
    tracing::subscriber::set_global_default(subscriber).unwrap();

    let access = dir.path().join("access.json");
    let (server, addr) = common::start(
        &format!(
            "traceContext: {{enabled: true}}\nrequestLog: {{appenders: [{{type: file, \
             currentLogFilename: {}, archive: false, layout: {{type: access-json, \
             includes: [requestUri, traceId, spanId]}}}}]}}",
            access.display()
        ),
        routes(),
    )
    .await;

    // A child of the caller's span, its tracestate passed on as one list.
    let (_, body) = common::get(
        addr,
        "/quotes/7?full=1",
        &format!("traceparent: {PARENT}\r\ntracestate: congo=t61rcWkgMzE\r\ntracestate: rojo=00f067aa0ba902b7\r\n"),
    )
    .await;
    let (traceparent, state) = body.split_once(' ').unwrap();
    let parts: Vec<&str> = traceparent.split('-').collect();
    assert_eq!(parts[0], "00");
    assert_eq!(parts[1], "4bf92f3577b34da6a3ce929d0e0e4736", "{body}");
    assert!(
        hex(parts[2], 16) && parts[2] != "00f067aa0ba902b7",
        "{body}"
    );
    assert_eq!(parts[3], "01", "the caller's sampled flag");
    assert_eq!(state, "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7");
    let child_span = parts[2].to_owned();

    // Malformed or missing: a new trace, answered as usual.
    let mut roots = Vec::new();
    for headers in [
        "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7\r\ntracestate: congo=x\r\n",
        "traceparent: 00-00000000000000000000000000000000-00f067aa0ba902b7-01\r\n",
        "",
    ] {
        let (_, body) = common::get(addr, "/quotes/8", headers).await;
        let (traceparent, state) = body.split_once(' ').unwrap();
        let parts: Vec<&str> = traceparent.split('-').collect();
        assert!(
            hex(parts[1], 32) && parts[1] != "4bf92f3577b34da6a3ce929d0e0e4736",
            "{body}"
        );
        assert_eq!(parts[3], "00", "nothing here records a trace it starts");
        assert_eq!(state, "", "no tracestate without its traceparent");
        roots.push((parts[1].to_owned(), parts[2].to_owned()));
    }
    assert_ne!(roots[0].0, roots[1].0);

    let (headers, _) = common::get(addr, "/fail", &format!("traceparent: {PARENT}\r\n")).await;
    assert!(header(&headers, "traceparent").is_none());
    common::get(addr, "/merged/1", "").await;

    // Off: no trace, and a handler asking for one is told why.
    let (_off, off_addr) = common::start("", routes()).await;
    let (_, body) = common::get(off_addr, "/quotes/9", &format!("traceparent: {PARENT}\r\n")).await;
    assert!(
        body.starts_with("no trace context: server.traceContext.enabled is false"),
        "{body}"
    );
    common::get(off_addr, "/merged/2", &format!("traceparent: {PARENT}\r\n")).await;

    // The request log: each line with its request's ids.
    let lines = common::json_lines(&access, 6).await;
    drop(server);
    assert_eq!(lines[0]["uri"], "/quotes/7");
    assert_eq!(lines[0]["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736");
    assert_eq!(lines[0]["spanId"], child_span.as_str());
    for (line, (trace, span)) in lines[1..4].iter().zip(&roots) {
        assert_eq!(line["traceId"], trace.as_str(), "{lines:?}");
        assert_eq!(line["spanId"], span.as_str(), "{lines:?}");
    }

    // The spans, as a tracing layer sees them close (before each response is sent).
    let closed = spans.0.lock().unwrap().clone();
    let requests: Vec<&Fields> = closed
        .iter()
        .filter(|(name, _)| name == "http.server.request")
        .map(|(_, f)| f)
        .collect();
    assert_eq!(requests.len(), 6, "{closed:?}");
    let quote = &requests[0].0;
    assert_eq!(quote["otel.name"], "GET /quotes/{id}");
    assert_eq!(quote["otel.kind"], "server");
    assert_eq!(quote["http.request.method"], "GET");
    assert_eq!(quote["http.route"], "/quotes/{id}");
    assert_eq!(quote["url.path"], "/quotes/7");
    assert_eq!(quote["url.query"], "full=1");
    assert_eq!(quote["http.response.status_code"], "200");
    assert_eq!(quote["client.address"], "127.0.0.1");
    assert_eq!(quote["network.protocol.version"], "1.1");
    assert!(!quote.contains_key("otel.status_code"), "{quote:?}");
    let fail = &requests[4].0;
    assert_eq!(fail["http.response.status_code"], "503");
    assert_eq!(fail["otel.status_code"], "error");
    let merged = &requests[5].0;
    assert_eq!(
        merged["http.route"], "/merged/{x}",
        "a merged router's route"
    );
    assert!(merged["otel.name"].starts_with("GET"), "{merged:?}");

    // The handler's events: the pattern layout's %X{traceId} %X{spanId}, the JSON layout's mdc.
    logging.shutdown(Duration::from_secs(5));
    let text = std::fs::read_to_string(&text).unwrap();
    let quoted: Vec<&str> = text.lines().filter(|l| l.ends_with(" quoted")).collect();
    assert_eq!(quoted.len(), 4, "{text}");
    assert_eq!(
        quoted[0],
        format!("4bf92f3577b34da6a3ce929d0e0e4736 {child_span} quoted"),
        "{text}"
    );
    for (line, (trace, span)) in quoted[1..].iter().zip(&roots) {
        assert_eq!(*line, format!("{trace} {span} quoted"));
    }
    assert!(text.lines().any(|l| l == "  merged"), "off: no ids: {text}");
    let events: Vec<serde_json::Value> = std::fs::read_to_string(&json)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|e: &serde_json::Value| e["message"] == "quoted")
        .collect();
    let mdc = &events[0]["mdc"];
    assert_eq!(mdc["traceId"], "4bf92f3577b34da6a3ce929d0e0e4736", "{mdc}");
    assert_eq!(mdc["spanId"], child_span.as_str());
    assert_eq!(
        mdc["http.route"], "/quotes/{id}",
        "the span's fields: {mdc}"
    );
}
