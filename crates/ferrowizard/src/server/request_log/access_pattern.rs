//! A request-log appender's `logFormat`: logback-access's pattern language, as DropWizard's
//! request log reads it, plus `%X{requestId}`, `%X{traceId}` and `%X{spanId}` for the ids the
//! observe stage gives a request.
//!
//! DropWizard's default line is
//! `%h %l %u [%t{dd/MMM/yyyy:HH:mm:ss Z}] "%r" %s %b "%i{Referer}" "%i{User-Agent}" %D`
//! (the request log's own format when `logFormat` is not given). `%b` writes `-` for an
//! empty body, as Jetty's NCSA line and Apache's `%b` do (logback-access writes `0`; `%B`
//! does here). An unknown conversion word
//! is an error with its position; each line ends with one line separator (a final `%n` is
//! that separator).

use ferrowizard_logging::layout::pattern::{
    ACCESS_WORDS, Pad, PatternError, Piece, parse, unknown_word,
};
use ferrowizard_logging::layout::time::DateFormat;
use ferrowizard_logging::record::{Text, unix_nanos};
use http::HeaderName;
use jiff::tz::TimeZone;

use crate::server::pipeline::stamp::Stamp;
use crate::server::request_log::access_json::Wanted;
use crate::server::request_log::entry::{Entry, version, write_ip};

/// Whether `pattern` is a request log's `logFormat`: the configuration's check.
pub(crate) fn check(pattern: &str) -> Result<(), PatternError> {
    AccessPattern::new(pattern, &TimeZone::UTC, &mut Wanted::default()).map(|_| ())
}

/// A compiled `logFormat`.
#[derive(Debug)]
pub(crate) struct AccessPattern {
    pieces: Vec<(Word, Pad)>,
}

/// What a conversion word writes.
#[derive(Debug)]
enum Word {
    Literal(String),
    /// `%a`, `%h`: the client's address.
    RemoteIp,
    /// `%l`: logback-access's `-` (no ident).
    Dash,
    /// `%u`: the authenticated user, `-` for none.
    User,
    /// `%t`: the time the request arrived, as the combined line shows it.
    Time,
    /// `%t{pattern[, zone]}`.
    TimeAs(Box<Stamp>),
    /// `%r`: `GET /path?query HTTP/1.1`.
    RequestLine,
    /// `%m`.
    Method,
    /// `%U`: the path.
    Path,
    /// `%q`: `?` and the query, or nothing.
    Query,
    /// `%H`.
    Protocol,
    /// `%s`.
    Status,
    /// `%b`: bytes sent, `-` for none.
    Bytes,
    /// `%B`: bytes sent, `0` for none.
    BytesZero,
    /// `%D`: milliseconds taken.
    Millis,
    /// `%T`: whole seconds taken (logback-access's).
    Seconds,
    /// `%i{name}`: a request header (`-` when absent).
    RequestHeader(HeaderName),
    /// `%o{name}`: a response header (`-` when absent).
    ResponseHeader(HeaderName),
    /// `%n` before the end of the pattern.
    Newline,
    /// `%X{requestId}`.
    RequestId,
    /// `%X{traceId}`.
    TraceId,
    /// `%X{spanId}`.
    SpanId,
}

impl AccessPattern {
    /// Compiles `pattern` (times in `zone` unless a `%t` names its own); what the lines need
    /// from requests and responses is added to `wanted`.
    pub(crate) fn new(
        pattern: &str,
        zone: &TimeZone,
        wanted: &mut Wanted,
    ) -> Result<AccessPattern, PatternError> {
        let mut pieces = Vec::new();
        let mut parsed = parse(pattern)?;
        // The line's own separator: the appender ends every line.
        if let Some(Piece::Conversion { word, .. }) = parsed.last()
            && word == "n"
        {
            parsed.pop();
        }
        for piece in parsed {
            let (word, option, pad, position) = match piece.into_conversion() {
                Ok(conversion) => conversion,
                Err(text) => {
                    pieces.push((Word::Literal(text), Pad::default()));
                    continue;
                }
            };
            let bad = |message: String| PatternError { message, position };
            let header = |option: Option<String>| {
                let name = option.ok_or_else(|| {
                    bad(format!(
                        "%{word} needs a header name: %{word}{{User-Agent}}"
                    ))
                })?;
                HeaderName::from_bytes(name.trim().as_bytes())
                    .map_err(|_| bad(format!("{name:?} is not a header name")))
            };
            let word = match word.as_str() {
                "a" | "remoteIP" | "h" | "clientHost" => Word::RemoteIp,
                "l" => Word::Dash,
                "u" | "user" => Word::User,
                "t" | "date" => match option {
                    None => Word::Time,
                    Some(option) => {
                        let (format, zone) = match option.split_once(',') {
                            Some((f, z)) => (
                                f.trim(),
                                ferrowizard_logging::layout::time::time_zone(z.trim())
                                    .map_err(bad)?,
                            ),
                            None => (option.trim(), zone.clone()),
                        };
                        Word::TimeAs(Box::new(Stamp::new(
                            DateFormat::new(format, zone).map_err(bad)?,
                        )))
                    }
                },
                "r" | "requestURL" => Word::RequestLine,
                "m" | "requestMethod" => Word::Method,
                "U" | "requestURI" => Word::Path,
                "q" | "queryString" => Word::Query,
                "H" | "protocol" => Word::Protocol,
                "s" | "statusCode" => Word::Status,
                "b" | "bytesSent" => Word::Bytes,
                "B" => Word::BytesZero,
                "D" | "elapsedTime" => Word::Millis,
                "T" | "elapsedSeconds" => Word::Seconds,
                "i" | "header" => {
                    let name = header(option)?;
                    if name != http::header::REFERER && name != http::header::USER_AGENT {
                        add(&mut wanted.request, name.clone());
                    }
                    Word::RequestHeader(name)
                }
                "o" | "responseHeader" => {
                    let name = header(option)?;
                    add(&mut wanted.response, name.clone());
                    Word::ResponseHeader(name)
                }
                "n" => Word::Newline,
                "X" | "mdc" => match option.as_deref().map(str::trim) {
                    Some("requestId") => {
                        wanted.request_id = true;
                        Word::RequestId
                    }
                    Some("traceId") => {
                        wanted.trace_ids = true;
                        Word::TraceId
                    }
                    Some("spanId") => {
                        wanted.trace_ids = true;
                        Word::SpanId
                    }
                    other => {
                        return Err(bad(format!(
                            "%X{{{}}}: a request's context has requestId (server.requestId), \
                             traceId and spanId (server.traceContext)",
                            other.unwrap_or("")
                        )));
                    }
                },
                other => return Err(unknown_word(other, position, ACCESS_WORDS.iter().copied())),
            };
            pieces.push((word, pad));
        }
        Ok(AccessPattern { pieces })
    }

    /// Writes the line of `e`, answered with `status` after `took_ms` ms and `bytes` sent;
    /// `stamp` writes `%t`.
    pub(crate) fn write(
        &self,
        out: &mut Text,
        e: &Entry,
        status: u16,
        bytes: u64,
        took_ms: u128,
        stamp: &dyn Fn(&mut Text),
    ) {
        let line = Line {
            e,
            status,
            bytes,
            took_ms,
            stamp,
        };
        for (word, pad) in &self.pieces {
            if pad.is_none() {
                line.write(word, out);
            } else {
                // Padding works on bytes already written: the word goes through a scratch
                // line first (padded words are rare in request logs).
                let mut scratch = Text::default();
                line.write(word, &mut scratch);
                let mut padded = scratch.as_str().as_bytes().to_vec();
                pad.apply(0, &mut padded);
                out.push_str(&String::from_utf8_lossy(&padded));
            }
        }
    }
}

fn add(list: &mut Vec<HeaderName>, name: HeaderName) {
    if !list.contains(&name) {
        list.push(name);
    }
}

/// One line's request and response.
struct Line<'a> {
    e: &'a Entry,
    status: u16,
    bytes: u64,
    took_ms: u128,
    stamp: &'a dyn Fn(&mut Text),
}

impl Line<'_> {
    fn write(&self, word: &Word, out: &mut Text) {
        write_word(word, out, self);
    }
}

fn write_word(word: &Word, out: &mut Text, line: &Line<'_>) {
    let Line {
        e,
        status,
        bytes,
        took_ms,
        stamp,
    } = *line;
    let number = |out: &mut Text, n: u64| out.push_str(itoa::Buffer::new().format(n));
    match word {
        Word::Literal(text) => out.push_str(text),
        Word::RemoteIp => match e.client() {
            Some(a) => write_ip(out, a.ip()),
            None => out.push('-'),
        },
        Word::Dash => out.push('-'),
        Word::User => out.push_str(e.user().unwrap_or("-")),
        Word::Time => stamp(out),
        Word::TimeAs(stamp) => stamp.with(unix_nanos(e.time()), |text| out.push_str(text)),
        Word::RequestLine => {
            out.push_str(e.method().as_str());
            out.push(' ');
            out.push_str(e.target());
            out.push(' ');
            out.push_str(version(e.version()));
        }
        Word::Method => out.push_str(e.method().as_str()),
        Word::Path => out.push_str(e.target().split('?').next().unwrap_or("")),
        Word::Query => {
            if let Some((_, query)) = e.target().split_once('?') {
                out.push('?');
                out.push_str(query);
            }
        }
        Word::Protocol => out.push_str(version(e.version())),
        Word::Status => number(out, u64::from(status)),
        Word::Bytes if bytes == 0 => out.push('-'),
        Word::Bytes | Word::BytesZero => number(out, bytes),
        Word::Millis => out.push_str(itoa::Buffer::new().format(took_ms)),
        Word::Seconds => out.push_str(itoa::Buffer::new().format(took_ms / 1000)),
        Word::RequestHeader(name) => {
            let value = if name == http::header::REFERER {
                e.referer()
            } else if name == http::header::USER_AGENT {
                e.user_agent()
            } else {
                e.request_headers()
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.as_str())
            };
            out.push_str(value.unwrap_or("-"));
        }
        Word::ResponseHeader(name) => out.push_str(
            e.response_headers()
                .iter()
                .find(|(n, _)| n == name)
                .map_or("-", |(_, v)| v.as_str()),
        ),
        Word::Newline => out.push('\n'),
        Word::RequestId => out.push_str(e.request_id().unwrap_or("-")),
        Word::TraceId => match e.trace_ids() {
            Some(ids) => ids.trace_id.with_hex(|id| out.push_str(id)),
            None => out.push('-'),
        },
        Word::SpanId => match e.trace_ids() {
            Some(ids) => ids.span_id.with_hex(|id| out.push_str(id)),
            None => out.push('-'),
        },
    }
}
