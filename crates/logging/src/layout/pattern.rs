//! logback's pattern language, the subset DropWizard users write.
//!
//! `%-5p [%d{ISO8601,UTC}] %c: %m%n` and friends: conversion words with optional padding
//! and truncation (`%-5p`, `%20.30c`) and options in braces (`%d{HH:mm:ss.SSS}`,
//! `%logger{36}`, `%X{requestId}`). An unknown conversion word is an error with its
//! position, never a literal that silently appears in every line.

use std::time::Instant;

use jiff::tz::TimeZone;

use super::time::DateFormat;
use crate::bytes::put;
use crate::record::Record;

/// A compiled pattern.
#[derive(Clone, Debug)]
pub struct PatternLayout {
    tokens: Vec<Token>,
    started: Instant,
    /// Whether the pattern prints the exception itself (logback appends it otherwise).
    has_exception: bool,
    /// Whether it prints the date anywhere (the line's time is then read once, up front).
    dated: bool,
    /// The line's beginning as the last line printed it (see [`Head`]).
    head: Head,
}

/// The tokens at the start of a pattern that depend only on a line's level, millisecond,
/// logger and thread (`%-5p [%d{ISO8601,UTC}] %c: ` in DropWizard's default), and their
/// text for the last line formatted. A busy service writes thousands of lines a millisecond
/// with the same level, logger and thread, so most lines copy that text instead of
/// formatting the date, padding the level and copying the logger piece by piece.
#[derive(Clone, Debug, Default)]
struct Head {
    /// How many of the pattern's first tokens it covers.
    tokens: usize,
    /// Whether those print the date.
    dated: bool,
    /// What the text was formatted for, if any.
    key: Option<HeadKey>,
    text: Vec<u8>,
}

/// What a pattern's head depends on. Names are compared by address and length: the same
/// `&'static str` is the same text (a different copy of the same text renders the head
/// again, which is only slower).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct HeadKey {
    level: tracing::Level,
    /// The second and millisecond, when the head prints the date (`%d` prints milliseconds
    /// at most).
    millisecond: (i64, u32),
    target: (usize, usize),
    thread: (usize, usize),
}

impl HeadKey {
    fn of(line: &Line<'_>, dated: bool) -> HeadKey {
        let name = |s: &str| (s.as_ptr() as usize, s.len());
        let (second, nanos) = line.time;
        HeadKey {
            level: line.record.level(),
            millisecond: if dated {
                (second, nanos / 1_000_000)
            } else {
                (0, 0)
            },
            target: name(line.record.target()),
            thread: name(line.record.thread()),
        }
    }
}

/// What a line is formatted from: the record, its time as (second, nanoseconds) since the
/// Unix epoch when the pattern prints a date, and when the layout started (`%r`).
struct Line<'a> {
    record: &'a Record,
    time: (i64, u32),
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

/// logback-access's conversion words: a request log's (ferrowizard's server writes them).
pub const ACCESS_WORDS: &[&str] = &[
    "a",
    "remoteIP",
    "h",
    "clientHost",
    "l",
    "u",
    "user",
    "t",
    "date",
    "r",
    "requestURL",
    "m",
    "requestMethod",
    "U",
    "requestURI",
    "q",
    "queryString",
    "H",
    "protocol",
    "s",
    "statusCode",
    "b",
    "B",
    "bytesSent",
    "D",
    "elapsedTime",
    "T",
    "elapsedSeconds",
    "i",
    "header",
    "o",
    "responseHeader",
    "n",
    "X",
    "mdc",
];

/// Whether `pattern` is well-formed and each of its words is logback's (an event's) or
/// logback-access's (a request's): what an appender's `logFormat` is checked for where it is
/// written; which of the two sets applies is the appender list's check.
///
/// ```
/// use ferrowizard_logging::layout::pattern::check_words;
/// assert!(check_words("%-5p %c: %m%n").is_ok());
/// assert!(check_words("%h \"%r\" %s").is_ok());
/// assert!(check_words("%lvl").unwrap_err().to_string().contains("did you mean %level?"));
/// ```
pub fn check_words(pattern: &str) -> Result<(), PatternError> {
    for piece in parse(pattern)? {
        if let Piece::Conversion { word, position, .. } = piece
            && !WORDS.contains(&word.as_str())
            && !ACCESS_WORDS.contains(&word.as_str())
        {
            return Err(unknown_word(
                &word,
                position,
                WORDS.iter().chain(ACCESS_WORDS).copied(),
            ));
        }
    }
    Ok(())
}

/// One piece of a logback pattern: literal text, or a conversion word with its padding and
/// option; what the words mean is the layout's ([`PatternLayout`] for events, ferrowizard's
/// request log for logback-access's words).
///
/// ```
/// use ferrowizard_logging::layout::pattern::{Piece, parse};
/// let pieces = parse("%-5p [%X{requestId}] 100%%").unwrap();
/// assert!(matches!(&pieces[0], Piece::Conversion { word, pad, .. } if word == "p" && pad.min == 5));
/// assert!(matches!(&pieces[2], Piece::Conversion { word, option: Some(o), .. } if word == "X" && o == "requestId"));
/// assert!(matches!(&pieces[3], Piece::Literal(text) if text == "] 100%"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece {
    /// Text written as it is (`\\x` and `%%` already unescaped).
    Literal(String),
    /// `%[-][min][.max]word[{option}]`.
    Conversion {
        /// The conversion word (`p`, `logger`, `X`, ...).
        word: String,
        /// What is in braces after it.
        option: Option<String>,
        /// The padding and truncation before it.
        pad: Pad,
        /// Where its `%` is, 1-based, for errors.
        position: usize,
    },
}

impl Piece {
    /// A conversion's word, option, padding and position; a literal's text as the error.
    pub fn into_conversion(self) -> Result<(String, Option<String>, Pad, usize), String> {
        match self {
            Piece::Literal(text) => Err(text),
            Piece::Conversion {
                word,
                option,
                pad,
                position,
            } => Ok((word, option, pad, position)),
        }
    }
}

/// A conversion's width: padded to `min` (on the right when `left`-aligned), truncated to
/// `max` from the left.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pad {
    /// Left-aligned (`%-5p`): the padding goes after the text.
    pub left: bool,
    /// The least width.
    pub min: usize,
    /// The most width (`%.30c`).
    pub max: Option<usize>,
}

impl Pad {
    /// Whether the text is written as it is.
    pub fn is_none(&self) -> bool {
        self.min == 0 && self.max.is_none()
    }

    /// Pads or truncates what was written to `out` since `start`.
    pub fn apply(self, start: usize, out: &mut Vec<u8>) {
        apply_pad(self, start, out);
    }
}

/// The pieces of `pattern`: a `%` without a conversion word, an unclosed brace or a `.`
/// without a number is an error with its position.
pub fn parse(pattern: &str) -> Result<Vec<Piece>, PatternError> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut pieces = Vec::new();
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
        if word.is_empty() {
            return Err(PatternError {
                message: "a '%' must be followed by a conversion word (use %% for a percent sign)"
                    .into(),
                position: start + 1,
            });
        }
        if !literal.is_empty() {
            pieces.push(Piece::Literal(std::mem::take(&mut literal)));
        }
        pieces.push(Piece::Conversion {
            word,
            option,
            pad,
            position: start + 1,
        });
    }
    if !literal.is_empty() {
        pieces.push(Piece::Literal(literal));
    }
    Ok(pieces)
}

/// The error for an unknown conversion `word` at `position`, suggesting the closest of
/// `known` (their long spellings: the ones people mean to type).
pub fn unknown_word<'a>(
    word: &str,
    position: usize,
    known: impl IntoIterator<Item = &'a str>,
) -> PatternError {
    let close = ferrowizard_config::did_you_mean(word, known.into_iter().filter(|w| w.len() >= 4));
    let hint = match close.first() {
        Some(c) => format!("; did you mean %{c}?"),
        None => String::new(),
    };
    PatternError {
        message: format!("unknown conversion word %{word}{hint}"),
        position,
    }
}

impl PatternLayout {
    /// Compiles `pattern`; `%d` without a zone uses `default_zone`.
    pub fn new(pattern: &str, default_zone: &TimeZone) -> Result<PatternLayout, PatternError> {
        let mut tokens = Vec::new();
        for piece in parse(pattern)? {
            let (word, option, pad, position) = match piece.into_conversion() {
                Ok(conversion) => conversion,
                Err(text) => {
                    tokens.push(Token::Literal(text));
                    continue;
                }
            };
            let bad = |message: String| PatternError { message, position };
            let conversion = match word.as_str() {
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
                other => return Err(unknown_word(other, position, WORDS.iter().copied())),
            };
            tokens.push(Token::Field(conversion, pad));
        }
        let has_exception = tokens
            .iter()
            .any(|t| matches!(t, Token::Field(Conversion::Exception, _)));
        let head_tokens = tokens
            .iter()
            .take_while(|t| {
                matches!(
                    t,
                    Token::Literal(_)
                        | Token::Field(
                            Conversion::Level
                                | Conversion::Date(_)
                                | Conversion::Logger(_)
                                | Conversion::Thread,
                            _
                        )
                )
            })
            .count();
        let head = Head {
            tokens: head_tokens,
            dated: tokens[..head_tokens]
                .iter()
                .any(|t| matches!(t, Token::Field(Conversion::Date(_), _))),
            ..Head::default()
        };
        let dated = tokens
            .iter()
            .any(|t| matches!(t, Token::Field(Conversion::Date(_), _)));
        Ok(PatternLayout {
            tokens,
            started: Instant::now(),
            has_exception,
            dated,
            head,
        })
    }

    /// Appends one formatted line for `record` to `out`.
    pub fn format(&mut self, record: &Record, out: &mut Vec<u8>) {
        let line = Line {
            record,
            time: if self.dated {
                record.unix_time()
            } else {
                (0, 0)
            },
            started: self.started,
        };
        let print_exception = !self.has_exception && !record.exception().is_empty();
        let (head, rest) = self.tokens.split_at_mut(self.head.tokens);
        if !head.is_empty() {
            let key = HeadKey::of(&line, self.head.dated);
            if self.head.key != Some(key) {
                self.head.text.clear();
                write_tokens(head, &line, &mut self.head.text);
                self.head.key = Some(key);
            }
            put(out, &self.head.text);
        }
        write_tokens(rest, &line, out);
        if print_exception {
            put(out, record.exception().as_bytes());
            out.push(b'\n');
        }
    }
}

/// Appends what `tokens` print for `record` to `out`.
fn write_tokens(tokens: &mut [Token], line: &Line<'_>, out: &mut Vec<u8>) {
    for token in tokens {
        match token {
            Token::Literal(text) => put(out, text.as_bytes()),
            Token::Field(conversion, pad) => {
                let start = out.len();
                write_conversion(conversion, line, out);
                apply_pad(*pad, start, out);
            }
        }
    }
}

fn write_conversion(conversion: &mut Conversion, line: &Line<'_>, out: &mut Vec<u8>) {
    let record = line.record;
    match conversion {
        Conversion::Level => put(out, record.level().as_str().as_bytes()),
        Conversion::Date(format) => {
            let (second, nanos) = line.time;
            format.write_parts(second, nanos, out)
        }
        Conversion::Logger(None) => put(out, record.target().as_bytes()),
        Conversion::Logger(Some(n)) => abbreviate(record.target(), *n, out),
        Conversion::Message => write_message(record, out),
        Conversion::Newline => out.push(b'\n'),
        Conversion::Thread => put(out, record.thread().as_bytes()),
        Conversion::Mdc(Some(key)) => {
            if let Some(v) = record.mdc_value(key) {
                put(out, v.as_bytes());
            }
        }
        Conversion::Mdc(None) => {
            for (i, (k, v)) in record.mdc_entries().enumerate() {
                if i > 0 {
                    put(out, b", ");
                }
                put(out, k.as_bytes());
                out.push(b'=');
                put(out, v.as_bytes());
            }
        }
        Conversion::Exception => {
            if !record.exception().is_empty() {
                put(out, record.exception().as_bytes());
                out.push(b'\n');
            }
        }
        Conversion::Relative => {
            let _ = std::io::Write::write_fmt(
                out,
                format_args!("{}", line.started.elapsed().as_millis()),
            );
        }
        Conversion::File => put(out, record.caller().map_or("?", |c| c.0).as_bytes()),
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
    put(out, record.message_bytes());
    for (name, value) in record.fields() {
        if out.len() > start {
            out.push(b' ');
        }
        put(out, name.as_bytes());
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
            out.resize(out.len() + fill, b' ');
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

    /// One layout formatting a run of lines, each changing one thing the head depends on
    /// (or nothing), prints what a fresh layout prints for each: a head kept from the line
    /// before when its level, millisecond, logger or thread changed would show here.
    #[test]
    fn the_head_of_a_line_follows_what_it_prints() {
        let patterns = [
            crate::config::DEFAULT_LOG_FORMAT,
            "%d{HH:mm:ss.SSS} [%t] %-5level %logger{1} - %msg%n",
            "%.3c|%10.12t|%p %X{requestId} %m%n",
            "[%thread] %m %d{yyyy}%n",
        ];
        let base =
            std::time::UNIX_EPOCH + std::time::Duration::from_nanos(1_392_044_642_619_000_000);
        let micros = |n: u64| base + std::time::Duration::from_micros(n);
        let changes: [&dyn Fn(&mut Record); 9] = [
            &|_| {},
            &|r| r.set_time(micros(300)),
            &|r| r.set_time(micros(1_000)),
            &|r| r.set_time(micros(1_001_000)),
            &|r| r.set_level(Level::WARN),
            &|r| r.set_target("realtime::quotes::book"),
            &|r| r.set_target("realtime::orders"),
            &|r| r.set_thread("worker-2"),
            &|r| r.set_time(micros(999)),
        ];
        for pattern in patterns {
            let mut layout = PatternLayout::new(pattern, &TimeZone::UTC).unwrap();
            let mut r = record();
            for change in changes {
                change(&mut r);
                let mut out = Vec::new();
                layout.format(&r, &mut out);
                assert_eq!(
                    String::from_utf8(out).unwrap(),
                    render(pattern, &r),
                    "{pattern}"
                );
            }
        }
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
