//! The requests' own spans: decided, kept and queued by ferrowizard, exported in batches by
//! the export runtime.
//!
//! Not the SDK's spans: a span built through the SDK has a builder, runs its sampler again,
//! moves its `SpanData` through a channel, and allocates the attributes' strings on a worker to
//! free them on the export thread. A [`Record`] keeps the request's parts as it has them
//! (numbers, one string for its text), and the export thread turns them into OTLP's
//! attributes ([`super::encode`]). The spans made while the request is handled
//! (`#[instrument]`'s, a client's) still come through the SDK, as children of the request's
//! span through the OpenTelemetry context the request makes current.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, SystemTime};

use opentelemetry::trace::{SpanContext, TraceContextExt, TraceFlags, TraceState};

use super::record::Record;
use super::spans::Spans;
use crate::export::span::{Recording, ServerSpan};
use crate::trace::TraceContext;

/// The most spans one export request carries (the SDK's batch processor's default).
/// Whether an export is installed: the observe stage hands spans to it only then.
pub(super) static INSTALLED: AtomicBool = AtomicBool::new(false);

const BATCH: usize = 512;

/// How long a span waits at most before it is exported (the SDK's default delay).
const DELAY: Duration = Duration::from_secs(5);

/// The installed export's queue, for the requests the export records.
static QUEUE: RwLock<Option<Arc<Queue>>> = RwLock::new(None);

/// The installed export's sampling bound (see [`bound`]).
static BOUND: AtomicU64 = AtomicU64::new(0);

/// The bound under which a trace id's low 63 bits make a new trace recorded at `ratio`: the
/// SDK's `TraceIdRatioBased` rule, which its sampler applies again to the spans made inside
/// the request (they must agree; a test holds them to it).
pub(super) fn bound(ratio: f64) -> u64 {
    if ratio >= 1.0 {
        u64::MAX
    } else {
        (ratio.max(0.0) * (1u64 << 63) as f64) as u64
    }
}

/// Whether a new trace with `trace_id` is recorded under `bound`.
fn recorded(trace_id: [u8; 16], bound: u64) -> bool {
    let mut low = [0; 8];
    low.copy_from_slice(&trace_id[8..]);
    (u64::from_be_bytes(low) >> 1) < bound
}

/// Whether the installed export records a new trace with `trace`'s id (`None`: no export is
/// installed). The observe stage asks when the request arrives, so that the trace context's
/// sampled flag is the export's decision from the start (its log records say so too).
pub(crate) fn decide(trace: &TraceContext) -> Option<bool> {
    if !INSTALLED.load(Ordering::Acquire) {
        return None;
    }
    Some(match trace.parent_span_id() {
        Some(_) => trace.sampled(),
        None => recorded(trace.trace_id().to_bytes(), BOUND.load(Ordering::Acquire)),
    })
}

/// Makes `queue` the one recorded requests go to, with new traces recorded at `ratio`.
pub(super) fn install(queue: Option<Arc<Queue>>, ratio: f64) {
    BOUND.store(bound(ratio), Ordering::Release);
    *QUEUE.write().unwrap_or_else(PoisonError::into_inner) = queue;
}

/// The recorded requests waiting for export: at most `cap`; more are dropped and counted.
#[derive(Debug)]
pub(super) struct Queue {
    records: Mutex<Vec<Record>>,
    cap: usize,
    /// A batch's size: [`BATCH`], or `cap` when smaller (a batch must be able to fill up).
    batch: usize,
    dropped: Arc<AtomicU64>,
    /// Told when a batch is ready before the delay is up.
    full: tokio::sync::Notify,
    /// Held while records taken from the queue are being sent, so that a stop's last export
    /// waits for the one under way instead of finding the queue empty.
    sending: tokio::sync::Mutex<()>,
}

impl Queue {
    pub(super) fn new(cap: usize, dropped: Arc<AtomicU64>) -> Queue {
        let batch = BATCH.min(cap).max(1);
        Queue {
            records: Mutex::new(Vec::with_capacity(batch)),
            cap,
            batch,
            dropped,
            full: tokio::sync::Notify::new(),
            sending: tokio::sync::Mutex::new(()),
        }
    }

    fn push(&self, record: Record) {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        if records.len() >= self.cap {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        records.push(record);
        if records.len() == self.batch {
            self.full.notify_one();
        }
    }

    /// What is queued, leaving room for a batch (the queue does not grow a record at a time).
    fn take(&self) -> Vec<Record> {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        if records.is_empty() {
            return Vec::new();
        }
        std::mem::replace(&mut *records, Vec::with_capacity(self.batch))
    }

    /// Exports what is queued, a batch at a time (a batch the collector refuses is lost, as
    /// the SDK's are).
    pub(super) async fn export(&self, spans: &Spans) {
        let _sending = self.sending.lock().await;
        let records = self.take();
        for batch in records.chunks(self.batch) {
            let _ = spans.export_requests(batch).await;
        }
    }

    /// Exports what is queued when a batch is ready or the delay is up, until dropped.
    pub(super) async fn run(self: Arc<Queue>, spans: Arc<Spans>) {
        loop {
            tokio::select! {
                () = tokio::time::sleep(DELAY) => {}
                () = self.full.notified() => {}
            }
            self.export(&spans).await;
        }
    }
}

/// A recorded request's open span: queued for export when it ends ([`RequestSpan::end`]), or
/// when it is dropped first (a request whose client went away: no status then).
pub(crate) struct RequestSpan {
    record: Option<Box<Record>>,
    queue: Arc<Queue>,
    context: opentelemetry::Context,
}

impl RequestSpan {
    /// Makes the request's OpenTelemetry context current until the guard drops: the
    /// request's span as the parent of the spans made meanwhile, and the ids of its log
    /// records.
    pub(crate) fn enter(&self) -> opentelemetry::ContextGuard {
        self.context.clone().attach()
    }

    /// The route a merged router found after the span started.
    pub(crate) fn routed(&mut self, route: &str) {
        if let Some(record) = &mut self.record {
            record.set_route(route);
        }
    }

    /// Ends the span with its response's status.
    pub(crate) fn end(mut self, status: u16) {
        if let Some(mut record) = self.record.take() {
            record.status = Some(status);
            record.end = SystemTime::now();
            self.queue.push(*record);
        }
    }
}

impl Drop for RequestSpan {
    fn drop(&mut self) {
        if let Some(mut record) = self.record.take() {
            record.end = SystemTime::now();
            self.queue.push(*record);
        }
    }
}

/// Starts the OpenTelemetry side of a request handled with trace context, whose sampled flag
/// is the export's decision ([`decide`]): the export records the request when its caller's
/// sampled flag says so, else by the configured ratio on its trace id (the SDK's rule); the
/// next service is told the decision in `traceparent`.
///
/// A request not recorded costs nothing more: the spans made inside it are dropped by the
/// sampler (`Requests`) and its log records get its ids from its trace context (`Bounded`),
/// both read from the thread's current [`TraceContext`].
pub(crate) fn start<'a>(
    trace: &mut TraceContext,
    span: impl FnOnce() -> ServerSpan<'a>,
) -> Recording<RequestSpan> {
    if !INSTALLED.load(Ordering::Acquire) {
        return Recording::NoExport;
    }
    let trace_id = trace.trace_id().to_bytes();
    let sampled = match trace.parent_span_id() {
        Some(_) => trace.sampled(),
        None => recorded(trace_id, BOUND.load(Ordering::Acquire)),
    };
    trace.set_sampled(sampled);
    let queue = match QUEUE
        .read()
        .unwrap_or_else(PoisonError::into_inner)
        .as_ref()
    {
        Some(queue) if sampled => queue.clone(),
        _ => {
            trace.set_sampled(false);
            return Recording::Dropped;
        }
    };
    let span = span();
    let mut text = String::with_capacity(
        span.path.len()
            + span.query.map_or(0, str::len)
            + span.request_id.map_or(0, str::len)
            + span.route.map_or(0, str::len),
    );
    let mut part = |s: &str| {
        text.push_str(s);
        s.len() as u32
    };
    let path = part(span.path);
    let query = span.query.map(&mut part);
    let request_id = span.request_id.map(&mut part);
    let route = span.route.map(&mut part);
    let span_id = trace.span_id().to_bytes();
    let state = trace.tracestate().cloned();
    let context = opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
        opentelemetry::trace::TraceId::from_bytes(trace_id),
        opentelemetry::trace::SpanId::from_bytes(span_id),
        TraceFlags::SAMPLED,
        false,
        state
            .as_ref()
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<TraceState>().ok())
            .unwrap_or(TraceState::NONE),
    ));
    let record = Record {
        trace_id,
        span_id,
        parent: trace.parent_span_id().map(|p| p.to_bytes()),
        state,
        start: SystemTime::now(),
        end: SystemTime::UNIX_EPOCH,
        method: span.method.clone(),
        version: span.version,
        client: span.client,
        status: None,
        text,
        path,
        query,
        request_id,
        route,
    };
    Recording::Span(RequestSpan {
        record: Some(Box::new(record)),
        queue,
        context,
    })
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanKind, TraceId};
    use opentelemetry_sdk::trace::{Sampler, SamplingDecision, ShouldSample};

    use super::*;
    use http::HeaderValue;
    use http::Method;

    /// Catches: a request's decision that differs from the SDK's ratio sampler (the spans made
    /// inside a recorded request would be dropped, or those of one not recorded kept).
    #[test]
    fn the_ratio_decides_as_the_sdk_does() {
        for ratio in [0.0, 1e-9, 0.1, 0.25, 0.5, 0.999, 1.0, 1.5, -1.0] {
            let b = bound(ratio);
            for _ in 0..20_000 {
                let id = fastrand::u128(1..);
                let sdk = Sampler::TraceIdRatioBased(ratio)
                    .should_sample(None, TraceId::from(id), "", &SpanKind::Server, &[], &[])
                    .decision;
                assert_eq!(
                    recorded(id.to_be_bytes(), b),
                    sdk == SamplingDecision::RecordAndSample,
                    "ratio {ratio}, id {id:032x}"
                );
            }
        }
    }

    /// Catches: an attribute, the name, the kind, the ids, the parent, the trace state, the
    /// flags or the status written wrong for a request's span.
    #[test]
    fn a_record_is_written_as_opentelemetrys_http_server_span() {
        use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
        use opentelemetry_proto::tonic::common::v1::any_value::Value as V;
        use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
        use prost::Message;

        let record = |method: Method, parent, status, route: Option<&str>| {
            let mut text = "/quotes/ACMEsymbol=1req-7".to_owned();
            let route_len = route.map(|r| {
                text.push_str(r);
                r.len() as u32
            });
            Record {
                trace_id: [0x4b; 16],
                span_id: [0x0a; 8],
                parent,
                state: parent.map(|_| HeaderValue::from_static("congo=t61,rojo=00f0")),
                start: SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000),
                end: SystemTime::UNIX_EPOCH + Duration::from_millis(1_700_000_000_250),
                method,
                version: "1.1",
                client: Some("127.0.0.1".parse().unwrap()),
                status,
                text,
                path: 12,
                query: Some(8),
                request_id: Some(5),
                route: route_len,
            }
        };
        let records = [
            record(
                Method::GET,
                Some([7; 8]),
                Some(200),
                Some("/quotes/{symbol}"),
            ),
            record(Method::from_bytes(b"PURGE").unwrap(), None, Some(503), None),
            record(Method::POST, None, None, Some("/events")),
        ];
        let resource = ResourceAttributesWithSchema::from(
            &opentelemetry_sdk::Resource::builder_empty()
                .with_service_name("quotes")
                .build(),
        );
        let bytes =
            super::super::encode::recorded(&resource, "ferrowizard", &records).encode_to_vec();
        let request = ExportTraceServiceRequest::decode(bytes.as_slice()).unwrap();
        let scope = &request.resource_spans[0].scope_spans[0];
        assert_eq!(scope.scope.as_ref().unwrap().name, "ferrowizard");
        let attrs = |i: usize| -> Vec<(String, V)> {
            scope.spans[i]
                .attributes
                .iter()
                .map(|kv| (kv.key.clone(), kv.value.clone().unwrap().value.unwrap()))
                .collect()
        };
        let s = |v: &str| V::StringValue(v.to_owned());

        let get = &scope.spans[0];
        assert_eq!(get.name, "GET /quotes/{symbol}");
        assert_eq!(get.kind, 2, "server");
        assert_eq!(get.trace_id, [0x4b; 16]);
        assert_eq!(get.span_id, [0x0a; 8]);
        assert_eq!(get.parent_span_id, [7; 8]);
        assert_eq!(get.trace_state, "congo=t61,rojo=00f0");
        assert_eq!(get.flags, 0x301, "sampled, its parent remote");
        assert_eq!(get.start_time_unix_nano, 1_700_000_000_000_000_000);
        assert_eq!(get.end_time_unix_nano, 1_700_000_000_250_000_000);
        assert_eq!(get.status.as_ref().unwrap().code, 0);
        assert_eq!(
            attrs(0),
            vec![
                ("http.request.method".to_owned(), s("GET")),
                ("http.route".to_owned(), s("/quotes/{symbol}")),
                ("url.path".to_owned(), s("/quotes/ACME")),
                ("url.query".to_owned(), s("symbol=1")),
                ("network.protocol.version".to_owned(), s("1.1")),
                ("client.address".to_owned(), s("127.0.0.1")),
                ("request.id".to_owned(), s("req-7")),
                ("http.response.status_code".to_owned(), V::IntValue(200)),
            ]
        );

        let purge = &scope.spans[1];
        assert_eq!(purge.name, "PURGE");
        assert_eq!(purge.flags, 0x101, "sampled, no remote parent");
        assert!(purge.parent_span_id.is_empty() && purge.trace_state.is_empty());
        assert_eq!(
            purge.status.as_ref().unwrap().code,
            2,
            "an error from 500 on"
        );
        assert_eq!(attrs(1)[0], ("http.request.method".to_owned(), s("_OTHER")));
        assert_eq!(
            attrs(1)[1],
            ("http.request.method_original".to_owned(), s("PURGE"))
        );

        // Ended before its response: no status code.
        assert!(
            attrs(2)
                .iter()
                .all(|(k, _)| k != "http.response.status_code")
        );
        assert_eq!(scope.spans[2].name, "POST /events");
    }

    /// A GET record of `text` whose first `path` bytes are the path, nothing else set.
    fn plain(text: &str, path: u32) -> Record {
        Record {
            trace_id: [1; 16],
            span_id: [2; 8],
            parent: None,
            state: None,
            start: SystemTime::now(),
            end: SystemTime::now(),
            method: Method::GET,
            version: "1.1",
            client: None,
            status: None,
            text: text.to_owned(),
            path,
            query: None,
            request_id: None,
            route: None,
        }
    }

    /// Catches: a queue smaller than a batch that never tells the flusher it is full (it would
    /// drop what comes between two 5-second ticks), and drops not counted.
    #[test]
    fn a_queue_smaller_than_a_batch_is_sent_when_full_and_counts_what_it_drops() {
        let dropped = Arc::new(AtomicU64::new(0));
        let queue = Queue::new(3, dropped.clone());
        let record = || Record {
            status: Some(200),
            ..plain("/", 1)
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap();
        for _ in 0..2 {
            queue.push(record());
        }
        let told = |queue: &Queue| {
            runtime.block_on(async {
                tokio::time::timeout(Duration::from_millis(50), queue.full.notified())
                    .await
                    .is_ok()
            })
        };
        assert!(!told(&queue), "not full yet");
        queue.push(record());
        assert!(told(&queue), "full at its size, not at 512");
        queue.push(record());
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
        assert_eq!(queue.take().len(), 3);
    }

    #[test]
    fn a_record_keeps_its_parts_and_a_later_route_replaces_the_first() {
        let mut record = Record {
            query: Some(3),
            request_id: Some(2),
            route: Some(5),
            ..plain("/a/bq=1idx/{a}", 4)
        };
        assert_eq!(
            record.parts(),
            (("/a/b"), Some("q=1"), Some("id"), Some("x/{a}"))
        );
        record.set_route("/a/{b}");
        assert_eq!(record.route(), Some("/a/{b}"));
        assert_eq!(record.request_id(), Some("id"));
        record.route = None;
        record.text.truncate(9);
        record.set_route("/r");
        assert_eq!(
            record.parts(),
            ("/a/b", Some("q=1"), Some("id"), Some("/r"))
        );
    }
}
