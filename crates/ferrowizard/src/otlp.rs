//! OpenTelemetry export (the `otlp` feature, `opentelemetry:` in the configuration): the
//! requests' `http.server.request` spans through `tracing-opentelemetry`, and log events
//! through OpenTelemetry's `tracing` bridge, each in batches to an OTLP collector.
//!
//! The exporters run on a runtime of their own (one thread, its telemetry suppressed, so that
//! an export's own events are never exported); the batch processors' queues are bounded, and
//! what does not fit is dropped and counted ([`Export::dropped_spans`]): a collector that is
//! down or slow never makes a request wait.
//!
//! A request's own span is the SDK's, started by the observe stage ([`start`]) with the ids
//! it gave the request (its `traceId`/`spanId` in the logging context, the `traceparent`
//! handlers pass on); the spans made while it is handled come through
//! `tracing-opentelemetry`, as its children. Events logged while a request is handled are
//! exported as log records of its trace and span (`logs`), not as span events.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use opentelemetry::trace::{
    SpanContext, TraceContextExt, TraceFlags, TraceState, TracerProvider as _,
};
use opentelemetry::{KeyValue, trace};
use opentelemetry_otlp::{
    LogExporter, Protocol, SpanExporter, WithExportConfig, WithHttpConfig, WithTonicConfig,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogProcessor, SdkLogRecord, SdkLoggerProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, IdGenerator, RandomIdGenerator, Sampler, SdkTracer,
    SdkTracerProvider, SpanData, SpanProcessor,
};
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use crate::config::opentelemetry::{OpenTelemetryFactory, OtlpProtocol};
use crate::trace::TraceContext;

/// Whether an export is installed: the observe stage hands spans to it only then.
static INSTALLED: AtomicBool = AtomicBool::new(false);

/// The installed export's tracer, for the requests' spans ([`start`]).
static TRACER: RwLock<Option<SdkTracer>> = RwLock::new(None);

/// The share of new traces recorded (`opentelemetry.sampling`, an `f64`'s bits), for
/// [`sampled`]: the installed export's.
static RATIO: AtomicU64 = AtomicU64::new(0);

/// A running export: its runtime, its providers and its drop counters.
/// Its fields drop in order: the providers (which export what is queued) before the runtime
/// their exporters run on.
pub(crate) struct Export {
    tracer: SdkTracerProvider,
    logger: Option<SdkLoggerProvider>,
    dropped_spans: Arc<AtomicU64>,
    dropped_logs: Arc<AtomicU64>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Export {
    fn drop(&mut self) {
        uninstall();
    }
}

/// Stops handing requests to the export.
fn uninstall() {
    INSTALLED.store(false, Ordering::Release);
    *TRACER.write().unwrap_or_else(PoisonError::into_inner) = None;
}

/// Why the export could not start.
#[derive(Debug, thiserror::Error)]
#[error("opentelemetry: {0}")]
pub(crate) struct ExportError(String);

impl Export {
    /// Starts the exporters `factory` describes, for the service `app_name`.
    pub(crate) fn start(
        factory: &OpenTelemetryFactory,
        app_name: &str,
    ) -> Result<Export, ExportError> {
        let error = |what: &str, e: &dyn std::fmt::Display| ExportError(format!("{what}: {e}"));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("otlp-export")
            .enable_all()
            .on_thread_start(|| {
                // Nothing this thread does (a connection's events, an export's) is exported.
                std::mem::forget(opentelemetry::Context::enter_telemetry_suppressed_scope());
            })
            .build()
            .map_err(|e| error("cannot start its runtime", &e))?;
        let resource = Resource::builder_empty()
            .with_service_name(
                factory
                    .service_name
                    .clone()
                    .unwrap_or_else(|| app_name.to_owned()),
            )
            .with_attributes(
                factory
                    .resource_attributes
                    .iter()
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
            )
            .build();
        let timeout = factory.timeout.get();
        let endpoint = factory.endpoint.clone().unwrap_or_else(|| {
            match factory.protocol {
                OtlpProtocol::Grpc => "http://localhost:4317",
                OtlpProtocol::HttpProtobuf => "http://localhost:4318",
            }
            .to_owned()
        });
        let dropped_spans = Arc::new(AtomicU64::new(0));
        let dropped_logs = Arc::new(AtomicU64::new(0));
        let _entered = runtime.enter();
        let exporters = Exporters {
            protocol: factory.protocol,
            endpoint: endpoint.trim_end_matches('/').to_owned(),
            headers: &factory.headers,
            timeout,
            handle: runtime.handle().clone(),
        };
        let spans = exporters
            .spans()
            .map_err(|e| error("cannot export spans", &e))?;
        let queue = factory.queue_size;
        let pending = Arc::new(AtomicUsize::new(0));
        let spans = BatchSpanProcessor::builder(Counted {
            inner: spans,
            pending: pending.clone(),
        })
        .with_batch_config(
            BatchConfigBuilder::default()
                .with_max_queue_size(queue)
                .build(),
        )
        .build();
        let tracer = SdkTracerProvider::builder()
            .with_span_processor(Bounded {
                inner: spans,
                pending,
                cap: queue,
                dropped: dropped_spans.clone(),
            })
            .with_sampler(Sampler::ParentBased(Box::new(Sampler::TraceIdRatioBased(
                factory.sampling,
            ))))
            .with_id_generator(ObservedIds)
            .with_resource(resource.clone())
            .build();
        let logger = if factory.logs {
            let logs = exporters
                .logs()
                .map_err(|e| error("cannot export logs", &e))?;
            let pending = Arc::new(AtomicUsize::new(0));
            let logs = opentelemetry_sdk::logs::BatchLogProcessor::builder(Counted {
                inner: logs,
                pending: pending.clone(),
            })
            .with_batch_config(
                opentelemetry_sdk::logs::BatchConfigBuilder::default()
                    .with_max_queue_size(queue)
                    .build(),
            )
            .build();
            Some(
                SdkLoggerProvider::builder()
                    .with_log_processor(Bounded {
                        inner: logs,
                        pending,
                        cap: queue,
                        dropped: dropped_logs.clone(),
                    })
                    .with_resource(resource)
                    .build(),
            )
        } else {
            None
        };
        drop(_entered);
        RATIO.store(factory.sampling.to_bits(), Ordering::Release);
        *TRACER.write().unwrap_or_else(PoisonError::into_inner) =
            Some(tracer.tracer("ferrowizard"));
        INSTALLED.store(true, Ordering::Release);
        Ok(Export {
            tracer,
            logger,
            dropped_spans,
            dropped_logs,
            runtime: Some(runtime),
        })
    }

    /// The layers that hand spans and log events to the exporters, to compose beside the
    /// logging pipeline's.
    pub(crate) fn layer<S>(&self) -> Box<dyn Layer<S> + Send + Sync>
    where
        S: tracing::Subscriber + for<'a> LookupSpan<'a> + Send + Sync,
    {
        let spans = tracing_opentelemetry::layer()
            .with_tracer(self.tracer.tracer("ferrowizard"))
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_target(false);
        match &self.logger {
            Some(logger) => {
                let logs =
                    opentelemetry_appender_tracing::layer::OpenTelemetryTracingBridge::new(logger)
                        .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                            // The transport's own events are not the application's.
                            let t = meta.target();
                            !["h2", "hyper", "tonic", "tower", "opentelemetry"]
                                .iter()
                                .any(|p| t.starts_with(p))
                        }));
                Box::new(spans.and_then(logs))
            }
            None => Box::new(spans),
        }
    }

    /// Spans dropped because the queue was full.
    pub(crate) fn dropped_spans(&self) -> Arc<AtomicU64> {
        self.dropped_spans.clone()
    }

    /// Log records dropped because the queue was full.
    pub(crate) fn dropped_logs(&self) -> Arc<AtomicU64> {
        self.dropped_logs.clone()
    }

    /// Exports what is queued (waiting at most the exporters' timeouts) and stops. Blocks:
    /// call it outside any runtime's worker.
    pub(crate) fn shutdown(mut self) {
        uninstall();
        let _ = self.tracer.shutdown();
        if let Some(logger) = &self.logger {
            let _ = logger.shutdown();
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_timeout(Duration::from_secs(1));
        }
    }
}

/// An exporter of the signal `$exporter` exports, by `$exporters`' protocol (`$path`: the
/// signal's path under an http/protobuf endpoint): the span and log exporters' builders are
/// different types with the same methods.
macro_rules! exporter {
    ($exporters:expr, $exporter:ident, $path:literal) => {{
        let e = $exporters;
        match e.protocol {
            OtlpProtocol::Grpc => $exporter::builder()
                .with_tonic()
                .with_endpoint(&e.endpoint)
                .with_timeout(e.timeout)
                .with_metadata(e.metadata()?)
                .build(),
            OtlpProtocol::HttpProtobuf => $exporter::builder()
                .with_http()
                .with_protocol(Protocol::HttpBinary)
                .with_endpoint(format!("{}{}", e.endpoint, $path))
                .with_timeout(e.timeout)
                .with_headers(e.headers())
                .with_http_client(e.http())
                .build(),
        }
        .map_err(|error| error.to_string())
    }};
}

/// How the exporters are built.
struct Exporters<'a> {
    protocol: OtlpProtocol,
    endpoint: String,
    headers: &'a std::collections::BTreeMap<String, String>,
    timeout: Duration,
    handle: tokio::runtime::Handle,
}

impl Exporters<'_> {
    fn metadata(&self) -> Result<opentelemetry_otlp::tonic_types::metadata::MetadataMap, String> {
        let mut map = http::HeaderMap::new();
        for (k, v) in self.headers {
            let name = http::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("headers: {k:?} is not a header name"))?;
            let value = http::HeaderValue::from_str(v)
                .map_err(|_| format!("headers: {k:?}'s value is not a header value"))?;
            map.insert(name, value);
        }
        Ok(opentelemetry_otlp::tonic_types::metadata::MetadataMap::from_headers(map))
    }

    fn http(&self) -> HttpClient {
        HttpClient {
            handle: self.handle.clone(),
            client: hyper_util::client::legacy::Client::builder(
                hyper_util::rt::TokioExecutor::new(),
            )
            .build_http(),
            timeout: self.timeout,
        }
    }

    fn headers(&self) -> HashMap<String, String> {
        self.headers
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    fn spans(&self) -> Result<SpanExporter, String> {
        exporter!(self, SpanExporter, "/v1/traces")
    }

    fn logs(&self) -> Result<LogExporter, String> {
        exporter!(self, LogExporter, "/v1/logs")
    }
}

/// OTLP/HTTP's client: hyper's, on the export runtime (the batch processors' threads only
/// wait for its answer), so that no second HTTP stack is needed.
#[derive(Clone, Debug)]
struct HttpClient {
    handle: tokio::runtime::Handle,
    client: hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        Full<Bytes>,
    >,
    timeout: Duration,
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for HttpClient {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, opentelemetry_http::HttpError> {
        let (client, timeout) = (self.client.clone(), self.timeout);
        self.handle
            .spawn(async move {
                let answer = async move {
                    let response = client.request(request.map(Full::new)).await?;
                    let (parts, body) = response.into_parts();
                    let body = body.collect().await?.to_bytes();
                    Ok::<_, opentelemetry_http::HttpError>(http::Response::from_parts(parts, body))
                };
                match tokio::time::timeout(timeout, answer).await {
                    Ok(answer) => answer,
                    Err(_) => Err("the collector did not answer in time".into()),
                }
            })
            .await
            .map_err(|e| -> opentelemetry_http::HttpError { Box::new(e) })?
    }
}

/// An exporter that counts what leaves the queue (see [`Bounded`]).
#[derive(Debug)]
struct Counted<E> {
    inner: E,
    pending: Arc<AtomicUsize>,
}

impl<E: opentelemetry_sdk::trace::SpanExporter> opentelemetry_sdk::trace::SpanExporter
    for Counted<E>
{
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        self.pending.fetch_sub(batch.len(), Ordering::AcqRel);
        self.inner.export(batch).await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E: opentelemetry_sdk::logs::LogExporter> opentelemetry_sdk::logs::LogExporter for Counted<E> {
    async fn export(&self, batch: LogBatch<'_>) -> OTelSdkResult {
        self.pending
            .fetch_sub(batch.iter().count(), Ordering::AcqRel);
        self.inner.export(batch).await
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// A batch processor that admits at most `cap` items not yet handed to the exporter and
/// counts the rest in `dropped`: with `cap` no more than the processor's queue, its queue
/// is never full, so every drop is counted here (the SDK keeps its own count private).
#[derive(Debug)]
struct Bounded<P> {
    inner: P,
    pending: Arc<AtomicUsize>,
    cap: usize,
    dropped: Arc<AtomicU64>,
}

impl<P> Bounded<P> {
    /// Whether one more item fits.
    fn admit(&self) -> bool {
        if self.pending.fetch_add(1, Ordering::AcqRel) >= self.cap {
            self.pending.fetch_sub(1, Ordering::AcqRel);
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        true
    }
}

impl<P: SpanProcessor> SpanProcessor for Bounded<P> {
    fn on_start(&self, span: &mut opentelemetry_sdk::trace::Span, cx: &opentelemetry::Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.admit() {
            self.inner.on_end(span);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<P: LogProcessor> LogProcessor for Bounded<P> {
    fn emit(&self, record: &mut SdkLogRecord, scope: &opentelemetry::InstrumentationScope) {
        if self.admit() {
            self.inner.emit(record, scope);
        }
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

thread_local! {
    /// The ids [`start`] hands to the span it starts.
    static NEXT: Cell<Option<(u128, u64)>> = const { Cell::new(None) };
}

/// The SDK's ids for a span [`start`] starts: the observe stage's; random ones otherwise.
#[derive(Debug)]
struct ObservedIds;

impl IdGenerator for ObservedIds {
    fn new_trace_id(&self) -> trace::TraceId {
        match NEXT.get() {
            Some((id, _)) => trace::TraceId::from_bytes(id.to_be_bytes()),
            None => RandomIdGenerator::default().new_trace_id(),
        }
    }

    fn new_span_id(&self) -> trace::SpanId {
        match NEXT.get() {
            Some((_, id)) => trace::SpanId::from_bytes(id.to_be_bytes()),
            None => RandomIdGenerator::default().new_span_id(),
        }
    }
}

/// What a request's span says of it, by OpenTelemetry's HTTP server semantic conventions,
/// as the observe stage found it.
pub(crate) struct ServerSpan<'a> {
    /// The method and, when known, the route (`GET /quotes/{id}`).
    pub(crate) name: String,
    pub(crate) method: &'a http::Method,
    pub(crate) route: Option<&'a str>,
    pub(crate) path: &'a str,
    pub(crate) query: Option<&'a str>,
    /// `network.protocol.version`.
    pub(crate) version: &'static str,
    pub(crate) client: Option<std::net::IpAddr>,
    pub(crate) request_id: Option<&'a str>,
}

/// `http.request.method`: the method's name when the conventions know it (without an
/// allocation), else `_OTHER` and the name as `http.request.method_original`.
fn method(method: &http::Method, attributes: &mut Vec<KeyValue>) {
    use http::Method;
    let known = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::DELETE,
        Method::HEAD,
        Method::OPTIONS,
        Method::PATCH,
        Method::CONNECT,
        Method::TRACE,
    ];
    const NAMES: [&str; 9] = [
        "GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH", "CONNECT", "TRACE",
    ];
    match known.iter().position(|m| m == method) {
        Some(i) => attributes.push(KeyValue::new("http.request.method", NAMES[i])),
        None => {
            attributes.push(KeyValue::new("http.request.method", "_OTHER"));
            attributes.push(KeyValue::new(
                "http.request.method_original",
                method.as_str().to_owned(),
            ));
        }
    }
}

/// Starts the OpenTelemetry side of a request handled with trace context: `None` when no
/// export is installed; else the OpenTelemetry context to make current while the request is
/// handled. The export records the request when its caller's sampled flag says so, else by
/// the SDK's ratio sampler on its trace id (the decision the tracer makes again, and agrees
/// with); the decision becomes the trace context's sampled flag.
///
/// A recorded request gets its span from the SDK directly (no `tracing` span: the span is for
/// the exporter, and a `tracing` span, its layers and their visitors would cost the request
/// several times as much), with the request's own ids and `span`'s attributes, built only
/// then. The spans made inside the request (a client's, `#[instrument]`'s) are its children
/// through the current context, and its log records carry its ids. A request not recorded
/// gets its trace and span as a remote, unsampled parent, so that the spans made inside it
/// are children the sampler drops, not roots of traces of their own, and its log records
/// keep its ids.
pub(crate) fn start<'a>(
    trace: &mut TraceContext,
    span: impl FnOnce() -> ServerSpan<'a>,
) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::Tracer as _;
    use opentelemetry_sdk::trace::{SamplingDecision, ShouldSample};
    if !INSTALLED.load(Ordering::Acquire) {
        return None;
    }
    let trace_id = trace::TraceId::from_bytes(trace.trace_id().to_bytes());
    let sampled = match trace.parent_span_id() {
        Some(_) => trace.sampled(),
        None => {
            let ratio = f64::from_bits(RATIO.load(Ordering::Acquire));
            Sampler::TraceIdRatioBased(ratio)
                .should_sample(
                    None,
                    trace_id,
                    "http.server.request",
                    &trace::SpanKind::Server,
                    &[],
                    &[],
                )
                .decision
                == SamplingDecision::RecordAndSample
        }
    };
    trace.set_sampled(sampled);
    let tracer = TRACER.read().unwrap_or_else(PoisonError::into_inner);
    let Some(tracer) = tracer.as_ref().filter(|_| sampled) else {
        trace.set_sampled(false);
        return Some(unsampled(trace));
    };
    let span = span();
    let parent = match trace.parent_span_id() {
        Some(parent) => {
            let state = trace
                .tracestate()
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.parse::<TraceState>().ok())
                .unwrap_or(TraceState::NONE);
            opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
                trace_id,
                trace::SpanId::from_bytes(parent.to_bytes()),
                TraceFlags::SAMPLED,
                true,
                state,
            ))
        }
        None => opentelemetry::Context::new(),
    };
    let mut attributes = Vec::with_capacity(9);
    method(span.method, &mut attributes);
    if let Some(route) = span.route {
        attributes.push(KeyValue::new("http.route", route.to_owned()));
    }
    attributes.push(KeyValue::new("url.path", span.path.to_owned()));
    if let Some(query) = span.query {
        attributes.push(KeyValue::new("url.query", query.to_owned()));
    }
    attributes.push(KeyValue::new("network.protocol.version", span.version));
    if let Some(client) = span.client {
        attributes.push(KeyValue::new("client.address", client.to_string()));
    }
    if let Some(id) = span.request_id {
        attributes.push(KeyValue::new("request.id", id.to_owned()));
    }
    NEXT.set(Some((
        u128::from_be_bytes(trace.trace_id().to_bytes()),
        u64::from_be_bytes(trace.span_id().to_bytes()),
    )));
    let started = tracer
        .span_builder(span.name)
        .with_kind(trace::SpanKind::Server)
        .with_attributes(attributes)
        .start_with_context(tracer, &parent);
    NEXT.set(None);
    let context = opentelemetry::trace::Span::span_context(&started);
    if context.is_valid() {
        trace.set_sampled(context.is_sampled());
    }
    Some(parent.with_span(started))
}

/// The context of a request the export does not record (see [`start`]).
fn unsampled(trace: &TraceContext) -> opentelemetry::Context {
    opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
        trace::TraceId::from_bytes(trace.trace_id().to_bytes()),
        trace::SpanId::from_bytes(trace.span_id().to_bytes()),
        TraceFlags::default(),
        true,
        TraceState::NONE,
    ))
}

/// Names a request's span by the route a merged router found after it started.
pub(crate) fn routed(context: &opentelemetry::Context, name: String, route: &str) {
    let span = context.span();
    if span.is_recording() {
        span.update_name(name);
        span.set_attribute(KeyValue::new("http.route", route.to_owned()));
    }
}

/// Ends a request's span with its response's status (an error from 500 on, as the
/// conventions say of a server's span).
pub(crate) fn end(context: &opentelemetry::Context, status: u16) {
    let span = context.span();
    if span.is_recording() {
        span.set_attribute(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
        if status >= 500 {
            span.set_status(trace::Status::error(""));
        }
        span.end();
    }
}
