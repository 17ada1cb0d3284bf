//! The request log: one line per request, through the logging pipeline's appenders.
//!
//! Hand-written rather than tower-http's `TraceLayer`: the line must reach the appenders
//! without going through `tracing`'s per-event machinery and level filters (a request log is
//! not a level), and it is part of the server's hot path. The pipeline ([`crate::server::pipeline`]) takes an
//! [`Entry`] when a request arrives and hands it back with the response: a body of known
//! length (nearly every response) is logged at once with that length; a streamed one is
//! wrapped and logged when its last byte is sent (or the client goes away), with the bytes
//! actually sent. The line is formatted on the request thread straight into the appender's
//! queue slot (no allocation) and queued lossless by default: every completed request has its
//! line.

pub(crate) mod access_json;
pub(crate) mod access_pattern;
pub(crate) mod entry;

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant, SystemTime};

use bytes::Buf;
use ferrowizard_logging::appender::Appender;
use ferrowizard_logging::record::Text;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use jiff::tz::TimeZone;

use crate::config::server::RequestLogFactory;
use crate::server::request_log::access_json::{AccessJson, Wanted};
use crate::server::request_log::access_pattern::AccessPattern;
use entry::{Entry, Extra, RemoteUser, scheme, version, wall_clock, write_ip};

/// Line format.
#[derive(Debug)]
enum Format {
    /// DropWizard's default: NCSA combined plus elapsed milliseconds.
    Combined,
    /// One JSON object per line (`layout: {type: access-json}`).
    Json(Box<AccessJson>),
    /// The appender's `logFormat` (logback-access's pattern language).
    Pattern(Box<AccessPattern>),
}

/// The request log's appenders and settings, shared by every connection.
#[derive(Debug)]
pub struct RequestLog {
    appenders: Vec<Appender>,
    /// Each appender's line format and time zone, in the order of `appenders`.
    lines: Vec<(Format, Zone)>,
    excluded: Vec<String>,
    /// The headers access-json lines need kept (none for the default line).
    wanted: Wanted,
}

/// An appender's `timeZone`, with an id of its own that keys the timestamp cache (two
/// appenders in different zones must not share a formatted second).
#[derive(Debug)]
struct Zone {
    tz: TimeZone,
    id: u64,
}

impl Zone {
    fn new(tz: TimeZone) -> Zone {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Zone {
            tz,
            id: NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
        }
    }
}

impl RequestLog {
    /// Starts the appenders of a `requestLog` section; `None` when it has none, so that no
    /// layer (and no cost) is added.
    pub fn start(
        factory: &RequestLogFactory,
        app_name: &str,
    ) -> Result<Option<Arc<RequestLog>>, ferrowizard_logging::BuildError> {
        let mut appenders = Vec::new();
        let mut lines = Vec::new();
        let mut wanted = Wanted::default();
        for (i, f) in factory.appenders.iter().enumerate() {
            let mut f = f.clone();
            lossless_by_default(&mut f);
            let name = format!("server.requestLog.appenders[{i}]");
            let invalid = |message| ferrowizard_logging::BuildError::Invalid {
                appender: name.clone(),
                message,
            };
            let zone = ferrowizard_logging::layout::time::time_zone(&f.common().time_zone)
                .map_err(invalid)?;
            let format = match (&f.common().layout, &f.common().log_format) {
                (Some(_), Some(_)) => {
                    return Err(invalid(
                        "logFormat and layout both give the line's format: keep one".to_owned(),
                    ));
                }
                (Some(ferrowizard_logging::LayoutFactory::AccessJson(layout)), None) => {
                    Format::Json(Box::new(
                        AccessJson::new(layout, &zone, &mut wanted).map_err(invalid)?,
                    ))
                }
                (_, Some(pattern)) => Format::Pattern(Box::new(
                    AccessPattern::new(pattern, &zone, &mut wanted)
                        .map_err(|e| invalid(format!("logFormat {pattern:?}: {e}")))?,
                )),
                _ => Format::Combined,
            };
            if let Some(a) = ferrowizard_logging::start_raw_appender(&name, &f, app_name)? {
                appenders.push(a);
                lines.push((format, Zone::new(zone)));
            }
        }
        if appenders.is_empty() {
            return Ok(None);
        }
        Ok(Some(Arc::new(RequestLog {
            appenders,
            lines,
            excluded: factory.excluded_paths.clone(),
            wanted,
        })))
    }

    /// The appenders, for their counters and for flushing at shutdown.
    pub fn appenders(&self) -> &[Appender] {
        &self.appenders
    }

    fn excluded(&self, path: &str) -> bool {
        self.excluded.iter().any(|p| match p.strip_suffix('*') {
            Some(prefix) => path.starts_with(prefix),
            None => path == p,
        })
    }

    /// Keeps the request's ID and trace ids that `observation` found in `entry`, for the
    /// layouts that write them.
    pub(crate) fn keep_ids(
        &self,
        entry: &mut Entry,
        observation: &crate::server::pipeline::observe::Observation,
    ) {
        if let Some(extra) = entry.extra.as_mut() {
            if self.wanted.request_id {
                extra.request_id = observation.request_id().map(Box::from);
            }
            if self.wanted.trace_ids {
                extra.trace_ids = observation.trace_ids();
            }
        }
    }

    /// What the line will need from `req`, which arrived at `started` with the `referer` and
    /// `user_agent` headers given (the receive stage reads the headers once for all it needs); `None`
    /// for an excluded path.
    pub(crate) fn entry<B>(
        &self,
        req: &Request<B>,
        started: Instant,
        referer: Option<&http::HeaderValue>,
        user_agent: Option<&http::HeaderValue>,
    ) -> Option<Entry> {
        if self.excluded(req.uri().path()) {
            return None;
        }
        Some(Entry {
            started,
            time: wall_clock(started),
            client: req
                .extensions()
                .get::<axum::extract::ConnectInfo<SocketAddr>>()
                .map(|c| c.0),
            method: req.method().clone(),
            target: req.uri().path_and_query().cloned(),
            version: req.version(),
            referer: referer.cloned(),
            user_agent: user_agent.cloned(),
            user: None,
            stream: None,
            extra: (!self.wanted.is_empty()).then(|| {
                Box::new(Extra {
                    scheme: scheme(req.extensions()),
                    request_headers: Wanted::take(&self.wanted.request, req.headers()),
                    response_headers: Vec::new(),
                    request_id: None,
                    trace_ids: None,
                })
            }),
        })
    }

    /// Logs `entry` with `response`, which took `took`: now, if the body's length is known;
    /// else when the body has been sent (the body is wrapped to count it). The response is
    /// changed in place: it is not moved through here (a response is ~100 bytes).
    pub(crate) fn finish(
        self: &Arc<Self>,
        mut entry: Entry,
        took: Duration,
        response: &mut Response<axum::body::Body>,
    ) {
        let status = response.status().as_u16();
        entry.user = response.extensions().get::<RemoteUser>().cloned();
        if let Some(extra) = &mut entry.extra {
            extra.response_headers = Wanted::take(&self.wanted.response, response.headers());
        }
        if let Some(stream) = response.extensions().get::<crate::stream::Tallied>() {
            entry.stream = Some(stream.tally.clone());
            if stream.upgraded && status == 101 {
                // A WebSocket: its line is written when it ends, with how long it lasted.
                let log = self.clone();
                stream.tally.clone().when_ended(Box::new(move |tally| {
                    let took = entry.started.elapsed();
                    log.write(&entry, status, tally.bytes_out(), took);
                }));
                return;
            }
        }
        if let Some(length) = response.body().size_hint().exact() {
            self.write(&entry, status, length, took);
            return;
        }
        let body = std::mem::take(response.body_mut());
        *response.body_mut() = axum::body::Body::new(LoggedBody {
            body,
            pending: Some(Pending {
                entry,
                log: self.clone(),
                status,
                bytes: 0,
            }),
        });
    }

    fn write(&self, entry: &Entry, status: u16, bytes: u64, took: Duration) {
        let elapsed = took.as_millis();
        for (appender, (format, zone)) in self.appenders.iter().zip(&self.lines) {
            // Formatted into the record in its queue slot (once per appender: a request
            // log rarely has more than one).
            appender.write_line(&tracing::Level::INFO, entry.time, |line| match format {
                Format::Combined => combined(line, entry, status, bytes, elapsed, zone),
                Format::Json(layout) => layout.write(line, entry, status, bytes, elapsed),
                Format::Pattern(layout) => {
                    layout.write(line, entry, status, bytes, elapsed, &|out| {
                        write_stamp(out, entry.time, zone)
                    })
                }
            });
        }
    }
}

/// The request log waits rather than drops unless told otherwise (`discardingThreshold`
/// left at its default of -1 means 0 here).
fn lossless_by_default(f: &mut ferrowizard_logging::AppenderFactory) {
    let threshold = &mut f.common_mut().discarding_threshold;
    if *threshold < 0 {
        *threshold = 0;
    }
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// The timestamp of one second in one zone, formatted.
struct Stamp {
    /// The zone's [`Zone::id`].
    zone: u64,
    /// The second: `from` (inclusive) to `until`.
    from: SystemTime,
    until: SystemTime,
    text: String,
}

thread_local! {
    /// `dd/MMM/yyyy:HH:mm:ss Z` of the last second formatted on this thread: the timestamp
    /// changes once a second, not once a request; a request of the same second only compares
    /// its time with the second's bounds.
    static STAMP: std::cell::RefCell<Stamp> = const {
        std::cell::RefCell::new(Stamp {
            zone: 0,
            from: SystemTime::UNIX_EPOCH,
            until: SystemTime::UNIX_EPOCH,
            text: String::new(),
        })
    };
}

fn write_stamp(out: &mut Text, time: SystemTime, zone: &Zone) {
    use std::fmt::Write;
    STAMP.with(|cell| {
        let mut cache = cell.borrow_mut();
        let same = cache.zone == zone.id && time >= cache.from && time < cache.until;
        if !same {
            // Whole seconds since the epoch (before it: floored), without 128-bit arithmetic.
            let second = match time.duration_since(SystemTime::UNIX_EPOCH) {
                Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                Err(e) => {
                    let d = e.duration();
                    -i64::try_from(d.as_secs() + u64::from(d.subsec_nanos() > 0))
                        .unwrap_or(i64::MAX)
                }
            };
            let from = Duration::from_secs(second.unsigned_abs());
            cache.from = if second >= 0 {
                SystemTime::UNIX_EPOCH.checked_add(from)
            } else {
                SystemTime::UNIX_EPOCH.checked_sub(from)
            }
            .unwrap_or(SystemTime::UNIX_EPOCH);
            cache.until = cache
                .from
                .checked_add(Duration::from_secs(1))
                .unwrap_or(cache.from);
            cache.text.clear();
            cache.zone = zone.id;
            if let Ok(ts) = jiff::Timestamp::from_second(second) {
                let z = ts.to_zoned_datetime(zone.tz.clone());
                let offset = z.offset().seconds();
                let _ = write!(
                    cache.text,
                    "{:02}/{}/{}:{:02}:{:02}:{:02} {}{:02}{:02}",
                    z.day(),
                    MONTHS[z.month() as usize - 1],
                    z.year(),
                    z.hour(),
                    z.minute(),
                    z.second(),
                    if offset < 0 { '-' } else { '+' },
                    offset.abs() / 3600,
                    offset.abs() % 3600 / 60
                );
            }
        }
        out.push_str(&cache.text);
    });
}

/// `%h %l %u [%t] "%r" %s %b "%i{Referer}" "%i{User-Agent}" %D`.
fn combined(out: &mut Text, e: &Entry, status: u16, bytes: u64, elapsed: u128, zone: &Zone) {
    match e.client.map(|a| a.ip()) {
        Some(ip) => write_ip(out, ip),
        None => out.push('-'),
    }
    out.push_str(" - ");
    match &e.user {
        Some(user) => out.push_str(user.name()),
        None => out.push('-'),
    }
    out.push_str(" [");
    write_stamp(out, e.time, zone);
    out.push_str("] \"");
    out.push_str(e.method.as_str());
    out.push(' ');
    out.push_str(e.target());
    out.push(' ');
    out.push_str(version(e.version));
    out.push_str("\" ");
    out.push_str(itoa::Buffer::new().format(status));
    out.push(' ');
    if bytes == 0 {
        out.push('-');
    } else {
        out.push_str(itoa::Buffer::new().format(bytes));
    }
    for value in [&e.referer, &e.user_agent] {
        out.push_str(" \"");
        match value.as_ref().and_then(|v| v.to_str().ok()) {
            Some(v) if !v.contains('"') => out.push_str(v),
            Some(v) => out.extend(v.chars().map(|c| if c == '"' { '\'' } else { c })),
            None => out.push('-'),
        }
        out.push('"');
    }
    out.push(' ');
    out.push_str(itoa::Buffer::new().format(elapsed));
    // A stream's messages after the line's usual fields, where a parser of the combined
    // format takes no notice of them.
    if let Some((received, sent)) = e.messages() {
        out.push_str(" in=");
        out.push_str(itoa::Buffer::new().format(received));
        out.push_str(" out=");
        out.push_str(itoa::Buffer::new().format(sent));
    }
}

/// A streamed response's line, written when its body ends.
struct Pending {
    entry: Entry,
    log: Arc<RequestLog>,
    status: u16,
    bytes: u64,
}

/// A response body that counts its bytes and writes the request-log line when it ends, or
/// when it is dropped (a client that went away: the line shows what was sent).
pub(crate) struct LoggedBody<B> {
    body: B,
    pending: Option<Pending>,
}

impl<B> LoggedBody<B> {
    fn finish(&mut self) {
        if let Some(p) = self.pending.take() {
            let took = p.entry.started.elapsed();
            p.log.write(&p.entry, p.status, p.bytes, took);
        }
    }
}

impl<B> Drop for LoggedBody<B> {
    fn drop(&mut self) {
        self.finish();
    }
}

impl<B: Body<Data = bytes::Bytes> + Unpin> Body for LoggedBody<B> {
    type Data = bytes::Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        let poll = Pin::new(&mut this.body).poll_frame(cx);
        match &poll {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(p), Some(data)) = (this.pending.as_mut(), frame.data_ref()) {
                    p.bytes += data.remaining() as u64;
                }
                if this.body.is_end_stream() {
                    this.finish();
                }
            }
            Poll::Ready(None) | Poll::Ready(Some(Err(_))) => this.finish(),
            Poll::Pending => {}
        }
        poll
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamp(time: SystemTime) -> String {
        static UTC: std::sync::LazyLock<Zone> =
            std::sync::LazyLock::new(|| Zone::new(TimeZone::UTC));
        let mut out = Text::default();
        write_stamp(&mut out, time, &UTC);
        out.as_str().to_owned()
    }

    /// Every protocol version as a request line shows it (logback-access's `%H`).
    ///
    /// Catches: an arm deleted (HTTP/2 and HTTP/3 requests then log as `HTTP/1.1`).
    #[test]
    fn each_version_is_named_as_its_request_line_shows_it() {
        use http::Version;
        let shown = [
            Version::HTTP_09,
            Version::HTTP_10,
            Version::HTTP_11,
            Version::HTTP_2,
            Version::HTTP_3,
        ]
        .map(version);
        assert_eq!(
            shown,
            ["HTTP/0.9", "HTTP/1.0", "HTTP/1.1", "HTTP/2.0", "HTTP/3.0"]
        );
    }

    #[test]
    fn the_target_is_the_uri_as_a_line_shows_it() {
        let target = |uri: &str| {
            let uri: http::Uri = uri.parse().unwrap();
            let entry = Entry {
                started: Instant::now(),
                time: SystemTime::UNIX_EPOCH,
                client: None,
                method: http::Method::GET,
                target: uri.path_and_query().cloned(),
                version: http::Version::HTTP_11,
                referer: None,
                user_agent: None,
                user: None,
                extra: None,
                stream: None,
            };
            // The target as the whole URI gives it: the entry keeps only its path and query.
            let from_uri = uri
                .path_and_query()
                .map_or_else(|| uri.path(), |p| p.as_str());
            assert_eq!(entry.target(), from_uri);
            entry.target().to_owned()
        };
        assert_eq!(target("/quotes/ACME?x=1"), "/quotes/ACME?x=1");
        assert_eq!(target("http://example.com/a?b"), "/a?b");
        assert_eq!(target("example.com:443"), "");
        assert_eq!(target("*"), "*");
    }

    #[test]
    fn the_client_address_is_written_whichever_came_before() {
        let write = |ip: &str| {
            let mut out = Text::default();
            write_ip(&mut out, ip.parse().unwrap());
            out.as_str().to_owned()
        };
        for ip in [
            "10.0.0.1",
            "10.0.0.1",
            "192.168.1.20",
            "::1",
            "::1",
            "10.0.0.1",
        ] {
            assert_eq!(write(ip), ip);
        }
    }

    #[test]
    fn the_stamp_is_the_second_of_the_time_however_the_cache_stands() {
        let at = |secs: u64, nanos: u32| SystemTime::UNIX_EPOCH + Duration::new(secs, nanos);
        // 2026-11-30 11:06:40 UTC.
        let second = 1_796_036_800;
        assert_eq!(stamp(at(second, 0)), "30/Nov/2026:11:06:40 +0000");
        assert_eq!(stamp(at(second, 999_999_999)), "30/Nov/2026:11:06:40 +0000");
        assert_eq!(stamp(at(second + 1, 0)), "30/Nov/2026:11:06:41 +0000");
        // Back in time (another thread's anchor, a clock step): not the cached second.
        assert_eq!(stamp(at(second, 500)), "30/Nov/2026:11:06:40 +0000");
        // Before the epoch: floored.
        let before = SystemTime::UNIX_EPOCH - Duration::from_millis(500);
        assert_eq!(stamp(before), "31/Dec/1969:23:59:59 +0000");
        assert_eq!(stamp(SystemTime::UNIX_EPOCH), "01/Jan/1970:00:00:00 +0000");
    }

    /// The bytes an appender's writer thread wrote: the request log's lines.
    struct Capture(Arc<std::sync::Mutex<Vec<u8>>>);

    impl ferrowizard_logging::sink::Sink for Capture {
        fn write(&mut self, batch: &[u8], _: &[usize]) -> std::io::Result<()> {
            self.0.lock().unwrap().extend_from_slice(batch);
            Ok(())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
        fn describe(&self) -> String {
            "a test capture".into()
        }
    }

    /// 2026-03-14 15:09:26.535897 UTC: when the request arrived.
    fn arrived() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::new(1_773_500_966, 535_897_000)
    }

    /// A User-Agent with what a quoted field must not take as it is: `"`, `\` and a tab.
    const USER_AGENT: &str = "Mozilla/5.0 (X11; \"quoted\") back\\slash\ttab";

    /// A request as it reaches the pipeline: from 203.0.113.7:54321, a referer and a user agent
    /// with quotes in them.
    fn full_request() -> http::Request<()> {
        http::Request::builder()
            .method(http::Method::GET)
            .uri("/quotes/ACME?window=5m")
            .version(http::Version::HTTP_11)
            .header(
                http::header::REFERER,
                "https://example.com/search?q=\"acme\"",
            )
            .header(http::header::USER_AGENT, USER_AGENT)
            .extension(axum::extract::ConnectInfo(SocketAddr::from((
                [203, 0, 113, 7],
                54321,
            ))))
            .body(())
            .unwrap()
    }

    /// A request with nothing optional: no client address known, no referer, no user agent.
    fn bare_request() -> http::Request<()> {
        http::Request::builder()
            .method(http::Method::HEAD)
            .uri("/")
            .version(http::Version::HTTP_10)
            .body(())
            .unwrap()
    }

    static BODY: [u8; 5120] = [b'x'; 5120];

    /// The access-json line with DropWizard's defaults.
    fn json_default() -> Format {
        let layout = AccessJson::new(&Default::default(), &TimeZone::UTC, &mut Wanted::default());
        Format::Json(Box::new(layout.unwrap()))
    }

    /// Logs `request` the way the pipeline does (`entry` with the headers, then `finish` with
    /// the response, which calls `write`), in `format`, to an appender that captures what it
    /// writes; the entry's time (the one clock reading `entry` makes) is set to
    /// [`arrived`]. Returns everything the appender wrote.
    fn log_one(
        format: Format,
        request: &http::Request<()>,
        status: u16,
        body: &'static [u8],
        took: Duration,
    ) -> String {
        log_as(format, request, status, body, took, None)
    }

    /// [`log_one`], the response naming `user` as the authenticated user.
    fn log_as(
        format: Format,
        request: &http::Request<()>,
        status: u16,
        body: &'static [u8],
        took: Duration,
        user: Option<&str>,
    ) -> String {
        let written = Arc::new(std::sync::Mutex::new(Vec::new()));
        let appender = Appender::start(
            "request-log-golden",
            tracing::Level::INFO,
            false,
            ferrowizard_logging::appender::QueuePolicy::blocking(4),
            ferrowizard_logging::layout::Layout::Raw,
            Box::new(Capture(written.clone())),
        )
        .unwrap();
        let log = Arc::new(RequestLog {
            appenders: vec![appender],
            lines: vec![(format, Zone::new(TimeZone::UTC))],
            excluded: Vec::new(),
            wanted: Wanted::default(),
        });
        let headers = request.headers();
        let mut entry = log
            .entry(
                request,
                Instant::now(),
                headers.get(http::header::REFERER),
                headers.get(http::header::USER_AGENT),
            )
            .expect("no path is excluded");
        entry.time = arrived();
        let mut response = Response::builder()
            .status(status)
            .body(axum::body::Body::from(body))
            .unwrap();
        if let Some(user) = user {
            response.extensions_mut().insert(RemoteUser::new(user));
        }
        log.finish(entry, took, &mut response);
        assert!(
            log.appenders()[0].flush(Duration::from_secs(10)),
            "not flushed"
        );
        assert!(
            log.appenders()[0].stop(Duration::from_secs(10)),
            "not stopped"
        );
        let out = written.lock().unwrap().clone();
        String::from_utf8(out).unwrap()
    }

    /// The default line, DropWizard's `%h %l %u [%t] "%r" %s %b "%i{Referer}" "%i{User-Agent}"
    /// %D` (UTC), golden: the whole line, for a full request and a bare one.
    ///
    /// Mutations caught (each verified by hand):
    /// - `RequestLog::write`: `let elapsed = took.as_millis();` -> `took.as_micros()`: `%D`
    ///   is 1234567, not 1234 (1234.567 ms).
    /// - `combined`: `Some(v) => out.extend(v.chars().map(|c| if c == '"' { '\'' } else { c })),`
    ///   -> `Some(v) => out.push_str(v),`: the `"` in the referer and user agent end their
    ///   quoted fields early.
    /// - `write_stamp`: the format `"{:02}/{}/{}:{:02}:{:02}:{:02} {}{:02}{:02}"` ->
    ///   `"{:02}/{}/{} {:02}:{:02}:{:02} {}{:02}{:02}"`: `[%t]` is not
    ///   `[dd/MMM/yyyy:HH:mm:ss Z]`.
    ///
    /// Where this differs from logback-access (the golden pins ferrowizard as it is):
    /// logback-access writes header values verbatim (no `"` -> `'`), and `%b` of an empty
    /// body as `0` (not `-`); DropWizard's `%t` is the time the line is logged (the end of
    /// the request), ferrowizard's the request's arrival.
    #[test]
    fn the_combined_line_is_golden() {
        let took = Duration::from_micros(1_234_567);
        assert_eq!(
            log_one(Format::Combined, &full_request(), 200, &BODY, took),
            "203.0.113.7 - - [14/Mar/2026:15:09:26 +0000] \"GET /quotes/ACME?window=5m HTTP/1.1\" \
             200 5120 \"https://example.com/search?q='acme'\" \
             \"Mozilla/5.0 (X11; 'quoted') back\\slash\ttab\" 1234\n"
        );
        let took = Duration::from_micros(999);
        assert_eq!(
            log_one(Format::Combined, &bare_request(), 304, b"", took),
            "- - - [14/Mar/2026:15:09:26 +0000] \"HEAD / HTTP/1.0\" 304 - \"-\" \"-\" 0\n"
        );
    }

    /// Catches: the authenticated user the response names not written as `%u` (the combined
    /// line's third field, a pattern's `%u`) or as access-json's `remoteUser`.
    #[test]
    fn the_user_an_authentication_names_is_written() {
        let took = Duration::from_millis(1);
        let line = log_as(
            Format::Combined,
            &bare_request(),
            200,
            b"",
            took,
            Some("ada"),
        );
        assert!(line.starts_with("- - ada [14/Mar/2026"), "{line}");
        let line = log_as(json_default(), &bare_request(), 200, b"", took, Some("ada"));
        let value: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["remoteUser"], "ada", "{line}");
        let line = log_one(json_default(), &bare_request(), 200, b"", took);
        assert!(!line.contains("remoteUser"), "{line}");
        let zone = TimeZone::UTC;
        let pattern = AccessPattern::new("%l %u %user", &zone, &mut Wanted::default()).unwrap();
        let pattern = Format::Pattern(Box::new(pattern));
        let line = log_as(pattern, &bare_request(), 200, b"", took, Some("ada"));
        assert_eq!(line, "- ada ada\n");
    }

    /// The access-json line (`layout: {type: access-json}`, DropWizard's default `includes`),
    /// golden: the whole line, then every key and value of the parsed object.
    ///
    /// Mutations caught (each verified by hand):
    /// - `RequestLog::write`: `let elapsed = took.as_millis();` -> `took.as_micros()`:
    ///   `requestTime` is 1234567.
    /// - `json`: `unix_nanos(e.time).div_euclid(1_000_000)` -> `.div_euclid(1_000)`:
    ///   `timestamp` is in microseconds, not epoch milliseconds.
    /// - `json`: `.map(|a| a.ip().to_string())` -> `.map(|a| a.to_string())`:
    ///   `remoteAddress` carries the port (`203.0.113.7:54321`).
    /// - `Text::push_json_string` (ferrowizard-logging's `json_escape::escape`, whose own test
    ///   catches its mutants): the user agent's quotes, backslash and tab are escaped, or the
    ///   line is not JSON.
    ///
    /// Where this differs from DropWizard's `AccessJsonLayout` (pinned as it is): DropWizard
    /// writes `"userAgent":"-"` and `"remoteUser":"-"` when there are none (here the keys are
    /// left out), and puts `timestamp` at the time the line is logged (here the request's
    /// arrival).
    #[test]
    fn the_access_json_line_is_golden() {
        let took = Duration::from_micros(1_234_567);
        let line = log_one(json_default(), &full_request(), 200, &BODY, took);
        assert_eq!(
            line,
            r#"{"timestamp":1773500966535,"remoteAddress":"203.0.113.7","requestTime":1234,"uri":"/quotes/ACME","status":200,"method":"GET","protocol":"HTTP/1.1","contentLength":5120,"userAgent":"Mozilla/5.0 (X11; \"quoted\") back\\slash\ttab"}"#
                .to_owned()
                + "\n"
        );
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!({
                "timestamp": 1_773_500_966_535_u64,
                "remoteAddress": "203.0.113.7",
                "requestTime": 1234,
                "uri": "/quotes/ACME",
                "status": 200,
                "method": "GET",
                "protocol": "HTTP/1.1",
                "contentLength": 5120,
                "userAgent": USER_AGENT,
            })
        );

        let took = Duration::from_micros(999);
        let line = log_one(json_default(), &bare_request(), 304, b"", took);
        assert_eq!(
            line,
            r#"{"timestamp":1773500966535,"remoteAddress":"-","requestTime":0,"uri":"/","status":304,"method":"HEAD","protocol":"HTTP/1.0","contentLength":0}"#
                .to_owned()
                + "\n"
        );
        let parsed: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            parsed,
            serde_json::json!({
                "timestamp": 1_773_500_966_535_u64,
                "remoteAddress": "-",
                "requestTime": 0,
                "uri": "/",
                "status": 304,
                "method": "HEAD",
                "protocol": "HTTP/1.0",
                "contentLength": 0,
            })
        );
    }
}
