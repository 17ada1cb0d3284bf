//! The types of metric a registry holds.

use std::fmt;

/// The type of a metric family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MetricKind {
    /// A [`Gauge`](crate::Gauge) or [`SettableGauge`](crate::SettableGauge).
    Gauge,
    /// A [`Counter`](crate::Counter).
    Counter,
    /// A [`Histogram`](crate::Histogram).
    Histogram,
    /// A [`Meter`](crate::Meter).
    Meter,
    /// A [`Timer`](crate::Timer).
    Timer,
}

impl fmt::Display for MetricKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MetricKind::Gauge => "gauge",
            MetricKind::Counter => "counter",
            MetricKind::Histogram => "histogram",
            MetricKind::Meter => "meter",
            MetricKind::Timer => "timer",
        })
    }
}
