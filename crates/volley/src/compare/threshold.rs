//! Thresholds: how much worse a figure may get from the base run to the new one.
//!
//! Written `[SCOPE:]METRIC=LIMIT`, on the command line or a line each in a file:
//! - `SCOPE`: `Global` (the default), `*` for each request and group on its own, a request's
//!   name, or `group: NAME` for a group;
//! - `METRIC`: `p50`, `p75`, `p95`, `p99`, `p99.9` (any percentile `pN`), `mean` or `max` of
//!   the OK responses' times, `ko` (the KO share) or `rps` (responses a second);
//! - `LIMIT`: `10%` of the base's figure, or an amount in the metric's unit: `5ms` for a
//!   time, percentage points for `ko` (`ko=1`), responses a second for `rps`.

use std::fmt;

/// What a threshold measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Metric {
    /// A percentile of the OK responses' times (ms), e.g. 99 or 99.9.
    Percentile(f64),
    /// The OK responses' mean time (ms).
    Mean,
    /// The OK responses' longest time (ms).
    Max,
    /// The KO responses' share of all, in percent.
    Ko,
    /// Responses a second over the run.
    Rps,
}

impl Metric {
    /// Whether a higher figure is the worse one (a time, a KO share); throughput is worse
    /// lower.
    pub fn worse_higher(self) -> bool {
        !matches!(self, Metric::Rps)
    }

    /// Whether it is a time in milliseconds.
    pub fn is_time(self) -> bool {
        matches!(self, Metric::Percentile(_) | Metric::Mean | Metric::Max)
    }

    /// Its unit as printed after a figure.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Ko => " pp",
            Metric::Rps => " rps",
            _ => " ms",
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Metric::Percentile(p) => write!(f, "p{p}"),
            Metric::Mean => f.write_str("mean"),
            Metric::Max => f.write_str("max"),
            Metric::Ko => f.write_str("ko"),
            Metric::Rps => f.write_str("rps"),
        }
    }
}

/// The requests a threshold judges.
#[derive(Clone, Debug, PartialEq)]
pub enum Scope {
    /// All requests together.
    Global,
    /// Each request name on its own (those in both runs).
    Each,
    /// One request name, which both runs must have.
    Request(String),
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scope::Global => f.write_str("Global"),
            Scope::Each => f.write_str("each request"),
            Scope::Request(name) => f.write_str(name),
        }
    }
}

/// How much worse a figure may get.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Limit {
    /// A share of the base's figure: 0.1 for `10%`.
    Relative(f64),
    /// An amount in the metric's unit (ms, percentage points, responses a second).
    Absolute(f64),
}

impl fmt::Display for Limit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Limit::Relative(share) => write!(f, "{}%", share * 100.0),
            Limit::Absolute(amount) => write!(f, "{amount}"),
        }
    }
}

/// One threshold, e.g. `p99=10%`: the Global p99 may be at most 10% above the base's.
///
/// ```
/// use volley::compare::threshold::{Limit, Metric, Scope, Threshold};
///
/// let t: Threshold = "login:p99.9=5ms".parse().unwrap();
/// assert_eq!(t.scope, Scope::Request("login".into()));
/// assert_eq!(t.metric, Metric::Percentile(99.9));
/// assert_eq!(t.limit, Limit::Absolute(5.0));
/// assert!("p99=ten".parse::<Threshold>().is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Threshold {
    /// The requests it judges.
    pub scope: Scope,
    /// What it measures.
    pub metric: Metric,
    /// How much worse the new run's figure may be.
    pub limit: Limit,
}

impl fmt::Display for Threshold {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let unit = match (self.limit, self.metric) {
            (Limit::Relative(_), _) => "",
            (Limit::Absolute(_), m) => m.unit(),
        };
        let direction = if self.metric.worse_higher() {
            "higher"
        } else {
            "lower"
        };
        write!(
            f,
            "{}: {} at most {}{unit} {direction}",
            self.scope, self.metric, self.limit
        )
    }
}

impl std::str::FromStr for Threshold {
    type Err = String;

    fn from_str(text: &str) -> Result<Threshold, String> {
        let text = text.trim();
        // The last `=`: a request's name may hold one (a query), a limit never does.
        let (head, limit) = text.rsplit_once('=').ok_or_else(|| {
            format!("{text:?}: a threshold is [SCOPE:]METRIC=LIMIT, e.g. p99=10% or login:p95=5ms")
        })?;
        let (scope, metric) = match head.rsplit_once(':') {
            Some((scope, metric)) => (scope.trim(), metric.trim()),
            None => ("Global", head.trim()),
        };
        let scope = match scope {
            "Global" | "global" => Scope::Global,
            "*" => Scope::Each,
            "" => return Err(format!("{text:?}: the scope before ':' is empty")),
            name => Scope::Request(name.to_owned()),
        };
        let metric = metric_of(metric).map_err(|e| format!("{text:?}: {e}"))?;
        let limit = limit_of(limit.trim(), metric).map_err(|e| format!("{text:?}: {e}"))?;
        Ok(Threshold {
            scope,
            metric,
            limit,
        })
    }
}

fn metric_of(text: &str) -> Result<Metric, String> {
    match text {
        "mean" => Ok(Metric::Mean),
        "max" => Ok(Metric::Max),
        "ko" => Ok(Metric::Ko),
        "rps" => Ok(Metric::Rps),
        _ => text
            .strip_prefix('p')
            .and_then(|p| p.parse::<f64>().ok())
            .filter(|p| *p > 0.0 && *p <= 100.0)
            .map(Metric::Percentile)
            .ok_or_else(|| {
                format!("unknown metric {text:?}: use p50, p95, p99, p99.9 (any pN), mean, max, ko or rps")
            }),
    }
}

fn limit_of(text: &str, metric: Metric) -> Result<Limit, String> {
    let number = |t: &str| {
        t.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| format!("the limit {text:?} is not a number of 0 or more"))
    };
    if let Some(share) = text.strip_suffix('%') {
        if metric == Metric::Ko {
            return Err(format!(
                "ko's limit is in percentage points of KO, without '%': ko=1 allows 1 point more, e.g. 0.5% to 1.5% (not {text:?})"
            ));
        }
        return Ok(Limit::Relative(number(share)? / 100.0));
    }
    if let Some(ms) = text.strip_suffix("ms") {
        if !metric.is_time() {
            return Err(format!(
                "'ms' is for times; {metric}'s limit is in{}",
                metric.unit()
            ));
        }
        return Ok(Limit::Absolute(number(ms)?));
    }
    Ok(Limit::Absolute(number(text)?))
}

/// The thresholds of a file: one a line, in the command line's syntax; blank lines and `#`
/// comments are skipped. A bad line is named `FILE:LINE`.
pub fn parse_file(file: &str, text: &str) -> Result<Vec<Threshold>, String> {
    let mut thresholds = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.split_once('#').map_or(line, |(t, _)| t).trim();
        if line.is_empty() {
            continue;
        }
        thresholds.push(line.parse().map_err(|e| format!("{file}:{}: {e}", i + 1))?);
    }
    Ok(thresholds)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every part of the syntax, and each mistake refused with what to write instead.
    ///
    /// Catches: the scope split at the first ':' (a name holding ':'), a `%` read as an
    /// amount, ko's `%` taken as a share of a share, `ms` on a count accepted.
    #[test]
    fn thresholds_parse_and_mistakes_say_what_to_write() {
        let t = |s: &str| s.parse::<Threshold>();
        assert_eq!(
            t("p99=10%").unwrap(),
            Threshold {
                scope: Scope::Global,
                metric: Metric::Percentile(99.0),
                limit: Limit::Relative(0.1)
            }
        );
        assert_eq!(t("*:ko=1").unwrap().scope, Scope::Each);
        assert_eq!(t("*:ko=1").unwrap().limit, Limit::Absolute(1.0));
        assert_eq!(
            t("GET /a:b:mean=2ms").unwrap().scope,
            Scope::Request("GET /a:b".into())
        );
        assert_eq!(t("rps=5%").unwrap().metric, Metric::Rps);
        assert!(t("ko=1%").unwrap_err().contains("percentage points"));
        assert!(t("rps=5ms").unwrap_err().contains("'ms' is for times"));
        assert!(t("p0=1").unwrap_err().contains("unknown metric"));
        assert!(t("p99").unwrap_err().contains("[SCOPE:]METRIC=LIMIT"));
        assert!(t("p99=-1%").unwrap_err().contains("0 or more"));
        let file = parse_file("t.txt", "# gate\np99=10%\n\n*:ko=1 # each\nmax=x\n");
        assert_eq!(
            file.unwrap_err(),
            "t.txt:5: \"max=x\": the limit \"x\" is not a number of 0 or more"
        );
        assert_eq!(
            parse_file("t.txt", "p99=10%\n*:ko=1 # each\n")
                .unwrap()
                .len(),
            2
        );
    }
}
