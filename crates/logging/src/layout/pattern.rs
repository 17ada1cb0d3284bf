//! logback's pattern language, the subset DropWizard users write.
//!
//! `%-5p [%d{ISO8601,UTC}] %c: %m%n` and friends: conversion words with optional padding
//! and truncation (`%-5p`, `%20.30c`) and options in braces (`%d{HH:mm:ss.SSS}`,
//! `%logger{36}`, `%X{requestId}`). An unknown conversion word is an error with its
//! position, never a literal that silently appears in every line.

use std::time::Instant;

use jiff::tz::TimeZone;

use super::time::DateFormat;
use crate::record::Record;

/// A compiled pattern.
#[derive(Clone, Debug)]
pub struct PatternLayout {
    tokens: Vec<Token>,
    started: Instant,
}

#[derive(Clone, Debug)]
enum Token {
    Literal(String),
    Field(Conversion, Pad),
}

#[derive(Clone, Debug)]
enum Conversion {
    Level,
    Date(Box<DateFormat>),
    Logger(Option<usize>),
    Message,
    Newline,
    Thread,
    Mdc(Option<String>),
    Exception,
    Relative,
    File,
    Line,
}

#[derive(Clone, Copy, Debug, Default)]
struct Pad {
    left: bool,
    min: usize,
    max: Option<usize>,
}

/// A pattern error: what, and at which character (1-based) of the pattern.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("at character {position} of the pattern: {message}")]
pub struct PatternError {
    /// What is wrong.
    pub message: String,
    /// 1-based character position in the pattern.
    pub position: usize,
}

/// The conversion words understood, for error messages.
const WORDS: &[&str] = &[
    "p",
    "le",
    "level",
    "d",
    "date",
    "c",
    "lo",
    "logger",
    "C",
    "class",
    "m",
    "msg",
    "message",
    "n",
    "t",
    "thread",
    "X",
    "mdc",
    "ex",
    "exception",
    "throwable",
    "xEx",
    "rEx",
    "r",
    "relative",
    "F",
    "file",
    "L",
    "line",
];

impl PatternLayout {
    /// Compiles `pattern`; `%d` without a zone uses `default_zone`.
    pub fn new(pattern: &str, default_zone: &TimeZone) -> Result<PatternLayout, PatternError> {
        let chars: Vec<char> = pattern.chars().collect();
        let mut tokens = Vec::new();
        let mut literal = String::new();
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            if c == '\\' && i + 1 < chars.len() {
                literal.push(chars[i + 1]);
                i += 2;
                continue;
            }
            if c != '%' {
                literal.push(c);
                i += 1;
                continue;
            }
            let start = i;
            i += 1;
            if chars.get(i) == Some(&'%') {
                literal.push('%');
                i += 1;
                continue;
            }
            let mut pad = Pad::default();
            if chars.get(i) == Some(&'-') {
                pad.left = true;
                i += 1;
            }
            let digits = |i: &mut usize| {
                let s: String = chars[*i..]
                    .iter()
                    .take_while(|c| c.is_ascii_digit())
                    .collect();
                *i += s.len();
                s.parse::<usize>().ok()
            };
            pad.min = digits(&mut i).unwrap_or(0);
            if chars.get(i) == Some(&'.') {
                i += 1;
                pad.max = digits(&mut i);
                if pad.max.is_none() {
                    return Err(PatternError {
                        message: "expected a number after '.'".into(),
                        position: i + 1,
                    });
                }
            }
            let word: String = chars[i..]
                .iter()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            i += word.len();
            let option = if chars.get(i) == Some(&'{') {
                let end = chars[i..]
                    .iter()
                    .position(|&c| c == '}')
                    .map(|p| i + p)
                    .ok_or(PatternError {
                        message: format!("unclosed '{{' after %{word}"),
                        position: i + 1,
                    })?;
                let option: String = chars[i + 1..end].iter().collect();
                i = end + 1;
                Some(option)
            } else {
                None
            };
            let bad = |message: String| PatternError {
                message,
                position: start + 1,
            };
            let conversion =
                match word.as_str() {
                    "p" | "le" | "level" => Conversion::Level,
                    "d" | "date" => {
                        let option = option.unwrap_or_else(|| "ISO8601".into());
                        let (format, zone) = match option.split_once(',') {
                            Some((f, z)) => (f.trim().to_owned(), Some(z.trim().to_owned())),
                            None => (option, None),
                        };
                        let zone = match zone {
                            Some(z) => super::time::time_zone(&z).map_err(bad)?,
                            None => default_zone.clone(),
                        };
                        Conversion::Date(Box::new(DateFormat::new(&format, zone).map_err(bad)?))
                    }
                    "c" | "lo" | "logger" | "C" | "class" => Conversion::Logger(match option {
                        Some(n) => Some(
                            n.trim()
                                .parse()
                                .map_err(|_| bad(format!("%{word}{{{n}}} needs a number")))?,
                        ),
                        None => None,
                    }),
                    "m" | "msg" | "message" => Conversion::Message,
                    "n" => Conversion::Newline,
                    "t" | "thread" => Conversion::Thread,
                    "X" | "mdc" => Conversion::Mdc(option),
                    "ex" | "exception" | "throwable" | "xEx" | "rEx" => Conversion::Exception,
                    "r" | "relative" => Conversion::Relative,
                    "F" | "file" => Conversion::File,
                    "L" | "line" => Conversion::Line,
                    "" => return Err(bad(
                        "a '%' must be followed by a conversion word (use %% for a percent sign)"
                            .into(),
                    )),
                    other => {
                        // Suggest the long spellings: they are the ones people mean to type.
                        let close = ferrowizard_config::did_you_mean(
                            other,
                            WORDS.iter().copied().filter(|w| w.len() >= 4),
                        );
                        let hint = match close.first() {
                            Some(c) => format!("; did you mean %{c}?"),
                            None => String::new(),
                        };
                        return Err(bad(format!("unknown conversion word %{other}{hint}")));
                    }
                };
            if !literal.is_empty() {
                tokens.push(Token::Literal(std::mem::take(&mut literal)));
            }
            tokens.push(Token::Field(conversion, pad));
        }
        if !literal.is_empty() {
            tokens.push(Token::Literal(literal));
        }
        Ok(PatternLayout {
            tokens,
            started: Instant::now(),
        })
    }

    /// Whether the pattern prints the exception itself (logback appends it otherwise).
    fn has_exception(&self) -> bool {
        self.tokens
            .iter()
            .any(|t| matches!(t, Token::Field(Conversion::Exception, _)))
    }

    /// Appends one formatted line for `record` to `out`.
    pub fn format(&mut self, record: &Record, out: &mut Vec<u8>) {
        let started = self.started;
        let print_exception = !self.has_exception() && !record.exception().is_empty();
        for token in &mut self.tokens {
            match token {
                Token::Literal(text) => out.extend_from_slice(text.as_bytes()),
                Token::Field(conversion, pad) => {
                    let start = out.len();
                    write_conversion(conversion, record, started, out);
                    apply_pad(*pad, start, out);
                }
            }
        }
        if print_exception {
            out.extend_from_slice(record.exception().as_bytes());
            out.push(b'\n');
        }
    }
}

fn write_conversion(
    conversion: &mut Conversion,
    record: &Record,
    started: Instant,
    out: &mut Vec<u8>,
) {
    match conversion {
        Conversion::Level => out.extend_from_slice(record.level().as_str().as_bytes()),
        Conversion::Date(format) => {
            let (second, nanos) = record.unix_time();
            format.write_parts(second, nanos, out)
        }
        Conversion::Logger(None) => out.extend_from_slice(record.target().as_bytes()),
        Conversion::Logger(Some(n)) => abbreviate(record.target(), *n, out),
        Conversion::Message => write_message(record, out),
        Conversion::Newline => out.push(b'\n'),
        Conversion::Thread => out.extend_from_slice(record.thread().as_bytes()),
        Conversion::Mdc(Some(key)) => {
            if let Some(v) = record.mdc_value(key) {
                out.extend_from_slice(v.as_bytes());
            }
        }
        Conversion::Mdc(None) => {
            for (i, (k, v)) in record.mdc_entries().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                out.extend_from_slice(k.as_bytes());
                out.push(b'=');
                out.extend_from_slice(v.as_bytes());
            }
        }
        Conversion::Exception => {
            if !record.exception().is_empty() {
                out.extend_from_slice(record.exception().as_bytes());
                out.push(b'\n');
            }
        }
        Conversion::Relative => {
            let _ =
                std::io::Write::write_fmt(out, format_args!("{}", started.elapsed().as_millis()));
        }
        Conversion::File => out.extend_from_slice(record.caller().map_or("?", |c| c.0).as_bytes()),
        Conversion::Line => match record.caller() {
            Some((_, line)) => {
                let _ = std::io::Write::write_fmt(out, format_args!("{line}"));
            }
            None => out.push(b'?'),
        },
    }
}

/// `%m`: the message, then the event's fields as ` name=value`.
pub(crate) fn write_message(record: &Record, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(record.message_bytes());
    for (name, value) in record.fields() {
        if out.len() > start {
            out.push(b' ');
        }
        out.extend_from_slice(name.as_bytes());
        out.push(b'=');
        value.write(out);
    }
}

/// logback's `%logger{n}`: shorten leading segments to their first letter until the name
/// fits in `n` characters; `{0}` keeps only the last segment.
fn abbreviate(target: &str, n: usize, out: &mut Vec<u8>) {
    let segments: Vec<&str> = target.split("::").collect();
    if n == 0 || segments.len() == 1 {
        out.extend_from_slice(segments.last().copied().unwrap_or("").as_bytes());
        return;
    }
    let mut len = target.len();
    let last = segments.len() - 1;
    for (i, seg) in segments.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b"::");
        }
        if i < last && len > n && seg.len() > 1 {
            let first = seg.chars().next().map_or(1, char::len_utf8);
            out.extend_from_slice(&seg.as_bytes()[..first]);
            len -= seg.len() - first;
        } else {
            out.extend_from_slice(seg.as_bytes());
        }
    }
}

fn apply_pad(pad: Pad, start: usize, out: &mut Vec<u8>) {
    let len = out.len() - start;
    if let Some(max) = pad.max
        && len > max
    {
        // logback truncates from the left, keeping the end (the most specific part).
        out.drain(start..start + (len - max));
    }
    let len = out.len() - start;
    if len < pad.min {
        let fill = pad.min - len;
        if pad.left {
            out.extend(std::iter::repeat_n(b' ', fill));
        } else {
            out.splice(start..start, std::iter::repeat_n(b' ', fill));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;

    fn record() -> Record {
        let mut r = Record::default();
        r.set_level(Level::INFO);
        r.set_target("realtime::quotes::feed");
        r.set_time(
            std::time::UNIX_EPOCH + std::time::Duration::from_nanos(1_392_044_642_619_000_000),
        );
        r.set_thread("tokio-runtime-worker");
        r.set_message(|m| m.push_str("quote updated"));
        r.push_str_field("symbol", "ACME");
        r.push_mdc("requestId", "abc123");
        r
    }

    fn render(pattern: &str, r: &Record) -> String {
        let mut layout = PatternLayout::new(pattern, &TimeZone::UTC).unwrap();
        let mut out = Vec::new();
        layout.format(r, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn dropwizard_default_pattern() {
        assert_eq!(
            render(crate::config::DEFAULT_LOG_FORMAT, &record()),
            "INFO  [2014-02-10 15:04:02,619] realtime::quotes::feed: quote updated symbol=ACME\n"
        );
    }

    #[test]
    fn every_token() {
        let r = record();
        assert_eq!(
            render("%level|%le|%p|%5p|%-6p|", &r),
            "INFO|INFO|INFO| INFO|INFO  |"
        );
        assert_eq!(
            render("%d{HH:mm:ss.SSS}|%date{yyyy,Europe/Paris}", &r),
            "15:04:02.619|2014"
        );
        assert_eq!(
            render("%c|%logger{0}|%lo{10}|%.8c", &r),
            "realtime::quotes::feed|feed|r::q::feed|es::feed"
        );
        assert_eq!(
            render("%m|%msg|%message", &r),
            "quote updated symbol=ACME|quote updated symbol=ACME|quote updated symbol=ACME"
        );
        assert_eq!(
            render("%t|%thread|%.5t", &r),
            "tokio-runtime-worker|tokio-runtime-worker|orker"
        );
        assert_eq!(
            render("%X{requestId}|%X{none}|%mdc", &r),
            "abc123||requestId=abc123"
        );
        assert_eq!(render("%F:%L|%%|\\%n", &r), "?:?|%|%n");
        assert_eq!(render("a%n|b", &r), "a\n|b");
        assert!(render("%r", &r).parse::<u64>().is_ok());
    }

    #[test]
    fn exceptions_are_printed_once() {
        let mut r = record();
        r.push_exception("boom\nCaused by: disk full");
        assert_eq!(
            render("%m%n", &r),
            "quote updated symbol=ACME\nboom\nCaused by: disk full\n"
        );
        assert_eq!(
            render("%m %ex", &r),
            "quote updated symbol=ACME boom\nCaused by: disk full\n"
        );
    }

    #[test]
    fn errors_name_the_position() {
        let err = |p: &str| PatternLayout::new(p, &TimeZone::UTC).unwrap_err();
        assert_eq!(err("%-5p %lvl").position, 6);
        assert!(
            err("%-5p %lvl").message.contains("did you mean %level"),
            "{}",
            err("%-5p %lvl").message
        );
        assert_eq!(err("abc %").position, 5);
        assert_eq!(err("%d{yyyy").position, 3);
        assert!(
            err("%d{HH,Mars/Base}")
                .message
                .contains("unknown time zone")
        );
        assert!(err("%logger{x}").message.contains("needs a number"));
        assert!(
            err("%highlight(%p)")
                .message
                .contains("unknown conversion word %highlight")
        );
    }
}
