//! Timestamps in logback's `%d{...}` patterns, formatted once per second.
//!
//! A log line's timestamp changes every millisecond but everything except the milliseconds
//! changes once a second, so [`DateFormat`] renders the second's text once (time zone
//! conversion included) and only the milliseconds per line.

use std::fmt::Write as _;

use jiff::tz::TimeZone;

use crate::bytes::put;

/// One piece of a date pattern.
#[derive(Clone, Debug, PartialEq)]
enum Item {
    Text(String),
    Year(usize),
    Month(usize),
    Day,
    Hour24,
    Hour12,
    Minute,
    Second,
    Millis(usize),
    AmPm,
    DayName(usize),
    /// `Z`: +0000.
    OffsetBasic,
    /// `X`, `XX`, `XXX`: Z or +00, +0000, +00:00.
    OffsetIso(usize),
}

/// A parsed `%d{pattern, timeZone}` with its once-a-second cache.
#[derive(Clone, Debug)]
pub struct DateFormat {
    items: Vec<Item>,
    tz: TimeZone,
    cached_second: i64,
    /// The second's rendering, without its milliseconds.
    cached: String,
    /// Where in `cached` each milliseconds field goes, and its width.
    millis_at: Vec<(usize, usize)>,
}

/// logback's ISO8601 (note the comma before the milliseconds).
pub const ISO8601: &str = "yyyy-MM-dd HH:mm:ss,SSS";

impl DateFormat {
    /// Parses a SimpleDateFormat-style pattern (`ISO8601` names logback's) for `tz`.
    pub fn new(pattern: &str, tz: TimeZone) -> Result<DateFormat, String> {
        let pattern = if pattern.eq_ignore_ascii_case("ISO8601") {
            ISO8601
        } else {
            pattern
        };
        let mut items = Vec::new();
        let chars: Vec<char> = pattern.chars().collect();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\'' {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&c| c == '\'')
                    .map(|p| i + 1 + p);
                let end =
                    end.ok_or_else(|| format!("unclosed quote in date pattern {pattern:?}"))?;
                let text: String = chars[i + 1..end].iter().collect();
                items.push(Item::Text(if text.is_empty() { "'".into() } else { text }));
                i = end + 1;
                continue;
            }
            let run = chars[i..].iter().take_while(|&&x| x == c).count();
            let item = match c {
                'y' => Item::Year(run),
                'M' => Item::Month(run),
                'd' => Item::Day,
                'H' => Item::Hour24,
                'h' => Item::Hour12,
                'm' => Item::Minute,
                's' => Item::Second,
                'S' => Item::Millis(run),
                'a' => Item::AmPm,
                'E' => Item::DayName(run),
                'Z' => Item::OffsetBasic,
                'X' => Item::OffsetIso(run),
                c if c.is_ascii_alphabetic() => {
                    return Err(format!("unsupported date letter {c:?} in {pattern:?}"));
                }
                _ => Item::Text(chars[i..i + run].iter().collect()),
            };
            items.push(item);
            i += run;
        }
        Ok(DateFormat {
            items,
            tz,
            cached_second: i64::MIN,
            cached: String::new(),
            millis_at: Vec::new(),
        })
    }

    /// Writes the time `nanos` (since the epoch) to `out`.
    pub fn write(&mut self, nanos: i128, out: &mut Vec<u8>) {
        let second = nanos.div_euclid(1_000_000_000) as i64;
        let subsec = nanos.rem_euclid(1_000_000_000) as u32;
        self.write_parts(second, subsec, out);
    }

    /// Writes the time `second` (since the epoch) plus `subsec_nanos` to `out`.
    pub fn write_parts(&mut self, second: i64, subsec_nanos: u32, out: &mut Vec<u8>) {
        if second != self.cached_second {
            self.render_second(second);
        }
        let millis = subsec_nanos / 1_000_000;
        let cached = self.cached.as_bytes();
        let mut done = 0;
        for &(at, width) in &self.millis_at {
            put(out, &cached[done..at]);
            write_millis(out, millis, width);
            done = at;
        }
        put(out, &cached[done..]);
    }

    fn render_second(&mut self, second: i64) {
        self.cached_second = second;
        self.cached.clear();
        self.millis_at.clear();
        let Ok(ts) = jiff::Timestamp::from_second(second) else {
            return;
        };
        let zoned = ts.to_zoned_datetime(self.tz.clone());
        let offset = zoned.offset().seconds();
        let out = &mut self.cached;
        for item in &self.items {
            let _ = match item {
                Item::Text(t) => out.write_str(t),
                Item::Year(2) => write!(out, "{:02}", zoned.year().rem_euclid(100)),
                Item::Year(n) => write!(out, "{:0n$}", zoned.year(), n = *n),
                Item::Month(n) if *n >= 4 => out.write_str(MONTHS[zoned.month() as usize - 1]),
                Item::Month(3) => out.write_str(&MONTHS[zoned.month() as usize - 1][..3]),
                Item::Month(n) => write!(out, "{:0n$}", zoned.month(), n = *n),
                Item::Day => write!(out, "{:02}", zoned.day()),
                Item::Hour24 => write!(out, "{:02}", zoned.hour()),
                Item::Hour12 => write!(out, "{:02}", (zoned.hour() + 11) % 12 + 1),
                Item::Minute => write!(out, "{:02}", zoned.minute()),
                Item::Second => write!(out, "{:02}", zoned.second()),
                Item::Millis(width) => {
                    self.millis_at.push((out.len(), *width));
                    Ok(())
                }
                Item::AmPm => out.write_str(if zoned.hour() < 12 { "AM" } else { "PM" }),
                Item::DayName(n) => {
                    let name = DAYS[zoned.weekday().to_monday_zero_offset() as usize];
                    out.write_str(if *n >= 4 { name } else { &name[..3] })
                }
                Item::OffsetBasic => write_offset(out, offset, false),
                Item::OffsetIso(_) if offset == 0 => out.write_char('Z'),
                Item::OffsetIso(1) => write!(out, "{}{:02}", sign(offset), offset.abs() / 3600),
                Item::OffsetIso(2) => write_offset(out, offset, false),
                Item::OffsetIso(_) => write_offset(out, offset, true),
            };
        }
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const DAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

fn sign(offset: i32) -> char {
    if offset < 0 { '-' } else { '+' }
}

fn write_offset(out: &mut String, offset: i32, colon: bool) -> std::fmt::Result {
    let abs = offset.abs();
    let colon = if colon { ":" } else { "" };
    write!(
        out,
        "{}{:02}{colon}{:02}",
        sign(offset),
        abs / 3600,
        abs % 3600 / 60
    )
}

fn write_millis(out: &mut Vec<u8>, millis: u32, width: usize) {
    let digits = [
        b'0' + (millis / 100) as u8,
        b'0' + (millis / 10 % 10) as u8,
        b'0' + (millis % 10) as u8,
    ];
    if width <= 3 {
        put(out, &digits[3 - width.max(1)..]);
    } else {
        out.extend(std::iter::repeat_n(b'0', width - 3));
        out.extend_from_slice(&digits);
    }
}

/// Looks a time zone up by name (`UTC`, `America/New_York`, `+02:00`...).
pub fn time_zone(name: &str) -> Result<TimeZone, String> {
    let name = name.trim();
    if name.eq_ignore_ascii_case("UTC") || name.eq_ignore_ascii_case("GMT") || name == "Z" {
        return Ok(TimeZone::UTC);
    }
    if name.eq_ignore_ascii_case("system") {
        // The machine's zone, as Java's `TimeZone.getDefault()` (DropWizard's `system`).
        return Ok(TimeZone::system());
    }
    // `GMT+02:00` and `UTC-3` are Java's custom zone ids: the offset after the prefix.
    let offset = ["GMT", "UTC"]
        .iter()
        .find_map(|p| {
            name.get(..3)
                .filter(|head| head.eq_ignore_ascii_case(p))
                .map(|_| &name[3..])
        })
        .filter(|rest| rest.starts_with(['+', '-']))
        .unwrap_or(name);
    if let Some(rest) = offset.strip_prefix(['+', '-']) {
        let (h, m) = rest.split_once(':').unwrap_or((rest, "0"));
        let (h, m): (i32, i32) = (
            h.parse().map_err(|_| bad_zone(name))?,
            m.parse().map_err(|_| bad_zone(name))?,
        );
        if !(0..=18).contains(&h) || !(0..60).contains(&m) {
            return Err(bad_zone(name));
        }
        let seconds = (h * 3600 + m * 60) * if offset.starts_with('-') { -1 } else { 1 };
        let offset = jiff::tz::Offset::from_seconds(seconds).map_err(|_| bad_zone(name))?;
        return Ok(TimeZone::fixed(offset));
    }
    TimeZone::get(name).map_err(|_| bad_zone(name))
}

fn bad_zone(name: &str) -> String {
    format!(
        "unknown time zone {name:?} (use UTC, system, an IANA name such as Europe/Paris, or an offset such as +02:00 or GMT-03:00)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(pattern: &str, tz: &str, nanos: i128) -> String {
        let mut f = DateFormat::new(pattern, time_zone(tz).unwrap()).unwrap();
        let mut out = Vec::new();
        f.write(nanos, &mut out);
        String::from_utf8(out).unwrap()
    }

    // 2014-02-10 15:04:02.619 UTC, the 2014 DropWizard logging report's run.
    const REPORT_TIME: i128 = 1_392_044_642_619_000_000;

    #[test]
    fn formats_logback_patterns() {
        assert_eq!(
            render("ISO8601", "UTC", REPORT_TIME),
            "2014-02-10 15:04:02,619"
        );
        assert_eq!(render("HH:mm:ss.SSS", "UTC", REPORT_TIME), "15:04:02.619");
        assert_eq!(
            render("dd/MMM/yyyy:HH:mm:ss Z", "UTC", REPORT_TIME),
            "10/Feb/2014:15:04:02 +0000"
        );
        assert_eq!(
            render("yyyy-MM-dd'T'HH:mm:ss.SSSXXX", "Europe/Paris", REPORT_TIME),
            "2014-02-10T16:04:02.619+01:00"
        );
        assert_eq!(
            render("EEE, d MMMM yy hh a", "America/New_York", REPORT_TIME),
            "Mon, 10 February 14 10 AM"
        );
        assert_eq!(render("HH:mm Z", "-03:30", REPORT_TIME), "11:34 -0330");
    }

    #[test]
    fn the_cache_follows_the_clock() {
        let mut f = DateFormat::new("HH:mm:ss.SSS", TimeZone::UTC).unwrap();
        let mut out = Vec::new();
        for ms in [0, 1, 999, 1000, 61_000] {
            out.clear();
            f.write(REPORT_TIME + ms * 1_000_000, &mut out);
            let expected = jiff::Timestamp::from_nanosecond(REPORT_TIME + ms * 1_000_000)
                .unwrap()
                .strftime("%H:%M:%S%.3f");
            assert_eq!(String::from_utf8_lossy(&out), expected.to_string());
        }
    }

    #[test]
    fn rejects_what_it_does_not_know() {
        assert!(DateFormat::new("yyyy-QQ", TimeZone::UTC).is_err());
        assert!(DateFormat::new("'open", TimeZone::UTC).is_err());
        assert!(time_zone("Mars/Olympus").is_err());
    }

    /// DropWizard's own test configurations write zones as Java does: `GMT-02:00`, `system`.
    #[test]
    fn java_zone_ids_are_offsets_or_the_machines_zone() {
        let offset = |z: &str| {
            time_zone(z)
                .unwrap()
                .to_offset(jiff::Timestamp::UNIX_EPOCH)
                .seconds()
        };
        for (zone, seconds) in [
            ("GMT-02:00", -7200),
            ("GMT+05:30", 19800),
            ("gmt+1", 3600),
            ("UTC-03:00", -10800),
            ("+02:00", 7200),
            ("-0", 0),
            ("GMT", 0),
        ] {
            assert_eq!(offset(zone), seconds, "{zone}");
        }
        assert_eq!(
            time_zone("system").unwrap().iana_name(),
            TimeZone::system().iana_name()
        );
        for bad in ["GMT+25:00", "GMT+01:75", "GMT+", "GMTX", "+1:2:3"] {
            assert!(time_zone(bad).is_err(), "{bad}");
        }
    }
}
