//! DropWizard Metrics 4.x's JSON, as its `MetricsModule` writes it with rates per second and
//! durations in milliseconds:
//!
//! ```json
//! {"version":"4.0.0","gauges":{},"counters":{},"histograms":{},"meters":{},"timers":{}}
//! ```
//!
//! Metrics in each section and the fields of each metric are in sorted order. DropWizard's JSON
//! has no labels, so a series is keyed by its name with its label values appended as dotted
//! segments (`ferrowizard.requests.GET./quotes`). A non-finite gauge value is written `null`.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::registry::{FamilyView, Metric};
use crate::snapshot::Snapshot;

/// The DropWizard JSON format version this writes.
pub const VERSION: &str = "4.0.0";

const NANOS_PER_MILLI: f64 = 1_000_000.0;

#[derive(Serialize, Default)]
struct Document {
    version: &'static str,
    gauges: BTreeMap<String, GaugeJson>,
    counters: BTreeMap<String, CounterJson>,
    histograms: BTreeMap<String, HistogramJson>,
    meters: BTreeMap<String, MeterJson>,
    timers: BTreeMap<String, TimerJson>,
}

#[derive(Serialize)]
struct GaugeJson {
    value: f64,
}

#[derive(Serialize)]
struct CounterJson {
    count: Number,
}

/// An integer where DropWizard writes a `long`, a float where it writes a `double`.
#[derive(Serialize)]
#[serde(untagged)]
enum Number {
    Integer(i64),
    Float(f64),
}

// Field order is the sorted order the JSON is written in.
#[derive(Serialize)]
struct HistogramJson {
    count: u64,
    max: Number,
    mean: f64,
    min: Number,
    p50: f64,
    p75: f64,
    p95: f64,
    p98: f64,
    p99: f64,
    p999: f64,
    stddev: f64,
}

#[derive(Serialize)]
struct MeterJson {
    count: u64,
    m15_rate: f64,
    m1_rate: f64,
    m5_rate: f64,
    mean_rate: f64,
    units: &'static str,
}

#[derive(Serialize)]
struct TimerJson {
    count: u64,
    duration_units: &'static str,
    m15_rate: f64,
    m1_rate: f64,
    m5_rate: f64,
    max: f64,
    mean: f64,
    mean_rate: f64,
    min: f64,
    p50: f64,
    p75: f64,
    p95: f64,
    p98: f64,
    p99: f64,
    p999: f64,
    rate_units: &'static str,
    stddev: f64,
}

fn histogram(snapshot: &Snapshot) -> HistogramJson {
    let (min, max) = if snapshot.is_integral() {
        (
            Number::Integer(snapshot.raw_min()),
            Number::Integer(snapshot.raw_max()),
        )
    } else {
        (Number::Float(snapshot.min()), Number::Float(snapshot.max()))
    };
    HistogramJson {
        count: snapshot.count(),
        max,
        mean: snapshot.mean(),
        min,
        p50: snapshot.median(),
        p75: snapshot.p75(),
        p95: snapshot.p95(),
        p98: snapshot.p98(),
        p99: snapshot.p99(),
        p999: snapshot.p999(),
        stddev: snapshot.stddev(),
    }
}

pub(crate) fn render(families: &[FamilyView], pretty: bool) -> String {
    let mut doc = Document {
        version: VERSION,
        ..Document::default()
    };
    for family in families {
        for series in &family.series {
            let key = series.json_key.clone();
            match &series.metric {
                Metric::Gauge(g) => {
                    doc.gauges.insert(key, GaugeJson { value: g.value() });
                }
                Metric::Counter(c) => {
                    let v = c.value();
                    let count = if c.is_integral() || v.fract() == 0.0 {
                        Number::Integer(c.count())
                    } else {
                        Number::Float(v)
                    };
                    doc.counters.insert(key, CounterJson { count });
                }
                Metric::Histogram(h) => {
                    doc.histograms.insert(key, histogram(&h.snapshot()));
                }
                Metric::Meter(m) => {
                    doc.meters.insert(
                        key,
                        MeterJson {
                            count: m.count(),
                            m15_rate: m.fifteen_minute_rate(),
                            m1_rate: m.one_minute_rate(),
                            m5_rate: m.five_minute_rate(),
                            mean_rate: m.mean_rate(),
                            units: "events/second",
                        },
                    );
                }
                Metric::Timer(t) => {
                    let s = t.snapshot();
                    let ms = |nanos: f64| nanos / NANOS_PER_MILLI;
                    doc.timers.insert(
                        key,
                        TimerJson {
                            count: t.count(),
                            duration_units: "milliseconds",
                            m15_rate: t.fifteen_minute_rate(),
                            m1_rate: t.one_minute_rate(),
                            m5_rate: t.five_minute_rate(),
                            max: ms(s.max()),
                            mean: ms(s.mean()),
                            mean_rate: t.mean_rate(),
                            min: ms(s.min()),
                            p50: ms(s.median()),
                            p75: ms(s.p75()),
                            p95: ms(s.p95()),
                            p98: ms(s.p98()),
                            p99: ms(s.p99()),
                            p999: ms(s.p999()),
                            rate_units: "calls/second",
                            stddev: ms(s.stddev()),
                        },
                    );
                }
            }
        }
    }
    let written = if pretty {
        serde_json::to_string_pretty(&doc)
    } else {
        serde_json::to_string(&doc)
    };
    // Plain structs of numbers and strings with string keys cannot fail to serialize; should
    // that ever change, answer with valid JSON that says so rather than panic.
    written.unwrap_or_else(|e| {
        serde_json::json!({ "version": VERSION, "error": e.to_string() }).to_string()
    })
}
