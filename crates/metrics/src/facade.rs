//! The `metrics` crate's facade, recorded into a [`MetricRegistry`].
//!
//! Libraries instrumented with `metrics::counter!`, `gauge!` and `histogram!` (and services that
//! prefer the macros) land in the same registry as everything else, and so in both renderers:
//!
//! | facade       | registry                                                          |
//! |--------------|-------------------------------------------------------------------|
//! | `counter!`   | [`Counter`] (`absolute` raises it, never lowers it)               |
//! | `gauge!`     | [`SettableGauge`] (`set`, `increment`, `decrement`)               |
//! | `histogram!` | [`Histogram`] in fixed point, see below                            |
//! | `describe_*!`| [`MetricRegistry::describe`] (the Prometheus `# HELP` text)        |
//!
//! # Histograms of `f64`
//!
//! The facade records `f64` (durations arrive as seconds: `histogram!("x").record(elapsed)`),
//! while DropWizard's reservoir, and the crate that implements it, keep `i64`. Truncating would
//! turn every sub-second duration into 0, so a facade histogram stores
//! `round(value * 1_000_000)`, micro-units, and divides it back out wherever it is read
//! ([`Snapshot`](crate::Snapshot), [`Histogram::sum`], both renderers). That keeps microsecond
//! resolution for seconds and a range of ±9.2 × 10¹² for anything else (bytes up to 9 TB);
//! values beyond it saturate, NaN is dropped. A histogram the service registered itself
//! (integers) keeps its integers: the facade then rounds to whole units.
//!
//! # What cannot be registered
//!
//! A facade call the registry refuses (a name already used as another type, other label
//! names than the family's, a name collision) gets a handle that records nothing, and the
//! counter `ferrowizard.metrics.rejected` counts it once per name-and-labels, so the loss shows
//! in `/metrics` instead of passing silently.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use metrics::{Key, KeyName, Metadata, Recorder, SharedString, Unit};
use thiserror::Error;

use crate::counter::Counter;
use crate::gauge::SettableGauge;
use crate::histogram::Histogram;
use crate::registry::MetricRegistry;

/// A facade histogram stores `round(value * FIXED_POINT_DIVISOR)`.
pub const FIXED_POINT_DIVISOR: f64 = 1_000_000.0;

/// The counter of facade registrations the registry refused.
pub const REJECTED: &str = "ferrowizard.metrics.rejected";

/// [`install_recorder`] found a recorder installed already (the facade takes one per process).
#[derive(Debug, Error)]
#[error("a `metrics` recorder is already installed in this process")]
pub struct InstallError;

/// Makes `registry` the process's `metrics` recorder. Once per process; an error after that.
pub fn install_recorder(registry: &MetricRegistry) -> Result<(), InstallError> {
    metrics::set_global_recorder(FacadeRecorder::new(registry)).map_err(|_| InstallError)
}

/// A `metrics::Recorder` writing into a [`MetricRegistry`].
///
/// [`install_recorder`] installs one globally; `metrics::with_local_recorder(&recorder, ..)`
/// uses one for a scope.
#[derive(Debug)]
pub struct FacadeRecorder {
    registry: MetricRegistry,
    // The macros register on every call; these keep that to a hash lookup (a `Key` hashes
    // once and caches it) instead of a registry lookup that allocates.
    counters: Cache<metrics::Counter>,
    gauges: Cache<metrics::Gauge>,
    histograms: Cache<metrics::Histogram>,
}

impl FacadeRecorder {
    /// A recorder writing into `registry`.
    pub fn new(registry: &MetricRegistry) -> Self {
        Self {
            registry: registry.clone(),
            counters: Cache::default(),
            gauges: Cache::default(),
            histograms: Cache::default(),
        }
    }

    fn rejected(&self) {
        // If even this name is taken by another type, there is nowhere left to count.
        if let Ok(c) = self.registry.counter(REJECTED) {
            c.inc();
        }
    }
}

/// The facade's labels as the registry takes them.
fn labels(key: &Key) -> Vec<(&str, &str)> {
    key.labels().map(|l| (l.key(), l.value())).collect()
}

impl Recorder for FacadeRecorder {
    fn describe_counter(&self, key: KeyName, _unit: Option<Unit>, description: SharedString) {
        self.registry.describe(key.as_str(), &description);
    }

    fn describe_gauge(&self, key: KeyName, _unit: Option<Unit>, description: SharedString) {
        self.registry.describe(key.as_str(), &description);
    }

    fn describe_histogram(&self, key: KeyName, _unit: Option<Unit>, description: SharedString) {
        self.registry.describe(key.as_str(), &description);
    }

    fn register_counter(&self, key: &Key, _metadata: &Metadata<'_>) -> metrics::Counter {
        self.counters.get_or_insert(key, || {
            match self.registry.counter_with(key.name(), &labels(key)) {
                Ok(c) => metrics::Counter::from_arc(Arc::new(c)),
                Err(_) => {
                    self.rejected();
                    metrics::Counter::noop()
                }
            }
        })
    }

    fn register_gauge(&self, key: &Key, _metadata: &Metadata<'_>) -> metrics::Gauge {
        self.gauges.get_or_insert(key, || {
            match self.registry.settable_gauge_with(key.name(), &labels(key)) {
                Ok(g) => metrics::Gauge::from_arc(Arc::new(g)),
                Err(_) => {
                    self.rejected();
                    metrics::Gauge::noop()
                }
            }
        })
    }

    fn register_histogram(&self, key: &Key, _metadata: &Metadata<'_>) -> metrics::Histogram {
        self.histograms.get_or_insert(key, || {
            let made =
                self.registry
                    .fixed_point_histogram(key.name(), &labels(key), FIXED_POINT_DIVISOR);
            match made {
                Ok(h) => metrics::Histogram::from_arc(Arc::new(h)),
                Err(_) => {
                    self.rejected();
                    metrics::Histogram::noop()
                }
            }
        })
    }
}

impl metrics::CounterFn for Counter {
    fn increment(&self, value: u64) {
        self.add(value);
    }

    fn absolute(&self, value: u64) {
        self.raise_to(value);
    }
}

impl metrics::GaugeFn for SettableGauge {
    fn increment(&self, value: f64) {
        self.add(value);
    }

    fn decrement(&self, value: f64) {
        self.add(-value);
    }

    fn set(&self, value: f64) {
        SettableGauge::set(self, value);
    }
}

impl metrics::HistogramFn for Histogram {
    fn record(&self, value: f64) {
        self.update_f64(value);
    }
}

/// Facade handles by key.
#[derive(Debug)]
struct Cache<H> {
    handles: RwLock<HashMap<Key, H>>,
}

impl<H> Default for Cache<H> {
    fn default() -> Self {
        Self {
            handles: RwLock::new(HashMap::new()),
        }
    }
}

impl<H: Clone> Cache<H> {
    fn get_or_insert(&self, key: &Key, make: impl FnOnce() -> H) -> H {
        if let Some(h) = self
            .handles
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
        {
            return h.clone();
        }
        // Made outside the write lock (it takes the registry's); two racing callers may both
        // make it, the registry hands both the same metric, and the first one cached wins.
        let made = make();
        self.handles
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(key.clone())
            .or_insert(made)
            .clone()
    }
}
