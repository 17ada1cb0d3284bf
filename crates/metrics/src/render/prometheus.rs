//! The Prometheus text exposition format, version 0.0.4.
//!
//! One `# HELP` (when the family was described) and one `# TYPE` per family, followed by every
//! series of that family; families sorted by name, series by label. Names are sanitized (see
//! [`crate::names`]), label values escaped. The DropWizard types map as:
//!
//! | registry  | Prometheus                                                                |
//! |-----------|---------------------------------------------------------------------------|
//! | counter   | `counter` `<name>_total`                                                  |
//! | meter     | `counter` `<name>_total` (Prometheus computes rates itself)               |
//! | gauge     | `gauge` `<name>`                                                          |
//! | histogram | `summary` `<name>`: quantiles 0.5 … 0.999 over the decaying reservoir, `_sum` and `_count` over all time |
//! | timer     | `summary` `<name>_seconds`, the same in seconds                           |

use std::fmt::Write as _;

use crate::kind::MetricKind;
use crate::names;
use crate::registry::{FamilyView, Metric};
use crate::snapshot::Snapshot;

/// The quantiles a summary reports, as DropWizard's JSON does (p50 … p999).
const QUANTILES: [(f64, &str); 6] = [
    (0.5, "0.5"),
    (0.75, "0.75"),
    (0.95, "0.95"),
    (0.98, "0.98"),
    (0.99, "0.99"),
    (0.999, "0.999"),
];

const NANOS_PER_SECOND: f64 = 1_000_000_000.0;

/// A sample value as the text format spells it (`NaN`, `+Inf`, `-Inf`, else the shortest
/// decimal that reads back as the same `f64`).
///
/// ```
/// use ferrowizard_metrics::render::prometheus::number;
/// assert_eq!((number(0.25), number(f64::INFINITY)), ("0.25".to_owned(), "+Inf".to_owned()));
/// ```
pub fn number(value: f64) -> String {
    if value.is_nan() {
        "NaN".to_owned()
    } else if value == f64::INFINITY {
        "+Inf".to_owned()
    } else if value == f64::NEG_INFINITY {
        "-Inf".to_owned()
    } else {
        value.to_string()
    }
}

/// `{name="value",...}` with the series' labels (names sanitized, values escaped) and, for a
/// summary's quantile lines, `quantile` last; empty when there is no label at all.
fn label_set(labels: &[(String, String)], quantile: Option<&str>) -> String {
    if labels.is_empty() && quantile.is_none() {
        return String::new();
    }
    let mut out = String::from("{");
    let extra = quantile.map(|q| ("quantile".to_owned(), q.to_owned()));
    for (i, (name, value)) in labels.iter().chain(extra.iter()).enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&names::prometheus_label_name(name));
        out.push_str("=\"");
        out.push_str(&names::escape_label_value(value));
        out.push('"');
    }
    out.push('}');
    out
}

fn type_name(kind: MetricKind) -> &'static str {
    match kind {
        MetricKind::Counter | MetricKind::Meter => "counter",
        MetricKind::Gauge => "gauge",
        MetricKind::Histogram | MetricKind::Timer => "summary",
    }
}

/// A summary's lines for one series: each quantile, then `_sum` and `_count`. `scale` turns
/// the snapshot's units into the family's (nanoseconds into seconds for a timer).
fn summary(
    out: &mut String,
    family: &str,
    labels: &[(String, String)],
    snapshot: &Snapshot,
    sum: f64,
    scale: f64,
) {
    for (q, label) in QUANTILES {
        // Every quantile in QUANTILES is within [0, 1].
        let value = snapshot.value(q).unwrap_or(f64::NAN) / scale;
        let _ = writeln!(
            out,
            "{family}{} {}",
            label_set(labels, Some(label)),
            number(value)
        );
    }
    let plain = label_set(labels, None);
    let _ = writeln!(out, "{family}_sum{plain} {}", number(sum / scale));
    let _ = writeln!(out, "{family}_count{plain} {}", snapshot.count());
}

/// Writes a family's `# HELP` line (its text escaped), when it has one, and its `# TYPE` line
/// (`kind`: `counter`, `gauge`, `summary`...).
///
/// ```
/// use ferrowizard_metrics::render::prometheus::write_family;
/// let mut out = String::new();
/// write_family(&mut out, "jobs_total", "counter", Some("Jobs done\\now"));
/// assert_eq!(out, "# HELP jobs_total Jobs done\\\\now\n# TYPE jobs_total counter\n");
/// ```
pub fn write_family(out: &mut String, name: &str, kind: &str, help: Option<&str>) {
    // `writeln!` into a `String` cannot fail.
    if let Some(help) = help {
        let _ = writeln!(out, "# HELP {name} {}", names::escape_help(help));
    }
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

pub(crate) fn render(families: &[FamilyView]) -> String {
    let mut named: Vec<(String, &FamilyView)> = families
        .iter()
        .map(|f| (names::family_name(&f.name, f.kind), f))
        .collect();
    named.sort_by(|a, b| a.0.cmp(&b.0));

    // `writeln!` into a `String` cannot fail.
    let mut out = String::new();
    for (name, family) in named {
        if family.series.is_empty() {
            continue;
        }
        write_family(
            &mut out,
            &name,
            type_name(family.kind),
            family.help.as_deref(),
        );
        for series in &family.series {
            let labels = &series.labels;
            match &series.metric {
                Metric::Counter(c) => {
                    let _ = writeln!(
                        out,
                        "{name}{} {}",
                        label_set(labels, None),
                        number(c.value())
                    );
                }
                Metric::Meter(m) => {
                    let _ = writeln!(out, "{name}{} {}", label_set(labels, None), m.count());
                }
                Metric::Gauge(g) => {
                    let _ = writeln!(
                        out,
                        "{name}{} {}",
                        label_set(labels, None),
                        number(g.value())
                    );
                }
                Metric::Histogram(h) => {
                    summary(&mut out, &name, labels, &h.snapshot(), h.sum(), 1.0);
                }
                Metric::Timer(t) => {
                    let sum = t.sum().as_nanos() as f64;
                    summary(
                        &mut out,
                        &name,
                        labels,
                        &t.snapshot(),
                        sum,
                        NANOS_PER_SECOND,
                    );
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_spelled_as_the_format_wants() {
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::INFINITY), "+Inf");
        assert_eq!(number(f64::NEG_INFINITY), "-Inf");
        assert_eq!(number(3.0), "3");
        assert_eq!(number(0.25), "0.25");
        assert_eq!(number(-1e-7), "-0.0000001");
    }

    #[test]
    fn label_sets_put_quantile_last() {
        let labels = vec![("method".to_owned(), "GET".to_owned())];
        assert_eq!(
            label_set(&labels, Some("0.5")),
            r#"{method="GET",quantile="0.5"}"#
        );
        assert_eq!(label_set(&[], None), "");
        assert_eq!(label_set(&[], Some("0.99")), r#"{quantile="0.99"}"#);
    }
}
