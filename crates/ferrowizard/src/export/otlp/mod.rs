//! OpenTelemetry export (the `otlp` feature, `opentelemetry:` in the configuration): the
//! requests' spans ([`request`]: kept by the observe stage with the ids it gave the request,
//! the ones its log lines and `traceparent` carry), the spans made while they are handled
//! (through `tracing-opentelemetry`, as their children), and log events (through
//! OpenTelemetry's `tracing` bridge, as log records of their request's trace and span, not
//! span events), each in batches to an OTLP collector ([`spans`] sends the span batches).
//!
//! The exporters run on a runtime of their own (one thread, its telemetry suppressed, so that
//! an export's own events are never exported); the queues are bounded, and what does not fit
//! is dropped and counted ([`Export::dropped_spans`]): a collector that is down or slow never
//! makes a request wait.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::trace::{TraceContextExt, TraceFlags, TraceState, TracerProvider as _};
use opentelemetry::{KeyValue, trace};
use opentelemetry_otlp::{
    LogExporter, Protocol, WithExportConfig, WithHttpConfig, WithTonicConfig,
};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::logs::{LogBatch, LogProcessor, SdkLogRecord, SdkLoggerProvider};
use opentelemetry_sdk::trace::{
    BatchConfigBuilder, BatchSpanProcessor, Sampler, SdkTracerProvider, SpanData, SpanProcessor,
};
use tracing_subscriber::Layer;
use tracing_subscriber::registry::LookupSpan;

use crate::config::opentelemetry::{OpenTelemetryFactory, OtlpProtocol};

mod encode;
mod http_client;
mod record;
mod request;
mod spans;

use crate::export::error::ExportError;
use crate::trace::TraceContext;
use http_client::HttpClient;
pub(crate) use request::{RequestSpan, decide, start};

/// A running export: its runtime, its providers, the requests' queue and its drop counters.
/// [`Export::shutdown`] exports what is queued; dropped without it, the export stops handing
/// on new spans and what is queued is lost. Its fields drop in order: the providers before the
/// runtime their exporters run on.
pub(crate) struct Export {
    tracer: SdkTracerProvider,
    logger: Option<SdkLoggerProvider>,
    /// The recorded requests' spans, and their exporter.
    requests: Arc<request::Queue>,
    request_spans: Arc<spans::Spans>,
    /// `opentelemetry.timeout`: how long a stop waits for each signal's last export.
    timeout: Duration,
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
    request::INSTALLED.store(false, Ordering::Release);
    request::install(None, 0.0);
}

impl Export {
    /// Starts the exporters `factory` describes, for the service `app_name`.
    pub(crate) fn start(
        factory: &OpenTelemetryFactory,
        app_name: &str,
    ) -> Result<Export, ExportError> {
        let error =
            |what: &str, e: &dyn std::fmt::Display| ExportError::Failed(format!("{what}: {e}"));
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
        let mut request_spans = exporters
            .spans()
            .map_err(|e| error("cannot export spans", &e))?;
        opentelemetry_sdk::trace::SpanExporter::set_resource(&mut request_spans, &resource);
        let request_spans = Arc::new(request_spans);
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
            .with_sampler(Requests(Sampler::ParentBased(Box::new(
                Sampler::TraceIdRatioBased(factory.sampling),
            ))))
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
        let requests = Arc::new(request::Queue::new(queue, dropped_spans.clone()));
        runtime.spawn(requests.clone().run(request_spans.clone()));
        request::install(Some(requests.clone()), factory.sampling);
        request::INSTALLED.store(true, Ordering::Release);
        Ok(Export {
            tracer,
            logger,
            requests,
            request_spans,
            timeout,
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

    /// Exports what is queued (waiting at most `timeout` for each signal) and stops. Blocks:
    /// call it outside any runtime's worker.
    pub(crate) fn shutdown(mut self) {
        uninstall();
        if let Some(runtime) = &self.runtime {
            // One deadline for all the requests' batches (after the one under way, if any):
            // a collector that does not answer delays a stop by `timeout`, not by a timeout a
            // batch.
            let last = self.requests.export(&self.request_spans);
            let _ = runtime.block_on(async { tokio::time::timeout(self.timeout, last).await });
        }
        let _ = self.tracer.shutdown_with_timeout(self.timeout);
        if let Some(logger) = &self.logger {
            let _ = logger.shutdown_with_timeout(self.timeout);
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
    /// The configured headers, checked.
    fn header_map(&self) -> Result<http::HeaderMap, String> {
        let mut map = http::HeaderMap::new();
        for (k, v) in self.headers {
            let name = http::HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("headers: {k:?} is not a header name"))?;
            let value = http::HeaderValue::from_str(v)
                .map_err(|_| format!("headers: {k:?}'s value is not a header value"))?;
            map.insert(name, value);
        }
        Ok(map)
    }

    fn metadata(&self) -> Result<tonic::metadata::MetadataMap, String> {
        Ok(tonic::metadata::MetadataMap::from_headers(
            self.header_map()?,
        ))
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

    /// The span exporter: ferrowizard's, which also sends the requests' own spans.
    fn spans(&self) -> Result<spans::Spans, String> {
        match self.protocol {
            OtlpProtocol::Grpc => spans::Spans::grpc(
                &self.endpoint,
                self.metadata()?,
                self.timeout,
                self.handle.clone(),
            ),
            OtlpProtocol::HttpProtobuf => spans::Spans::http(
                &format!("{}/v1/traces", self.endpoint),
                self.header_map()?,
                self.http(),
                self.timeout,
                self.handle.clone(),
            ),
        }
    }

    fn logs(&self) -> Result<LogExporter, String> {
        exporter!(self, LogExporter, "/v1/logs")
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
        use opentelemetry::logs::LogRecord as _;
        // A recorded request's events carry what the logger took from the current context (the
        // request's span, or a span made inside it). Any other event of a traced request gets
        // the request's ids from its trace context: one before its span started, or one the
        // export does not record (which has no context of its own, and whose spans, dropped by
        // the sampler, have ids of no trace).
        TraceContext::with_current(|trace| {
            if record.trace_context().is_none() || !trace.sampled() {
                record.set_trace_context(
                    trace::TraceId::from_bytes(trace.trace_id().to_bytes()),
                    trace::SpanId::from_bytes(trace.span_id().to_bytes()),
                    Some(if trace.sampled() {
                        TraceFlags::SAMPLED
                    } else {
                        TraceFlags::default()
                    }),
                );
            }
        });
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

/// The export's sampler: `inner` (the configured ratio, a parent's decision first), except that
/// a span with no parent made while a request the export does not record is handled is dropped
/// (a child of that request, not the root of a trace of its own).
#[derive(Clone, Debug)]
struct Requests(Sampler);

impl opentelemetry_sdk::trace::ShouldSample for Requests {
    fn should_sample(
        &self,
        parent: Option<&opentelemetry::Context>,
        trace_id: trace::TraceId,
        name: &str,
        kind: &trace::SpanKind,
        attributes: &[KeyValue],
        links: &[trace::Link],
    ) -> opentelemetry_sdk::trace::SamplingResult {
        let orphan = parent.is_none_or(|cx| !cx.has_active_span());
        if orphan && TraceContext::with_current(TraceContext::sampled) == Some(false) {
            return opentelemetry_sdk::trace::SamplingResult {
                decision: opentelemetry_sdk::trace::SamplingDecision::Drop,
                attributes: Vec::new(),
                trace_state: TraceState::NONE,
            };
        }
        self.0
            .should_sample(parent, trace_id, name, kind, attributes, links)
    }
}

#[cfg(test)]
mod tests {
    use opentelemetry::trace::{SpanKind, TraceId};
    use opentelemetry_sdk::trace::{Sampler, SamplingDecision, ShouldSample};

    use super::Requests;

    /// A span with no parent made outside any request is sampled at the configured ratio,
    /// as a trace of its own (only one made while an unrecorded request is handled is
    /// dropped).
    ///
    /// Catches: every span without a parent dropped, whatever request it was made in.
    #[test]
    fn a_span_outside_any_request_is_sampled_at_the_ratio() {
        let decide = |sampler: Sampler| {
            Requests(sampler)
                .should_sample(
                    None,
                    TraceId::from_bytes([7; 16]),
                    "startup",
                    &SpanKind::Internal,
                    &[],
                    &[],
                )
                .decision
        };
        assert_eq!(decide(Sampler::AlwaysOn), SamplingDecision::RecordAndSample);
        assert_eq!(decide(Sampler::AlwaysOff), SamplingDecision::Drop);
    }
}
