//! Gatling's assertions: checked after the run; any that fails makes the exit code 2.

use ferrowizard_config::Config;
use serde::{Deserialize, Serialize};

use crate::stats::{Stats, Tally, rate};

/// Which requests an assertion looks at.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// All requests together.
    Global,
    /// Each request name on its own; all must pass.
    ForAll,
    /// One request name.
    Details(String),
    /// One group, by its path (`checkout`, `checkout / payment`): its executions, and their
    /// cumulated response times (Gatling's default for a group).
    Group(String),
}

/// What is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Stat {
    /// Response time of OK responses (ms).
    ResponseTime,
    /// All requests.
    AllRequests,
    /// KO requests.
    FailedRequests,
    /// OK requests.
    SuccessfulRequests,
    /// Requests per second over the run.
    RequestsPerSec,
}

/// How it is summarized.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Metric {
    /// Smallest.
    Min,
    /// Largest.
    Max,
    /// Mean.
    Mean,
    /// Standard deviation.
    StdDev,
    /// A percentile, e.g. 99.
    Percentile(f64),
    /// Share of all requests, in percent.
    Percent,
    /// A count.
    Count,
}

/// The comparison.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Condition {
    /// Less than.
    Lt(f64),
    /// At most.
    Lte(f64),
    /// More than.
    Gt(f64),
    /// At least.
    Gte(f64),
    /// Between, bounds included.
    Between(f64, f64),
}

/// One assertion, e.g. `{scope: global, stat: responseTime, metric: {percentile: 99}, condition: {lt: 500}}`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct Assertion {
    /// `global`, `forAll`, `{details: name}`, or `{group: path}`.
    #[config(default = Scope::Global)]
    pub scope: Scope,
    /// What is measured.
    #[config(default = Stat::ResponseTime)]
    pub stat: Stat,
    /// How it is summarized.
    #[config(default = Metric::Max)]
    pub metric: Metric,
    /// The comparison.
    #[config(default = Condition::Lt(f64::INFINITY))]
    pub condition: Condition,
}

/// An assertion's outcome, as printed and written to results.json.
#[derive(Clone, Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(deny_unknown_fields)]
pub struct Outcome {
    /// Gatling's sentence, e.g. `Global: max of response time is less than 1000.0`.
    pub description: String,
    /// Whether it held.
    pub passed: bool,
    /// The measured value (for forAll, the worst name's); null when there was nothing to
    /// measure (NaN in memory, which JSON cannot carry).
    #[serde(with = "nan_as_null")]
    #[schemars(with = "Option<f64>")]
    pub actual: f64,
}

/// NaN as JSON's null and back: serde_json writes a NaN as null but will not read null into
/// an `f64`, so without this a results.json with an unmeasured assertion would not load.
mod nan_as_null {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
        if v.is_nan() {
            s.serialize_none()
        } else {
            s.serialize_some(v)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
    }
}

fn stat_name(stat: Stat) -> &'static str {
    match stat {
        Stat::ResponseTime => "response time",
        Stat::AllRequests => "all requests",
        Stat::FailedRequests => "failed events",
        Stat::SuccessfulRequests => "successful events",
        Stat::RequestsPerSec => "requests per second",
    }
}

fn metric_name(m: Metric) -> String {
    match m {
        Metric::Min => "min".into(),
        Metric::Max => "max".into(),
        Metric::Mean => "mean".into(),
        Metric::StdDev => "standard deviation".into(),
        Metric::Percentile(p) => format!("{p}th percentile"),
        Metric::Percent => "percentage".into(),
        Metric::Count => "count".into(),
    }
}

fn condition_text(c: Condition) -> String {
    match c {
        Condition::Lt(v) => format!("is less than {v:.1}"),
        Condition::Lte(v) => format!("is less than or equal to {v:.1}"),
        Condition::Gt(v) => format!("is greater than {v:.1}"),
        Condition::Gte(v) => format!("is greater than or equal to {v:.1}"),
        Condition::Between(a, b) => format!("is between {a:.1} and {b:.1}"),
    }
}

fn holds(c: Condition, v: f64) -> bool {
    match c {
        Condition::Lt(x) => v < x,
        Condition::Lte(x) => v <= x,
        Condition::Gt(x) => v > x,
        Condition::Gte(x) => v >= x,
        Condition::Between(a, b) => a <= v && v <= b,
    }
}

/// The value of `stat`/`metric` over `t`, or why it has none.
fn measure(
    t: &Tally,
    stat: Stat,
    metric: Metric,
    elapsed: std::time::Duration,
) -> Result<f64, String> {
    let (h, count) = match stat {
        Stat::ResponseTime | Stat::SuccessfulRequests => (&t.ok, t.oks),
        Stat::FailedRequests => (&t.ko, t.kos),
        Stat::AllRequests | Stat::RequestsPerSec => (&t.all, t.requests),
    };
    let ms = |v: u64| v as f64 / 1000.0;
    match (stat, metric) {
        (Stat::RequestsPerSec, Metric::Mean) => Ok(rate(t.requests, elapsed)),
        (Stat::RequestsPerSec, m) => Err(format!(
            "requestsPerSec has only mean, not {}",
            metric_name(m)
        )),
        (Stat::ResponseTime, Metric::Count | Metric::Percent) => {
            Err("responseTime has no count or percentage".into())
        }
        (_, Metric::Count) => Ok(count as f64),
        (_, Metric::Percent) => Ok(if t.requests == 0 {
            0.0
        } else {
            100.0 * count as f64 / t.requests as f64
        }),
        (Stat::ResponseTime, _) if h.is_empty() => Err("no OK response to measure".into()),
        (Stat::ResponseTime, Metric::Min) => Ok(ms(h.min())),
        (Stat::ResponseTime, Metric::Max) => Ok(ms(h.max())),
        (Stat::ResponseTime, Metric::Mean) => Ok(h.mean() / 1000.0),
        (Stat::ResponseTime, Metric::StdDev) => Ok(h.stdev() / 1000.0),
        (Stat::ResponseTime, Metric::Percentile(p)) => {
            Ok(ms(h.value_at_quantile((p / 100.0).clamp(0.0, 1.0))))
        }
        (s, m) => Err(format!("{} has no {}", stat_name(s), metric_name(m))),
    }
}

/// Checks every assertion against a run.
pub fn check(
    assertions: &[Assertion],
    stats: &Stats,
    elapsed: std::time::Duration,
) -> Vec<Outcome> {
    assertions
        .iter()
        .map(|a| {
            let (label, tallies): (String, Vec<(&str, &Tally)>) = match &a.scope {
                Scope::Global => ("Global".into(), vec![("Global", &stats.global)]),
                Scope::ForAll => (
                    "For all requests".into(),
                    stats.by_name.iter().map(|(k, t)| (k.as_str(), t)).collect(),
                ),
                Scope::Details(name) => (
                    name.clone(),
                    stats
                        .by_name
                        .get(name)
                        .map(|t| vec![(name.as_str(), t)])
                        .unwrap_or_default(),
                ),
                Scope::Group(path) => (
                    format!("Group {path}"),
                    stats
                        .groups
                        .get(path)
                        .map(|g| vec![(path.as_str(), &g.cumulated)])
                        .unwrap_or_default(),
                ),
            };
            let description = format!(
                "{label}: {} of {} {}",
                metric_name(a.metric),
                stat_name(a.stat),
                condition_text(a.condition)
            );
            if tallies.is_empty() {
                let missing = match a.scope {
                    Scope::Group(_) => "no such group",
                    _ => "no such request",
                };
                return Outcome {
                    description: format!("{description} ({missing})"),
                    passed: false,
                    actual: f64::NAN,
                };
            }
            let mut passed = true;
            let mut actual = f64::NAN;
            for (_, t) in tallies {
                match measure(t, a.stat, a.metric, elapsed) {
                    Ok(v) => {
                        let ok = holds(a.condition, v);
                        if !ok || actual.is_nan() {
                            actual = v;
                        }
                        passed &= ok;
                    }
                    Err(e) => {
                        return Outcome {
                            description: format!("{description} ({e})"),
                            passed: false,
                            actual: f64::NAN,
                        };
                    }
                }
            }
            Outcome {
                description,
                passed,
                actual,
            }
        })
        .collect()
}

/// Gatling's line: `Global: max of response time is less than 1000.0 : false (actual : 2040.0)`.
pub fn line(o: &Outcome) -> String {
    format!(
        "{} : {} (actual : {:.1})",
        o.description, o.passed, o.actual
    )
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::check;
    use crate::stats::Stats;

    /// Two request names: `a` answered OK in 10, 20, 40, 90 and 250 ms and KO once (1 s);
    /// `b` OK once, in 3 ms, and KO four times (2 s each). In all: 11 requests, 6 OK, 5 KO.
    fn measured() -> Stats {
        let mut stats = Stats::default();
        let mut record = |name: &str, ms: u64, error: Option<&str>| {
            stats.record(name, 0, ms * 1000, ms * 1000, error, 1);
        };
        for ms in [10, 20, 40, 90, 250] {
            record("a", ms, None);
        }
        record("a", 1_000, Some("status 500"));
        record("b", 3, None);
        for _ in 0..4 {
            record("b", 2_000, Some("status 503"));
        }
        stats
    }

    /// Every scope, stat, metric and percentile of a scenario's assertions, checked against
    /// [`measured`] over 4 s: each reads the value it names, and no two of them read the same
    /// value, so a key ignored (its default is `global`, `responseTime`, `max`) or one value
    /// computed as another's (the 75th percentile as the max, failedRequests as allRequests,
    /// `details: b` as the whole run) reads a number its row does not expect. The `forAll`
    /// row holds for `a` (83% OK) and not for `b` (20%): it fails, reading `b`'s.
    ///
    /// Catches: `scope`, `stat` or `metric` ignored; a stat computed as another (KOs counted
    /// as all requests, OKs as all); a metric computed as another (a percentile as the max,
    /// the mean or the min, a percentage as a count); the percentile's value ignored or
    /// turned round (the 25th read as the 75th); `details` reading the whole run or another
    /// name; `forAll` reading the whole run or passing when one name fails.
    #[test]
    fn each_scope_stat_metric_and_percentile_reads_its_own_value() {
        // The scope, stat and metric, and the value they read (ms, a count, percent or a
        // rate). Every row but `forAll` has no condition (less than infinity): it holds.
        let rows = [
            ("global", "responseTime", "min", 3.0),
            ("global", "responseTime", "max", 250.0),
            ("global", "responseTime", "mean", 413.0 / 6.0),
            ("global", "responseTime", "stdDev", 85.9),
            ("global", "responseTime", "{percentile: 75}", 90.0),
            ("global", "responseTime", "{percentile: 25}", 10.0),
            ("global", "allRequests", "count", 11.0),
            ("global", "allRequests", "percent", 100.0),
            ("global", "failedRequests", "count", 5.0),
            ("global", "failedRequests", "percent", 500.0 / 11.0),
            ("global", "successfulRequests", "count", 6.0),
            ("global", "successfulRequests", "percent", 600.0 / 11.0),
            ("global", "requestsPerSec", "mean", 11.0 / 4.0),
            ("{details: b}", "failedRequests", "percent", 80.0),
            ("{details: a}", "failedRequests", "percent", 100.0 / 6.0),
            ("forAll", "successfulRequests", "percent", 20.0),
        ];
        let mut yaml = "baseUrl: http://127.0.0.1:1\nscenarios:\n  - name: s\n    \
                        injection: [{atOnceUsers: 1}]\n    steps: [{pause: 1s}]\nassertions:\n"
            .to_owned();
        for (scope, stat, metric, _) in &rows {
            let condition = if *scope == "forAll" {
                ", condition: {gte: 50}"
            } else {
                ""
            };
            yaml.push_str(&format!(
                "  - {{scope: {scope}, stat: {stat}, metric: {metric}{condition}}}\n"
            ));
        }
        let simulation = crate::scenario::load_str("assertions.yaml", &yaml).unwrap();
        let outcomes = check(&simulation.assertions, &measured(), Duration::from_secs(4));
        assert_eq!(outcomes.len(), rows.len());
        for ((scope, stat, metric, expected), o) in rows.iter().zip(&outcomes) {
            // Three significant digits, as the histograms keep them.
            assert!(
                (o.actual - expected).abs() <= expected / 500.0 + 0.001,
                "{scope} {stat} {metric}: {} is {}, not {expected}",
                o.description,
                o.actual
            );
            assert_eq!(o.passed, *scope != "forAll", "{}", o.description);
        }
        // No two rows expect the same value: a row computed as another's fails above.
        for (i, (_, _, _, x)) in rows.iter().enumerate() {
            for (_, _, _, y) in &rows[i + 1..] {
                assert!((x - y).abs() > x.max(*y) / 50.0, "{x} and {y} are alike");
            }
        }
    }
}
