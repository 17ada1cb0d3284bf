//! `volley compare BASE NEW`: two runs' figures side by side, Global and per request, with
//! the percentiles read from each run's exact histograms (a merged run's too), and
//! [thresholds](threshold) that make a regression a failure: the baseline gate of a CI job.
//!
//! Times are the OK responses' (as the assertions' `responseTime`), so that fast failures do
//! not flatter a run; the KO share and the throughput are compared on their own. A group is a
//! row `group: NAME`, its times the cumulated response times of its OK executions.

pub mod table;
pub mod threshold;

use hdrhistogram::Histogram;

use crate::assertions::Outcome;
use crate::results::{RequestResults, Results};
use threshold::{Limit, Metric, Scope, Threshold};

/// The metrics each row shows, in order.
pub const SHOWN: [Metric; 7] = [
    Metric::Rps,
    Metric::Ko,
    Metric::Percentile(50.0),
    Metric::Percentile(95.0),
    Metric::Percentile(99.0),
    Metric::Max,
    Metric::Mean,
];

/// Why two runs could not be compared.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// A histogram of a results file does not decode.
    #[error("{file}: the OK histogram of {name} does not decode: {message}")]
    Histogram {
        /// The results file.
        file: String,
        /// The request name, or Global.
        name: String,
        /// What the decoder said.
        message: String,
    },
}

/// One run's figures for one row.
pub struct Figures {
    /// Responses.
    pub requests: u64,
    ko: f64,
    rps: f64,
    ok: Histogram<u64>,
}

impl Figures {
    fn of(r: &RequestResults, file: &str, name: &str) -> Result<Figures, CompareError> {
        // An older file's empty histogram reads as no OK response timed.
        let ok = if r.ok_histogram.is_empty() {
            crate::stats::histogram()
        } else {
            crate::results::decode_histogram(&r.ok_histogram).map_err(|message| {
                CompareError::Histogram {
                    file: file.to_owned(),
                    name: name.to_owned(),
                    message,
                }
            })?
        };
        Ok(Figures {
            requests: r.total.count,
            ko: 100.0 * r.ko.count as f64 / r.total.count.max(1) as f64,
            rps: r.mean_rps,
            ok,
        })
    }

    /// The figure of `metric`: times in ms (none without an OK response), the KO share in
    /// percent, the throughput in responses a second.
    pub fn value(&self, metric: Metric) -> Option<f64> {
        let ms = |us: u64| us as f64 / 1000.0;
        let time = |f: &dyn Fn(&Histogram<u64>) -> f64| (!self.ok.is_empty()).then(|| f(&self.ok));
        match metric {
            Metric::Ko => Some(self.ko),
            Metric::Rps => Some(self.rps),
            Metric::Mean => time(&|h| h.mean() / 1000.0),
            Metric::Max => time(&|h| ms(h.max())),
            Metric::Percentile(p) => time(&|h| ms(h.value_at_quantile(p / 100.0))),
        }
    }
}

/// A row: Global or a request name, with each run's figures (none in a run that lacks it).
pub struct Row {
    /// `Global`, or the request's name.
    pub name: String,
    /// The base run's.
    pub base: Option<Figures>,
    /// The new run's.
    pub new: Option<Figures>,
}

/// A threshold judged on one row.
pub struct Verdict {
    /// The threshold.
    pub threshold: Threshold,
    /// The row it judged.
    pub row: String,
    /// The base's figure.
    pub base: Option<f64>,
    /// The new run's figure.
    pub new: Option<f64>,
    /// How much worse the new figure is, in the limit's terms (percent of the base's for a
    /// relative limit, the metric's unit otherwise); negative when it is better. None when a
    /// run has no figure.
    pub worse: Option<f64>,
    /// Whether it held.
    pub passed: bool,
    /// Why there is no figure to judge, when there is none.
    pub note: Option<&'static str>,
}

impl Verdict {
    /// Its sentence, e.g. `Global: p99 at most 10% higher`, or `login: ...` for a threshold
    /// on each request.
    pub fn description(&self) -> String {
        let mut t = self.threshold.clone();
        t.scope = if self.row == "Global" {
            Scope::Global
        } else {
            Scope::Request(self.row.clone())
        };
        match &self.note {
            Some(note) => format!("{t} ({note})"),
            None => t.to_string(),
        }
    }

    /// As an assertion's outcome (for JUnit): `actual` is [`worse`](Self::worse).
    pub fn outcome(&self) -> Outcome {
        Outcome {
            description: self.description(),
            passed: self.passed,
            actual: self.worse.unwrap_or(f64::NAN),
        }
    }
}

/// Two runs compared, and the thresholds judged.
pub struct Comparison {
    /// Global, then each request name of either run, by name.
    pub rows: Vec<Row>,
    /// Each threshold on each row it judges, in the order given.
    pub verdicts: Vec<Verdict>,
}

impl Comparison {
    /// Whether every threshold held.
    pub fn passed(&self) -> bool {
        self.verdicts.iter().all(|v| v.passed)
    }
}

/// Compares `base` (read from `base_file`) with `new` (from `new_file`) and judges
/// `thresholds`.
///
/// ```
/// use std::time::Duration;
/// use volley::compare::{compare, threshold::Threshold};
/// use volley::results::Results;
/// use volley::stats::Stats;
///
/// let run = |ms: u64| {
///     let mut stats = Stats::new(1);
///     for _ in 0..100 {
///         stats.record("home", 0, ms * 1000, ms * 1000, None, 1);
///     }
///     Results::new(&stats, String::new(), Duration::from_secs(1), false, Vec::new())
/// };
/// let gate: Threshold = "*:p99=10%".parse().unwrap();
/// let same = compare(&run(20), "base.json", &run(21), "new.json", &[gate.clone()])?;
/// assert!(same.passed());
/// let slower = compare(&run(20), "base.json", &run(30), "new.json", &[gate])?;
/// assert!(!slower.passed());
/// assert_eq!(slower.verdicts[0].description(), "home: p99 at most 10% higher");
/// # Ok::<(), volley::compare::CompareError>(())
/// ```
pub fn compare(
    base: &Results,
    base_file: &str,
    new: &Results,
    new_file: &str,
    thresholds: &[Threshold],
) -> Result<Comparison, CompareError> {
    let mut rows = vec![Row {
        name: "Global".into(),
        base: Some(Figures::of(&base.global, base_file, "Global")?),
        new: Some(Figures::of(&new.global, new_file, "Global")?),
    }];
    let mut names: Vec<&String> = base.requests.keys().chain(new.requests.keys()).collect();
    names.sort();
    names.dedup();
    for name in names {
        let side = |r: &Results, file: &str| {
            r.requests
                .get(name)
                .map(|q| Figures::of(q, file, name))
                .transpose()
        };
        rows.push(Row {
            name: name.clone(),
            base: side(base, base_file)?,
            new: side(new, new_file)?,
        });
    }
    // Groups after the requests, as `group: NAME` (a scope a threshold names the same way).
    let mut groups: Vec<&String> = base.groups.keys().chain(new.groups.keys()).collect();
    groups.sort();
    groups.dedup();
    for path in groups {
        let name = format!("group: {path}");
        let side = |r: &Results, file: &str| {
            r.groups
                .get(path)
                .map(|g| Figures::of(g, file, &name))
                .transpose()
        };
        rows.push(Row {
            name: name.clone(),
            base: side(base, base_file)?,
            new: side(new, new_file)?,
        });
    }
    let mut verdicts = Vec::new();
    for t in thresholds {
        let judged: Vec<&Row> = match &t.scope {
            Scope::Global => vec![&rows[0]],
            Scope::Each => rows[1..]
                .iter()
                .filter(|r| r.base.is_some() && r.new.is_some())
                .collect(),
            Scope::Request(name) => match rows[1..].iter().find(|r| &r.name == name) {
                Some(row) => vec![row],
                None => {
                    verdicts.push(Verdict {
                        threshold: t.clone(),
                        row: name.clone(),
                        base: None,
                        new: None,
                        worse: None,
                        passed: false,
                        note: Some("in neither run"),
                    });
                    continue;
                }
            },
        };
        for row in judged {
            verdicts.push(judge(t, row));
        }
    }
    Ok(Comparison { rows, verdicts })
}

/// Judges `t` on `row`: the new figure may be worse than the base's by the limit, no more.
/// A figure missing on either side fails (a request gone, or no OK response left to time).
fn judge(t: &Threshold, row: &Row) -> Verdict {
    let base = row.base.as_ref().and_then(|f| f.value(t.metric));
    let new = row.new.as_ref().and_then(|f| f.value(t.metric));
    let note = match (&row.base, &row.new) {
        (None, _) => Some("not in the base run"),
        (_, None) => Some("not in the new run"),
        _ if base.is_none() || new.is_none() => Some("no OK response to time"),
        _ => None,
    };
    let worse = match (base, new) {
        (Some(b), Some(n)) => {
            let amount = if t.metric.worse_higher() {
                n - b
            } else {
                b - n
            };
            Some(match t.limit {
                Limit::Absolute(_) => amount,
                Limit::Relative(_) if b == 0.0 => {
                    if amount > 0.0 {
                        f64::INFINITY
                    } else {
                        0.0
                    }
                }
                Limit::Relative(_) => 100.0 * amount / b.abs(),
            })
        }
        _ => None,
    };
    let allowed = match t.limit {
        Limit::Relative(share) => share * 100.0,
        Limit::Absolute(amount) => amount,
    };
    Verdict {
        threshold: t.clone(),
        row: row.name.clone(),
        base,
        new,
        worse,
        passed: worse.is_some_and(|w| w <= allowed + 1e-9),
        note,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(name: &str, times_ms: &[u64], kos: u64, seconds: u64) -> Results {
        let mut stats = crate::stats::Stats::new(1);
        for &ms in times_ms {
            stats.record(name, 0, ms * 1000, ms * 1000, None, 1);
        }
        for _ in 0..kos {
            stats.record(name, 0, 1000, 1000, Some("KO"), 1);
        }
        Results::new(
            &stats,
            String::new(),
            std::time::Duration::from_secs(seconds),
            false,
            Vec::new(),
        )
    }

    fn verdict(base: &Results, new: &Results, t: &str) -> Verdict {
        let c = compare(base, "b", new, "n", &[t.parse().unwrap()]).unwrap();
        c.verdicts.into_iter().next().unwrap()
    }

    /// Each metric moves the way its name says, against both kinds of limit: a p99 from
    /// 99 to 118 ms is 19.2% and 19 ms worse; throughput halved is 50% worse; KO from 0 to
    /// 10% is 10 points; and a better run is negative.
    ///
    /// Catches: rps judged as if higher were worse, a relative limit compared in shares
    /// against percents, KO as a share of a share, OK times mixed with KO ones.
    #[test]
    fn each_metric_is_judged_in_its_direction_and_unit() {
        let times: Vec<u64> = (1..=100).collect();
        let slower: Vec<u64> = times.iter().map(|t| t * 6 / 5).collect();
        let base = run("r", &times, 0, 10);
        let new = run("r", &slower, 0, 10);
        let v = verdict(&base, &new, "p99=19%");
        assert!(!v.passed);
        // p99 of 1..=100 ms is 99 ms, of each 6/5 as long (whole ms) 118 ms: 19.2% worse.
        assert!((v.worse.unwrap() - 19.2).abs() < 0.1, "{:?}", v.worse);
        assert!(verdict(&base, &new, "p99=21%").passed);
        assert!(verdict(&base, &new, "r:p99=21ms").passed);
        assert!(!verdict(&base, &new, "r:p99=18ms").passed);
        assert!(verdict(&new, &base, "p99=0%").worse.unwrap() < 0.0);
        let half = run("r", &times, 0, 20);
        assert!(!verdict(&base, &half, "rps=49%").passed);
        assert!(
            verdict(&half, &base, "rps=0%").passed,
            "twice the throughput"
        );
        let failing = run("r", &times[..90], 10, 10);
        let v = verdict(&base, &failing, "ko=9.9");
        assert!(!v.passed);
        assert!((v.worse.unwrap() - 10.0).abs() < 1e-9);
        // The OK times alone: the KO responses (1 ms each) do not lower the mean.
        let mean = |r: &Results| {
            compare(r, "b", r, "n", &[])
                .unwrap()
                .rows
                .remove(0)
                .base
                .unwrap()
                .value(Metric::Mean)
                .unwrap()
        };
        assert!((mean(&failing) - 45.5).abs() < 0.1, "{}", mean(&failing));
    }

    /// A request named by a threshold must be in both runs; `*` judges those in both and
    /// lists the others.
    ///
    /// Catches: a renamed request passing its gate unseen, `*` failing on a new request.
    #[test]
    fn requests_missing_from_a_run_fail_a_named_gate_and_are_listed() {
        let base = run("old", &[10], 0, 1);
        let new = run("new", &[10], 0, 1);
        let v = verdict(&base, &new, "old:p99=10%");
        assert!(!v.passed);
        assert_eq!(
            v.description(),
            "old: p99 at most 10% higher (not in the new run)"
        );
        let c = compare(&base, "b", &new, "n", &["*:p99=10%".parse().unwrap()]).unwrap();
        assert!(c.verdicts.is_empty() && c.passed());
        let names: Vec<&str> = c.rows.iter().map(|r| r.name.as_str()).collect();
        assert_eq!(names, ["Global", "new", "old"]);
        let v = verdict(&base, &new, "new:ko=0");
        assert_eq!(
            v.description(),
            "new: ko at most 0 pp higher (not in the base run)"
        );
        let v = verdict(&base, &new, "absent:ko=0");
        assert_eq!(
            v.description(),
            "absent: ko at most 0 pp higher (in neither run)"
        );
    }
}
