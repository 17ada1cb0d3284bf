//! The registry as DropWizard Metrics' scheduled reporters write it: `Slf4jReporter`'s log
//! lines and `CsvReporter`'s rows, with rates per second and durations in milliseconds (their
//! defaults).
//!
//! A log line per series, gauges first, then counters, histograms, meters and timers, each
//! kind sorted by name:
//!
//! ```text
//! type=COUNTER, name=jobs, count=3
//! type=TIMER, name=ferrowizard.requests, count=2, min=1.5, max=2.0, mean=1.75, stddev=0.25, p50=1.5, p75=2.0, p95=2.0, p98=2.0, p99=2.0, p999=2.0, m1_rate=0.0, m5_rate=0.0, m15_rate=0.0, mean_rate=0.4, rate_unit=events/second, duration_unit=milliseconds
//! ```
//!
//! A CSV row per series, for the file `<name>.csv` whose first line is its header
//! (`t,count,max,mean,...`; `t` is the time of the report in seconds since the epoch).
//! Series names are DropWizard JSON keys (labels appended as dotted segments).

use crate::kind::MetricKind;
use crate::registry::{FamilyView, Metric};
use crate::snapshot::Snapshot;

const NANOS_PER_MILLI: f64 = 1_000_000.0;

/// One series' row for `CsvReporter`'s file of it.
#[derive(Clone, Debug, PartialEq)]
pub struct CsvRow {
    /// The series' name; its file is this with `/` written `-`, and `.csv`.
    pub name: String,
    /// The file's first line, `t` first.
    pub header: &'static str,
    /// The values after `t`, comma-separated.
    pub values: String,
}

impl CsvRow {
    /// The file name: the series name with each `/` written `-` (a route template's slashes
    /// would otherwise make directories), then `.csv`.
    pub fn file_name(&self) -> String {
        format!("{}.csv", self.name.replace('/', "-"))
    }
}

/// Which series a report covers: DropWizard's `includes` and `excludes` by exact name
/// (an empty `includes` includes everything; `excludes` wins).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReportFilter {
    /// Only these names, when not empty.
    pub includes: Vec<String>,
    /// Never these names.
    pub excludes: Vec<String>,
}

impl ReportFilter {
    fn matches(&self, name: &str) -> bool {
        (self.includes.is_empty() || self.includes.iter().any(|i| i == name))
            && !self.excludes.iter().any(|e| e == name)
    }
}

/// The series of `families` that `filter` lets through, in the reporters' order: by kind
/// (gauges, counters, histograms, meters, timers), then by name.
fn series<'f>(
    families: &'f [FamilyView],
    filter: &ReportFilter,
) -> Vec<(MetricKind, &'f str, &'f Metric)> {
    let mut all: Vec<_> = families
        .iter()
        .flat_map(|f| {
            f.series
                .iter()
                .map(move |s| (f.kind, s.json_key.as_str(), &s.metric))
        })
        .filter(|(_, name, _)| filter.matches(name))
        .collect();
    all.sort_by(|a, b| (a.0, a.1).cmp(&(b.0, b.1)));
    all
}

fn ms(nanos: f64) -> f64 {
    nanos / NANOS_PER_MILLI
}

/// `count=..., min=..., ...`: a snapshot's statistics, each through `unit`.
fn statistics(s: &Snapshot, unit: impl Fn(f64) -> f64) -> [(&'static str, f64); 10] {
    [
        ("min", unit(s.min())),
        ("max", unit(s.max())),
        ("mean", unit(s.mean())),
        ("stddev", unit(s.stddev())),
        ("p50", unit(s.median())),
        ("p75", unit(s.p75())),
        ("p95", unit(s.p95())),
        ("p98", unit(s.p98())),
        ("p99", unit(s.p99())),
        ("p999", unit(s.p999())),
    ]
}

/// A number as Java's `Double.toString` would roughly write it: always with a fraction.
fn number(v: f64) -> String {
    if v.is_finite() && v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

pub(crate) fn log_lines(families: &[FamilyView], filter: &ReportFilter) -> Vec<String> {
    series(families, filter)
        .into_iter()
        .map(|(kind, name, metric)| {
            let mut line = String::new();
            let mut push = |key: &str, value: String| {
                line.push_str(", ");
                line.push_str(key);
                line.push('=');
                line.push_str(&value);
            };
            let head = match (kind, metric) {
                (_, Metric::Gauge(g)) => {
                    push("name", name.to_owned());
                    push("value", number(g.value()));
                    "GAUGE"
                }
                (_, Metric::Counter(c)) => {
                    push("name", name.to_owned());
                    push("count", c.count().to_string());
                    "COUNTER"
                }
                (_, Metric::Histogram(h)) => {
                    push("name", name.to_owned());
                    push("count", h.count().to_string());
                    for (k, v) in statistics(&h.snapshot(), |v| v) {
                        push(k, number(v));
                    }
                    "HISTOGRAM"
                }
                (_, Metric::Meter(m)) => {
                    push("name", name.to_owned());
                    push("count", m.count().to_string());
                    push("m1_rate", number(m.one_minute_rate()));
                    push("m5_rate", number(m.five_minute_rate()));
                    push("m15_rate", number(m.fifteen_minute_rate()));
                    push("mean_rate", number(m.mean_rate()));
                    push("rate_unit", "events/second".to_owned());
                    "METER"
                }
                (_, Metric::Timer(t)) => {
                    push("name", name.to_owned());
                    push("count", t.count().to_string());
                    for (k, v) in statistics(&t.snapshot(), ms) {
                        push(k, number(v));
                    }
                    push("m1_rate", number(t.one_minute_rate()));
                    push("m5_rate", number(t.five_minute_rate()));
                    push("m15_rate", number(t.fifteen_minute_rate()));
                    push("mean_rate", number(t.mean_rate()));
                    push("rate_unit", "events/second".to_owned());
                    push("duration_unit", "milliseconds".to_owned());
                    "TIMER"
                }
            };
            format!("type={head}{line}")
        })
        .collect()
}

/// `%f`, as `CsvReporter` formats its doubles: six decimals.
fn f(v: f64) -> String {
    format!("{v:.6}")
}

pub(crate) fn csv_rows(families: &[FamilyView], filter: &ReportFilter) -> Vec<CsvRow> {
    series(families, filter)
        .into_iter()
        .map(|(_, name, metric)| {
            let (header, values) = match metric {
                Metric::Gauge(g) => ("t,value", number(g.value())),
                Metric::Counter(c) => ("t,count", c.count().to_string()),
                Metric::Histogram(h) => {
                    let s = h.snapshot();
                    (
                        "t,count,max,mean,min,stddev,p50,p75,p95,p98,p99,p999",
                        format!(
                            "{},{},{},{},{},{},{},{},{},{},{}",
                            h.count(),
                            s.max(),
                            f(s.mean()),
                            s.min(),
                            f(s.stddev()),
                            f(s.median()),
                            f(s.p75()),
                            f(s.p95()),
                            f(s.p98()),
                            f(s.p99()),
                            f(s.p999())
                        ),
                    )
                }
                Metric::Meter(m) => (
                    "t,count,mean_rate,m1_rate,m5_rate,m15_rate,rate_unit",
                    format!(
                        "{},{},{},{},{},events/second",
                        m.count(),
                        f(m.mean_rate()),
                        f(m.one_minute_rate()),
                        f(m.five_minute_rate()),
                        f(m.fifteen_minute_rate())
                    ),
                ),
                Metric::Timer(t) => {
                    let s = t.snapshot();
                    (
                        "t,count,max,mean,min,stddev,p50,p75,p95,p98,p99,p999,mean_rate,m1_rate,m5_rate,m15_rate,rate_unit,duration_unit",
                        format!(
                            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},calls/second,milliseconds",
                            t.count(),
                            f(ms(s.max())),
                            f(ms(s.mean())),
                            f(ms(s.min())),
                            f(ms(s.stddev())),
                            f(ms(s.median())),
                            f(ms(s.p75())),
                            f(ms(s.p95())),
                            f(ms(s.p98())),
                            f(ms(s.p99())),
                            f(ms(s.p999())),
                            f(t.mean_rate()),
                            f(t.one_minute_rate()),
                            f(t.five_minute_rate()),
                            f(t.fifteen_minute_rate())
                        ),
                    )
                }
            };
            CsvRow {
                name: name.to_owned(),
                header,
                values,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::MetricRegistry;

    use super::*;

    fn registry() -> MetricRegistry {
        let r = MetricRegistry::new();
        r.counter("jobs").unwrap().add(3);
        r.gauge("queue", &[], || 2.0).unwrap();
        let h = r.histogram("sizes").unwrap();
        h.update(10);
        h.update(20);
        r.meter("ticks").unwrap().mark_n(5);
        let t = r.timer_with("requests", &[("route", "/a/{id}")]).unwrap();
        t.update(Duration::from_micros(1500));
        t.update(Duration::from_millis(2));
        r
    }

    #[test]
    fn log_lines_are_slf4j_reporters_by_kind_then_name() {
        let lines = registry().report_log_lines(&ReportFilter::default());
        let heads: Vec<&str> = lines
            .iter()
            .map(|l| l.split(", count").next().unwrap_or_default())
            .map(|l| l.split(", value").next().unwrap_or_default())
            .collect();
        assert_eq!(
            heads,
            [
                "type=GAUGE, name=queue",
                "type=COUNTER, name=jobs",
                "type=HISTOGRAM, name=sizes",
                "type=METER, name=ticks",
                "type=TIMER, name=requests./a/{id}",
            ]
        );
        assert_eq!(lines[0], "type=GAUGE, name=queue, value=2.0");
        assert_eq!(lines[1], "type=COUNTER, name=jobs, count=3");
        assert!(
            lines[2].starts_with("type=HISTOGRAM, name=sizes, count=2, min=10.0, max=20.0, mean="),
            "{}",
            lines[2]
        );
        assert!(lines[3].starts_with("type=METER, name=ticks, count=5, m1_rate="));
        assert!(lines[3].ends_with(", rate_unit=events/second"));
        assert!(
            lines[4].starts_with(
                "type=TIMER, name=requests./a/{id}, count=2, min=1.5, max=2.0, mean=1.75,"
            ),
            "{}",
            lines[4]
        );
        assert!(lines[4].ends_with(", rate_unit=events/second, duration_unit=milliseconds"));
    }

    #[test]
    fn csv_rows_are_csv_reporters_one_file_per_series() {
        let rows = registry().report_csv_rows(&ReportFilter::default());
        let files: Vec<String> = rows.iter().map(CsvRow::file_name).collect();
        assert_eq!(
            files,
            [
                "queue.csv",
                "jobs.csv",
                "sizes.csv",
                "ticks.csv",
                "requests.-a-{id}.csv"
            ]
        );
        assert_eq!(
            (rows[0].header, rows[0].values.as_str()),
            ("t,value", "2.0")
        );
        assert_eq!((rows[1].header, rows[1].values.as_str()), ("t,count", "3"));
        assert!(
            rows[2].values.starts_with("2,20,15.000000,10,"),
            "{}",
            rows[2].values
        );
        assert!(rows[3].values.starts_with("5,") && rows[3].values.ends_with(",events/second"));
        assert!(
            rows[4].values.starts_with("2,2.000000,1.750000,1.500000,"),
            "{}",
            rows[4].values
        );
        assert!(rows[4].values.ends_with(",calls/second,milliseconds"));
        for r in &rows {
            assert_eq!(
                r.header.split(',').count(),
                r.values.split(',').count() + 1,
                "{}",
                r.name
            );
        }
    }

    #[test]
    fn includes_and_excludes_pick_series_by_name() {
        let r = registry();
        let only = |includes: &[&str], excludes: &[&str]| {
            let filter = ReportFilter {
                includes: includes.iter().map(|s| (*s).to_owned()).collect(),
                excludes: excludes.iter().map(|s| (*s).to_owned()).collect(),
            };
            r.report_csv_rows(&filter)
                .into_iter()
                .map(|row| row.name)
                .collect::<Vec<_>>()
        };
        assert_eq!(only(&["jobs", "ticks"], &[]), ["jobs", "ticks"]);
        assert_eq!(only(&["jobs", "ticks"], &["ticks"]), ["jobs"]);
        assert_eq!(only(&[], &["jobs", "queue", "sizes"]).len(), 2);
    }
}
