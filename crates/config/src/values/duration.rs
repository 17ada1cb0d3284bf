use std::fmt;
use std::str::FromStr;

/// A length of time, written as DropWizard users write it: `30s`, `1 minute`, `500ms`,
/// `10 seconds`, `2h`, `1d`, or ISO-8601 as in `PT10M` / `P1DT2H` / `PT0.5S`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Duration(std::time::Duration);

const NANOS: &[(&str, &[&str], u128)] = &[
    // (display symbol, accepted spellings, nanoseconds)
    ("d", &["d", "day", "days"], 86_400_000_000_000),
    ("h", &["h", "hour", "hours"], 3_600_000_000_000),
    (
        "m",
        &["m", "min", "mins", "minute", "minutes"],
        60_000_000_000,
    ),
    (
        "s",
        &["s", "sec", "secs", "second", "seconds"],
        1_000_000_000,
    ),
    (
        "ms",
        &["ms", "milli", "millis", "millisecond", "milliseconds"],
        1_000_000,
    ),
    (
        "us",
        &["us", "µs", "micro", "micros", "microsecond", "microseconds"],
        1_000,
    ),
    (
        "ns",
        &["ns", "nano", "nanos", "nanosecond", "nanoseconds"],
        1,
    ),
];

impl Duration {
    /// `n` seconds.
    pub const fn seconds(n: u64) -> Duration {
        Duration(std::time::Duration::from_secs(n))
    }
    /// `n` milliseconds.
    pub const fn milliseconds(n: u64) -> Duration {
        Duration(std::time::Duration::from_millis(n))
    }
    /// `n` minutes.
    pub const fn minutes(n: u64) -> Duration {
        Duration(std::time::Duration::from_secs(n * 60))
    }
    /// The standard library's duration.
    pub const fn get(self) -> std::time::Duration {
        self.0
    }
}

impl From<std::time::Duration> for Duration {
    fn from(d: std::time::Duration) -> Self {
        Duration(d)
    }
}

fn from_nanos(n: u128) -> Option<Duration> {
    let secs = u64::try_from(n / 1_000_000_000).ok()?;
    Some(Duration(std::time::Duration::new(
        secs,
        (n % 1_000_000_000) as u32,
    )))
}

/// ISO-8601 `PnDTnHnMnS` (no years or months: their length is not fixed).
fn parse_iso(s: &str) -> Option<Duration> {
    let body = s.strip_prefix(['P', 'p'])?;
    let (date, time) = match body.find(['T', 't']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let mut total: f64 = 0.0;
    let mut any = false;
    let mut parse = |part: &str, units: &[(char, f64)]| -> Option<()> {
        let mut number = String::new();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' || c == ',' {
                number.push(if c == ',' { '.' } else { c });
                continue;
            }
            let (_, secs) = units.iter().find(|(u, _)| c.eq_ignore_ascii_case(u))?;
            total += number.parse::<f64>().ok()? * secs;
            number.clear();
            any = true;
        }
        number.is_empty().then_some(())
    };
    parse(date, &[('W', 604_800.0), ('D', 86_400.0)])?;
    if let Some(time) = time {
        if time.is_empty() {
            return None;
        }
        parse(time, &[('H', 3600.0), ('M', 60.0), ('S', 1.0)])?;
    }
    (any && total.is_finite() && total < 1e15)
        .then(|| from_nanos((total * 1e9).round() as u128))
        .flatten()
}

impl FromStr for Duration {
    type Err = String;

    fn from_str(s: &str) -> Result<Duration, String> {
        let s = s.trim();
        if s.starts_with(['P', 'p']) {
            return parse_iso(s).ok_or_else(|| format!("{s:?} is not an ISO-8601 duration"));
        }
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (digits, unit) = s.split_at(split);
        let n: u128 = digits
            .parse()
            .map_err(|_| format!("{s:?} does not start with a number"))?;
        let unit = unit.trim();
        let (_, _, nanos) = NANOS
            .iter()
            .find(|(_, names, _)| names.iter().any(|x| x.eq_ignore_ascii_case(unit)))
            .ok_or_else(|| format!("{s:?} needs a unit such as ms, s, minutes"))?;
        n.checked_mul(*nanos)
            .and_then(from_nanos)
            .ok_or_else(|| format!("{s:?} is too long"))
    }
}

impl fmt::Display for Duration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0.as_nanos();
        let (sym, m) = NANOS
            .iter()
            .find(|(_, _, m)| n != 0 && n.is_multiple_of(*m))
            .map(|(sym, _, m)| (*sym, *m))
            .unwrap_or(("s", 1_000_000_000));
        write!(f, "{}{sym}", n / m)
    }
}

super::text::text_value!(Duration, "a duration such as 30s, 500ms, 1 minute or PT10M");

#[cfg(test)]
mod tests {
    use super::Duration;

    #[test]
    fn parses_dropwizard_and_iso_spellings() {
        for (text, ms) in [
            ("30s", 30_000),
            ("1 minute", 60_000),
            ("500ms", 500),
            ("PT10M", 600_000),
            ("pt0.5s", 500),
            ("P1DT2H", 26 * 3_600_000),
            ("10 seconds", 10_000),
            ("2h", 7_200_000),
        ] {
            assert_eq!(
                text.parse::<Duration>(),
                Ok(Duration::milliseconds(ms)),
                "{text}"
            );
        }
        for bad in ["30", "10 parsecs", "PT", "P", "PTXM", "-1s", ""] {
            assert!(bad.parse::<Duration>().is_err(), "{bad}");
        }
    }

    #[test]
    fn displays_in_the_largest_exact_unit() {
        assert_eq!(Duration::seconds(30).to_string(), "30s");
        assert_eq!(Duration::milliseconds(1500).to_string(), "1500ms");
        assert_eq!(Duration::minutes(10).to_string(), "10m");
        assert_eq!(Duration::seconds(0).to_string(), "0s");
    }
}
