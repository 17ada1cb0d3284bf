//! Gauges: a value read when the metrics are rendered ([`Gauge`], DropWizard's `Gauge`), or
//! one that is set ([`SettableGauge`], DropWizard's `SettableGauge`, and what the `metrics`
//! facade's `gauge!` sets).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// A value computed on demand, such as a queue's depth or a pool's free connections.
///
/// A cheap handle: clones share one source.
#[derive(Clone)]
pub struct Gauge {
    source: Source,
}

#[derive(Clone)]
enum Source {
    Function(Arc<dyn Fn() -> f64 + Send + Sync>),
    Settable(SettableGauge),
}

impl Gauge {
    /// A gauge whose value is `f()` each time it is read.
    pub fn new(f: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        Self {
            source: Source::Function(Arc::new(f)),
        }
    }

    /// The current value.
    pub fn value(&self) -> f64 {
        match &self.source {
            Source::Function(f) => f(),
            Source::Settable(g) => g.value(),
        }
    }

    /// The settable gauge behind this one, if it is one.
    pub(crate) fn as_settable(&self) -> Option<&SettableGauge> {
        match &self.source {
            Source::Settable(g) => Some(g),
            Source::Function(_) => None,
        }
    }
}

impl From<SettableGauge> for Gauge {
    fn from(gauge: SettableGauge) -> Self {
        Self {
            source: Source::Settable(gauge),
        }
    }
}

impl fmt::Debug for Gauge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.source {
            Source::Function(_) => "function",
            Source::Settable(_) => "settable",
        };
        f.debug_struct("Gauge").field("source", &kind).finish()
    }
}

/// A value that is set rather than computed (starts at 0).
///
/// A cheap handle: clones share one value. `set` is one atomic store.
#[derive(Debug, Clone, Default)]
pub struct SettableGauge {
    /// The `f64`'s bits: there is no atomic float.
    bits: Arc<AtomicU64>,
}

impl SettableGauge {
    /// A gauge at 0.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets the value.
    #[inline]
    pub fn set(&self, value: f64) {
        self.bits.store(value.to_bits(), Ordering::Relaxed);
    }

    /// Adds `delta` (negative to subtract), atomically with respect to other adds and sets.
    pub fn add(&self, delta: f64) {
        // `fetch_update` cannot fail with a closure that always returns `Some`.
        let _ = self
            .bits
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |bits| {
                Some((f64::from_bits(bits) + delta).to_bits())
            });
    }

    /// The current value.
    pub fn value(&self) -> f64 {
        f64::from_bits(self.bits.load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    #[test]
    fn a_function_gauge_is_read_each_time() {
        let calls = Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let g = Gauge::new(move || seen.fetch_add(1, Ordering::Relaxed) as f64);
        assert_eq!(g.value(), 0.0);
        assert_eq!(g.value(), 1.0);
        assert_eq!(calls.load(Ordering::Relaxed), 2);
        assert!(g.as_settable().is_none());
    }

    #[test]
    fn a_settable_gauge_sets_and_adds() {
        let g = SettableGauge::new();
        assert_eq!(g.value(), 0.0);
        g.set(2.5);
        g.add(1.0);
        g.add(-0.25);
        assert_eq!(g.value(), 3.25);
        let view = Gauge::from(g.clone());
        g.set(-1.0);
        assert_eq!(view.value(), -1.0);
        assert!(view.as_settable().is_some());
    }
}
