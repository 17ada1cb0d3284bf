//! The handle streams are given to: their metrics, their count, and the server's shutdown.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};
use std::time::Instant;

use ferrowizard_metrics::{Meter, MetricRegistry, RegistryError, Timer};
use tokio::sync::watch;

use super::tally::Tally;

/// The kinds of stream, as the metrics label them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    WebSocket,
    Sse,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::WebSocket => "websocket",
            Kind::Sse => "sse",
        }
    }
}

/// One kind's metrics.
struct KindMetrics {
    open: Arc<AtomicU64>,
    /// A WebSocket's only: an event stream receives nothing.
    messages_in: Option<Meter>,
    messages_out: Meter,
    duration: Timer,
}

impl KindMetrics {
    fn new(registry: &MetricRegistry, kind: Kind) -> Result<KindMetrics, RegistryError> {
        let open = Arc::new(AtomicU64::new(0));
        let gauge = open.clone();
        let label = ("kind", kind.label());
        registry.gauge("ferrowizard.streams.open", &[label], move || {
            gauge.load(Relaxed) as f64
        })?;
        let messages_in = match kind {
            Kind::WebSocket => Some(registry.meter_with(
                "ferrowizard.streams.messages",
                &[label, ("direction", "in")],
            )?),
            Kind::Sse => None,
        };
        Ok(KindMetrics {
            open,
            messages_in,
            messages_out: registry.meter_with(
                "ferrowizard.streams.messages",
                &[label, ("direction", "out")],
            )?,
            duration: registry.timer_with("ferrowizard.streams.duration", &[label])?,
        })
    }
}

struct Shared {
    websocket: KindMetrics,
    sse: KindMetrics,
    /// Set once, when the server begins to shut down.
    closing: watch::Sender<bool>,
    /// Streams running, of both kinds.
    open: AtomicUsize,
}

/// The server's streams: the handle a WebSocket or event-stream handler gives its stream to
/// ([`websocket`](Self::websocket), [`sse`](Self::sse)). Got from
/// [`Environment::streams`](crate::Environment::streams), and cheap to clone into a
/// router's state.
#[derive(Clone)]
pub struct Streams {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Streams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Streams")
            .field("open", &self.open())
            .finish_non_exhaustive()
    }
}

impl Streams {
    /// Streams whose metrics go to `registry`: `ferrowizard.streams.open` (gauges, by
    /// `kind`: `websocket` or `sse`), `ferrowizard.streams.messages` (meters, by `kind` and
    /// `direction`: `in`, a WebSocket's only, or `out`) and `ferrowizard.streams.duration`
    /// (timers, by `kind`).
    pub(crate) fn new(registry: &MetricRegistry) -> Result<Streams, RegistryError> {
        registry.describe(
            "ferrowizard.streams.open",
            "WebSockets and event streams open",
        );
        registry.describe(
            "ferrowizard.streams.messages",
            "WebSocket messages and server-sent events, by direction",
        );
        registry.describe(
            "ferrowizard.streams.duration",
            "How long WebSockets and event streams lasted",
        );
        Ok(Streams {
            shared: Arc::new(Shared {
                websocket: KindMetrics::new(registry, Kind::WebSocket)?,
                sse: KindMetrics::new(registry, Kind::Sse)?,
                closing: watch::channel(false).0,
                open: AtomicUsize::new(0),
            }),
        })
    }

    /// Streams open now, of both kinds.
    ///
    /// ```
    /// let mut environment = ferrowizard::Environment::default();
    /// assert_eq!(environment.streams()?.open(), 0);
    /// # Ok::<(), ferrowizard::metrics::RegistryError>(())
    /// ```
    pub fn open(&self) -> usize {
        self.shared.open.load(Relaxed)
    }

    /// Ends every stream, now and to come: the server is shutting down.
    pub(crate) fn close(&self) {
        self.shared.closing.send_replace(true);
    }

    /// Resolves once the server is shutting down.
    pub(super) fn closing(&self) -> impl Future<Output = ()> + Send + 'static {
        let mut closing = self.shared.closing.subscribe();
        async move {
            let _ = closing.wait_for(|c| *c).await;
        }
    }

    fn metrics(&self, kind: Kind) -> &KindMetrics {
        match kind {
            Kind::WebSocket => &self.shared.websocket,
            Kind::Sse => &self.shared.sse,
        }
    }

    /// Counts a stream of `kind` open until the guard is dropped.
    pub(super) fn opened(&self, kind: Kind, tally: Arc<Tally>) -> OpenGuard {
        self.shared.open.fetch_add(1, Relaxed);
        self.metrics(kind).open.fetch_add(1, Relaxed);
        OpenGuard {
            streams: self.clone(),
            kind,
            started: Instant::now(),
            tally,
        }
    }
}

/// A stream counted open: dropped when it ends, however it ends.
pub(super) struct OpenGuard {
    streams: Streams,
    kind: Kind,
    started: Instant,
    tally: Arc<Tally>,
}

impl OpenGuard {
    pub(super) fn message_in(&self) {
        self.tally.messages_in.fetch_add(1, Relaxed);
        if let Some(meter) = &self.streams.metrics(self.kind).messages_in {
            meter.mark();
        }
    }

    pub(super) fn message_out(&self, bytes: usize) {
        self.tally.messages_out.fetch_add(1, Relaxed);
        self.tally.bytes_out.fetch_add(bytes as u64, Relaxed);
        self.streams.metrics(self.kind).messages_out.mark();
    }
}

impl Drop for OpenGuard {
    fn drop(&mut self) {
        let metrics = self.streams.metrics(self.kind);
        metrics.open.fetch_sub(1, Relaxed);
        metrics.duration.update(self.started.elapsed());
        self.streams.shared.open.fetch_sub(1, Relaxed);
    }
}
