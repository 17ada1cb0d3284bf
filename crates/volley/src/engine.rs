//! Runs a simulation: schedules users, sends their requests, records every response.
//!
//! Response times are measured from when a request was due, not from when the generator
//! got round to sending it: an open-model user that starts late (the generator fell behind)
//! has that delay in its first response time. That is what keeps the percentiles honest when
//! the target is overloaded (coordinated omission).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use crate::checks::{check, needs_json};
use crate::feeder::Feeders;
use crate::scenario::CoordinatedOmission;
use crate::scenario::{Request, Scenario, Simulation, Step};
use crate::schedule::{Event, Plan};
use crate::session::{Session, save};
use crate::shard::Shard;
use crate::stats::Stats;
use crate::template::interpolate;
use crate::transport::{Sender, Transport};

/// Users of one scenario, for the console's progress bar.
#[derive(Debug, Default)]
pub struct Users {
    /// The scenario's name.
    pub name: String,
    /// Users planned in all (open model), or 0 when unknown ahead (closed model).
    pub planned: AtomicU64,
    /// Users started.
    pub started: AtomicU64,
    /// Users finished.
    pub done: AtomicU64,
}

/// The live state of a run, shared with the console.
pub struct Run {
    /// When it started.
    pub started: Instant,
    /// Measurements, in stripes: each thread records into its own, so the request path
    /// takes no lock another thread holds (the console merges them).
    stripes: Vec<Mutex<Stats>>,
    /// Per scenario.
    pub users: Vec<Arc<Users>>,
    /// The part of the plan this generator runs (`--shard`).
    shard: Shard,
    /// Each scenario's place in the whole run's count: the open-model arrivals and the
    /// closed-model slots of the scenarios before it (see [`Plan::shard_after`]).
    before: Vec<(u64, u64)>,
    /// How connections are opened, and shared under `http.shareConnections`.
    transport: Transport,
    /// The path of `baseUrl` (`/api`), which every request's path is appended to; empty for
    /// none.
    base_path: String,
    host: http::HeaderValue,
    default_headers: http::HeaderMap,
    keep_alive: bool,
    timeout: Duration,
    feeders: Feeders,
    /// The files requests send as bodies.
    files: crate::body::Files,
    /// `http:`, for the transports to other hosts than `baseUrl`'s (absolute URLs), made on
    /// their first request, by origin; and the scenario's folder, for their `tls.caFile`.
    http: crate::scenario::HttpSettings,
    base_dir: std::path::PathBuf,
    others: Mutex<std::collections::HashMap<String, Arc<crate::transport::Transport>>>,
    limiter: Option<Limiter>,
    /// `coordinatedOmission`: the closed model's correction.
    correction: CoordinatedOmission,
    /// Whether running out of file descriptors was said on the console already.
    said_out_of_files: std::sync::atomic::AtomicBool,
    /// Open-model users started and not finished, at most [`USERS_PER_CONNECTION`] per
    /// `http.maxConnections`: when the target (or the cap) holds users back, the plan's next
    /// ones wait to be started instead of each taking memory and a connection attempt. A user
    /// started late keeps the time it was due.
    running: Arc<tokio::sync::Semaphore>,
}

/// Open-model users that may be running (mostly waiting for a connection) per connection
/// `http.maxConnections` allows.
pub const USERS_PER_CONNECTION: usize = 8;

/// A user's connection, kept while the target keeps it open (none of its own under
/// `http.shareConnections`), and what the user's requests reuse.
#[derive(Default)]
pub struct Connection {
    live: Option<Sender>,
    /// A closed-model slot's: its users are always ready to send, so a throttled request of
    /// theirs is due at its slot, however late the slot's users got to it.
    closed: bool,
    /// A closed-model slot's intervals between sends, by request step (its address in the
    /// scenario, which outlives the slot: no name compared or copied per request): what the
    /// correction for coordinated omission expects (`coordinatedOmission`).
    cadence: Vec<(usize, Cadence)>,
    /// The user's own copies of what every request of theirs sends unchanged: cloning a
    /// header or a path bumps a reference count, and on copies of its own, a user's requests
    /// never bump one another thread bumps too. The `Host` header (HTTP/1.1).
    host: Option<http::HeaderValue>,
    /// The authority (HTTP/2).
    authority: Option<http::uri::Authority>,
    /// `http.headers`.
    headers: Option<http::HeaderMap>,
    /// The parsed path of each request step without `${...}`, by the step's address (the
    /// steps outlive the user).
    paths: Vec<(usize, http::uri::PathAndQuery)>,
    /// The user's WebSocket and event stream, between its `ws:` and `sse:` steps.
    streams: crate::stream::Open,
    /// The user's connections to hosts other than `baseUrl`'s (absolute URLs), by origin.
    elsewhere: Vec<(String, Option<Sender>)>,
}

/// The intervals between a slot's sends of one request.
#[derive(Default)]
struct Cadence {
    last: Option<Instant>,
    sum: Duration,
    count: u32,
    min: Option<Duration>,
}

impl Cadence {
    /// Notes a send at `sent`; the interval `mode` expects from now on (zero: none yet).
    fn sent(&mut self, sent: Instant, mode: CoordinatedOmission) -> Duration {
        if let Some(last) = self.last.replace(sent) {
            let interval = sent.saturating_duration_since(last);
            self.sum += interval;
            self.count = self.count.saturating_add(1);
            self.min = Some(self.min.map_or(interval, |m| m.min(interval)));
        }
        match mode {
            CoordinatedOmission::Off => Duration::ZERO,
            CoordinatedOmission::Average if self.count > 0 => self.sum / self.count,
            CoordinatedOmission::Minimum => self.min.unwrap_or_default(),
            CoordinatedOmission::Average => Duration::ZERO,
        }
    }
}

thread_local! {
    static STRIPE: usize = {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        NEXT.fetch_add(1, Relaxed) as usize
    };
}

impl Run {
    fn active(&self) -> u64 {
        self.users
            .iter()
            .map(|u| u.started.load(Relaxed) - u.done.load(Relaxed))
            .sum()
    }

    /// Records a response to `name`, due at `due` and sent at `sent`; returns its time, µs.
    fn record(&self, name: &str, due: Instant, sent: Instant, error: Option<String>) -> u64 {
        self.record_expecting(name, due, sent, error, Duration::ZERO)
    }

    /// Records an execution of a group the user left `started` after it entered it.
    fn record_group(&self, done: &crate::session::GroupDone, started: Instant) {
        let duration = started.elapsed().as_micros() as u64;
        let stripe = STRIPE.with(|s| *s) % self.stripes.len();
        if let Ok(mut stats) = self.stripes[stripe].lock() {
            stats.record_group(&done.path, done.cumulated, duration, !done.failed);
        }
    }

    /// [`record`](Self::record) for a closed-model request whose user was expected to send
    /// one every `interval` (zero: no correction).
    fn record_expecting(
        &self,
        name: &str,
        due: Instant,
        sent: Instant,
        error: Option<String>,
        interval: Duration,
    ) -> u64 {
        let now = Instant::now();
        let micros = now.saturating_duration_since(due).as_micros() as u64;
        let service = now.saturating_duration_since(sent).as_micros() as u64;
        let second = now.saturating_duration_since(self.started).as_secs();
        let stripe = STRIPE.with(|s| *s) % self.stripes.len();
        if let Ok(mut stats) = self.stripes[stripe].lock() {
            // Users active are read only when an entry of the series closes: they are
            // counters every thread writes.
            let active = if stats.closes_entry_at(second) {
                self.active()
            } else {
                0
            };
            stats.record_corrected(
                name,
                second,
                micros,
                service,
                error.as_deref(),
                active,
                interval.as_micros() as u64,
            );
        }
        micros
    }

    /// Everything recorded so far, merged.
    pub fn snapshot(&self) -> Stats {
        let mut all = Stats::default();
        let now = Instant::now()
            .saturating_duration_since(self.started)
            .as_secs();
        for stripe in &self.stripes {
            if let Ok(mut s) = stripe.lock() {
                s.roll_to(now, self.active());
                all.merge_from(&s);
            }
        }
        all
    }

    /// Sends one request due at `due` on `conn`; records it. Returns whether it was OK.
    async fn send(
        &self,
        conn: &mut Connection,
        session: &mut Session,
        r: &Request,
        due: Instant,
    ) -> bool {
        // Throttled: wait for this request's slot. A closed-model user was ready all along:
        // the slot is when its request was due, also when the users fell behind the slots
        // (a stall leaves a backlog of them, which must count from their own times, as
        // wrk2's intended send times do). An open-model user cannot be due before it came.
        let due = match &self.limiter {
            None => due,
            Some(l) => match l.next() {
                Some(offset) => {
                    let at = self.started + offset;
                    if at > Instant::now() {
                        tokio::time::sleep_until(at).await;
                    }
                    if conn.closed { at } else { due.max(at) }
                }
                None => {
                    std::future::pending::<()>().await;
                    due
                }
            },
        };
        let sent = Instant::now();
        // A closed-model user's request, unthrottled: timed from its send, corrected for what
        // its user would have sent while it waited.
        let expected = if conn.closed && self.limiter.is_none() {
            // A scenario has a handful of request steps: a short list, searched by address.
            let step = std::ptr::from_ref(r) as usize;
            let i = match conn.cadence.iter().position(|(s, _)| *s == step) {
                Some(i) => i,
                None => {
                    conn.cadence.push((step, Cadence::default()));
                    conn.cadence.len() - 1
                }
            };
            conn.cadence[i].1.sent(sent, self.correction)
        } else {
            Duration::ZERO
        };
        let result = match tokio::time::timeout(self.timeout, self.exchange(conn, session, r)).await
        {
            Ok(r) => r,
            Err(_) => {
                // The abandoned request's connection went with it (`checkout` took it).
                Err(format!(
                    "Request timeout after {} ms",
                    self.timeout.as_millis()
                ))
            }
        };
        let error = match result {
            Ok((status, headers, body)) => {
                // Parsed once for the JSON check and `save` both.
                let json = needs_json(r)
                    .then(|| serde_json::from_slice::<serde_json::Value>(&body).ok())
                    .flatten();
                check(r, status, &headers, &body, json.as_ref(), session).or_else(|| {
                    let response = crate::session::Response {
                        headers: &headers,
                        body: &body,
                        json: json.as_ref(),
                    };
                    save(r, &response, session).err()
                })
            }
            Err(e) => Some(e),
        };
        if error.is_some() {
            session.fail();
        }
        let ok = error.is_none();
        let name = session.named(&r.name);
        let micros = self.record_expecting(&name, due, sent, error, expected);
        session.responded(micros, ok);
        ok
    }

    /// What a `ws:` or `sse:` step needs of the target.
    fn stream_target(&self) -> crate::stream::Target<'_> {
        crate::stream::Target {
            transport: &self.transport,
            headers: &self.default_headers,
            base_path: &self.base_path,
            timeout: self.timeout,
        }
    }

    /// Records what a `ws:` or `sse:` step named `name` did: its connection's opening, and
    /// its time from when it began (a failure always; a success when the step is timed).
    fn record_stream(&self, name: &str, acted: crate::stream::Acted, session: &mut Session) {
        if let Some(opened) = acted.opened {
            let stripe = STRIPE.with(|s| *s) % self.stripes.len();
            if let Ok(mut stats) = self.stripes[stripe].lock() {
                stats.record_connection(opened.connect, opened.handshake);
            }
        }
        if acted.error.is_some() {
            session.fail();
        }
        if acted.timed || acted.error.is_some() {
            let ok = acted.error.is_none();
            let micros = self.record(
                &session.named(name),
                acted.started,
                acted.started,
                acted.error,
            );
            session.responded(micros, ok);
        }
    }

    /// Says once, on the console, that connections fail for want of file descriptors.
    fn out_of_files(&self) {
        if !self.said_out_of_files.swap(true, Relaxed) {
            let limit = nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
                .map_or_else(|_| "unknown".to_owned(), |(soft, _)| soft.to_string());
            eprintln!(
                "volley: out of file descriptors (open-files limit {limit}): connections fail with \
                 \"Too many open files\"; raise the limit (ulimit -n, or the hard limit) or lower \
                 http.maxConnections"
            );
        }
    }

    /// A connection for one request (see [`Transport::checkout`]); an opened one's connect
    /// and TLS handshake times are recorded.
    async fn checkout(&self, own: &mut Option<Sender>) -> Result<Sender, String> {
        self.checkout_on(&self.transport, own).await
    }

    /// [`checkout`](Self::checkout) on `transport` (another host's, for an absolute URL).
    async fn checkout_on(
        &self,
        transport: &crate::transport::Transport,
        own: &mut Option<Sender>,
    ) -> Result<Sender, String> {
        match transport.checkout(own).await {
            Ok(c) => {
                if let Some(opened) = c.opened {
                    let stripe = STRIPE.with(|s| *s) % self.stripes.len();
                    if let Ok(mut stats) = self.stripes[stripe].lock() {
                        stats.record_connection(opened.connect, opened.handshake);
                    }
                }
                Ok(c.sender)
            }
            Err(f) => {
                if f.out_of_files {
                    self.out_of_files();
                }
                Err(f.message)
            }
        }
    }

    /// A request to an absolute URL, beside `baseUrl`: on that host's own transport (made
    /// once, with `http:`'s settings) and the user's own connection to it.
    async fn exchange_elsewhere(
        &self,
        conn: &mut Connection,
        session: &mut Session,
        r: &Request,
    ) -> Result<(u16, http::HeaderMap, Bytes), String> {
        let target = interpolate(&r.path, session)?;
        let url = url::Url::parse(&target).map_err(|e| format!("invalid URL {target:?}: {e}"))?;
        let uri: http::Uri = target
            .parse()
            .map_err(|e| format!("invalid URL {target:?}: {e}"))?;
        let origin = url.origin().ascii_serialization();
        let transport = self.elsewhere(&origin, &uri)?;
        let (body, content_type) = self.files.body(r, session)?;
        let mut request = http::Request::new(Full::new(body));
        *request.method_mut() = http::Method::from_bytes(r.method.as_bytes())
            .map_err(|e| format!("invalid method: {e}"))?;
        let headers = request.headers_mut();
        headers.extend(
            self.default_headers
                .iter()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        request_headers(headers, r, session, content_type)?;
        if let Some(value) = session.cookie_header(&url) {
            headers_with_cookie(request.headers_mut(), value);
        }
        let slot = match conn.elsewhere.iter().position(|(o, _)| *o == origin) {
            Some(i) => i,
            None => {
                conn.elsewhere.push((origin.clone(), None));
                conn.elsewhere.len() - 1
            }
        };
        let own = &mut conn.elsewhere[slot].1;
        let mut sender = self.checkout_on(&transport, own).await?;
        if sender.ready().await.is_err() {
            sender = self.checkout_on(&transport, &mut None).await?;
        }
        let path = uri
            .path_and_query()
            .cloned()
            .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/"));
        if sender.is_http2() {
            *request.uri_mut() = uri.clone();
        } else {
            let host = http::HeaderValue::from_str(transport.authority().as_str())
                .map_err(|e| format!("invalid host: {e}"))?;
            request.headers_mut().insert(http::header::HOST, host);
            *request.uri_mut() = path.into();
        }
        let (parts, body) = sender
            .exchange(request)
            .await
            .map_err(|e| classify_hyper(&e, transport.read_buffer()))?;
        if self.keep_alive {
            transport.checkin(&mut conn.elsewhere[slot].1, sender);
        }
        session.store_cookies(&parts.headers, &url);
        Ok((parts.status.as_u16(), parts.headers, body))
    }

    /// The transport to `origin` (of `uri`), made on its first request.
    fn elsewhere(
        &self,
        origin: &str,
        uri: &http::Uri,
    ) -> Result<Arc<crate::transport::Transport>, String> {
        let mut others = self
            .others
            .lock()
            .map_err(|_| "the transports' lock is poisoned".to_owned())?;
        if let Some(t) = others.get(origin) {
            return Ok(t.clone());
        }
        let t = Arc::new(crate::transport::Transport::new(
            uri,
            &self.http,
            &self.base_dir,
        )?);
        others.insert(origin.to_owned(), t.clone());
        Ok(t)
    }

    /// Request `r`'s path after `baseUrl`'s, `${...}` filled in from the session; a path
    /// without any is parsed once per connection.
    fn path(
        &self,
        conn: &mut Connection,
        session: &Session,
        r: &Request,
    ) -> Result<http::uri::PathAndQuery, String> {
        let step = std::ptr::from_ref(r) as usize;
        if let Some((_, p)) = conn.paths.iter().find(|(s, _)| *s == step) {
            return Ok(p.clone());
        }
        let path = interpolate(&r.path, session)?;
        let fixed = matches!(path, std::borrow::Cow::Borrowed(_));
        let path = if self.base_path.is_empty() {
            path
        } else {
            std::borrow::Cow::Owned(format!("{}{path}", self.base_path))
        };
        let path: http::uri::PathAndQuery = http::uri::PathAndQuery::from_maybe_shared(
            bytes::Bytes::copy_from_slice(path.as_bytes()),
        )
        .map_err(|e| format!("invalid path {path:?}: {e}"))?;
        if fixed {
            conn.paths.push((step, path.clone()));
        }
        Ok(path)
    }

    async fn exchange(
        &self,
        conn: &mut Connection,
        session: &mut Session,
        r: &Request,
    ) -> Result<(u16, http::HeaderMap, Bytes), String> {
        if r.path.starts_with("http://") || r.path.starts_with("https://") {
            return self.exchange_elsewhere(conn, session, r).await;
        }
        // The request first: one that cannot be built (an unknown `${var}`) is KO without
        // costing a connection.
        let (body, content_type) = self.files.body(r, session)?;
        let mut request = http::Request::new(Full::new(body));
        *request.method_mut() = http::Method::from_bytes(r.method.as_bytes())
            .map_err(|e| format!("invalid method: {e}"))?;
        let path = self.path(conn, session, r)?;
        let defaults = conn.headers.get_or_insert_with(|| {
            self.default_headers
                .iter()
                .map(|(k, v)| {
                    let name = http::HeaderName::from_bytes(k.as_str().as_bytes())
                        .unwrap_or_else(|_| k.clone());
                    (name, copy_header_value(v))
                })
                .collect()
        });
        let headers = request.headers_mut();
        headers.extend(defaults.iter().map(|(k, v)| (k.clone(), v.clone())));
        request_headers(headers, r, session, content_type)?;
        // The cookie jar's URL: only for a user that holds cookies (or, below, receives some).
        let cookie_url = if session.has_cookies() {
            self.cookie_url(&path)
        } else {
            None
        };
        if let Some(value) = cookie_url
            .as_ref()
            .and_then(|url| session.cookie_header(url))
        {
            headers_with_cookie(request.headers_mut(), value);
        }
        let mut sender = self.checkout(&mut conn.live).await?;
        if sender.ready().await.is_err() {
            sender = self.checkout(&mut None).await?;
        }
        if sender.is_http2() {
            // HTTP/2 carries the scheme and authority as pseudo-headers, from the URI.
            let authority = conn
                .authority
                .get_or_insert_with(|| copy_authority(self.transport.authority()));
            *request.uri_mut() = http::Uri::from_parts({
                let mut parts = http::uri::Parts::default();
                parts.scheme = Some(self.transport.scheme().clone());
                parts.authority = Some(authority.clone());
                parts.path_and_query = Some(path);
                parts
            })
            .map_err(|e| format!("invalid URI: {e}"))?;
        } else {
            let host = conn
                .host
                .get_or_insert_with(|| copy_header_value(&self.host));
            request
                .headers_mut()
                .insert(http::header::HOST, host.clone());
            *request.uri_mut() = path.into();
        }
        let read_buffer = self.transport.read_buffer();
        let (parts, body) = sender
            .exchange(request)
            .await
            // A body cut short is the same KO as a head cut short, in Gatling's words.
            .map_err(|e| classify_hyper(&e, read_buffer))?;
        if self.keep_alive {
            self.transport.checkin(&mut conn.live, sender);
        }
        if parts.headers.contains_key(http::header::SET_COOKIE) {
            // A user's first cookie: its URL again (the path was handed to the request).
            let url = match cookie_url {
                Some(url) => Some(url),
                None => self
                    .path(conn, session, r)
                    .ok()
                    .and_then(|p| self.cookie_url(&p)),
            };
            if let Some(url) = url {
                session.store_cookies(&parts.headers, &url);
            }
        }
        Ok((parts.status.as_u16(), parts.headers, body))
    }

    /// The URL a request to `path` goes to, as the cookie jar matches it (scheme for
    /// `Secure`, host for the domain, path).
    fn cookie_url(&self, path: &http::uri::PathAndQuery) -> Option<url::Url> {
        url::Url::parse(&format!(
            "{}://{}{}",
            self.transport.scheme(),
            self.transport.authority(),
            path
        ))
        .ok()
    }
}

/// The headers of `r` (`${...}` filled in) over `http.headers`, and its body's type: a
/// form's unless the request gives its own, a multipart body's always (its boundary is in
/// it).
fn request_headers(
    headers: &mut http::HeaderMap,
    r: &Request,
    session: &Session,
    content_type: Option<http::HeaderValue>,
) -> Result<(), String> {
    for (k, v) in &r.headers {
        let name =
            http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header {k:?}: {e}"))?;
        let value = http::HeaderValue::from_str(&interpolate(v, session)?)
            .map_err(|e| format!("header {k:?}: {e}"))?;
        headers.insert(name, value);
    }
    if let Some(value) = content_type
        && (!r.multipart.is_empty() || !headers.contains_key(http::header::CONTENT_TYPE))
    {
        headers.insert(http::header::CONTENT_TYPE, value);
    }
    Ok(())
}

/// Adds the jar's cookies to a request, after any `Cookie` header the scenario set.
fn headers_with_cookie(headers: &mut http::HeaderMap, jar: http::HeaderValue) {
    let joined = headers.get(http::header::COOKIE).and_then(|own| {
        let mut both = own.as_bytes().to_vec();
        both.extend_from_slice(b"; ");
        both.extend_from_slice(jar.as_bytes());
        http::HeaderValue::from_bytes(&both).ok()
    });
    headers.insert(http::header::COOKIE, joined.unwrap_or(jar));
}

/// A copy of `v` that shares nothing with it.
fn copy_header_value(v: &http::HeaderValue) -> http::HeaderValue {
    http::HeaderValue::from_bytes(v.as_bytes()).unwrap_or_else(|_| v.clone())
}

/// A copy of `a` that shares nothing with it.
fn copy_authority(a: &http::uri::Authority) -> http::uri::Authority {
    http::uri::Authority::from_maybe_shared(Bytes::copy_from_slice(a.as_str().as_bytes()))
        .unwrap_or_else(|_| a.clone())
}

fn classify_hyper(e: &hyper::Error, read_buffer: usize) -> String {
    let text = format!("{e:?}").to_ascii_lowercase();
    if e.is_parse_too_large() {
        format!(
            "Response head larger than http.readBuffer ({})",
            ferrowizard_config::Size::bytes(read_buffer as u64)
        )
    } else if text.contains("connectionreset") || text.contains("reset by peer") {
        "Connection reset by peer".into()
    } else if e.is_incomplete_message() || e.is_closed() || text.contains("incompletebody") {
        "Connection closed before the response was complete".into()
    } else {
        format!("Request failed: {e}")
    }
}

/// The throttle: the k-th request of the run may start `offset(k)` after the run starts, so
/// the rate follows the `throttle` steps whatever the users would do.
///
/// A shard's limiter ([`Limiter::shard`]) issues the whole run's requests whose index is
/// ≡ i (mod N): its k-th request is the whole run's (k·N + i)-th, so each shard sends at the
/// N-th of the rate and the N shards together at the whole rate, their slots interleaved.
pub struct Limiter {
    /// (start s, length s, start rate, end rate, requests before it).
    segments: Vec<(f64, f64, f64, f64, f64)>,
    issued: AtomicU64,
    shard: Shard,
}

impl Limiter {
    /// The limiter for `steps` (invalid steps were refused when the file was loaded).
    pub fn new(steps: &[crate::scenario::ThrottleStep]) -> Option<Limiter> {
        use crate::scenario::Throttle;
        if steps.is_empty() {
            return None;
        }
        let (mut t, mut rate, mut n) = (0.0f64, 0.0f64, 0.0f64);
        let mut segments = Vec::new();
        for step in steps.iter().filter_map(|s| s.step().ok()) {
            match step {
                Throttle::Reach(r, d) => {
                    let d = d.as_secs_f64();
                    segments.push((t, d, rate, r, n));
                    n += (rate + r) / 2.0 * d;
                    t += d;
                    rate = r;
                }
                Throttle::Jump(r) => rate = r,
                Throttle::Hold(d) => {
                    let d = d.as_secs_f64();
                    segments.push((t, d, rate, rate, n));
                    n += rate * d;
                    t += d;
                }
            }
        }
        segments.push((t, f64::INFINITY, rate, rate, n));
        Some(Limiter {
            segments,
            issued: AtomicU64::new(0),
            shard: Shard::WHOLE,
        })
    }

    /// This limiter for `shard`'s part of the run's requests only.
    pub fn shard(self, shard: Shard) -> Limiter {
        Limiter { shard, ..self }
    }

    /// When the next request may start, from the run's start; `None` when the rate has
    /// dropped to zero for good.
    pub fn next(&self) -> Option<Duration> {
        let k = self.shard.whole_index(self.issued.fetch_add(1, Relaxed)) as f64;
        // The last segment that begins at or before the k-th request. Segments that plan no
        // request begin with the one after them, which is therefore found instead; so a
        // segment found with no rate is the last, and the rate is zero for good.
        let &(start, length, r0, r1, n0) = self.segments.iter().rev().find(|s| s.4 <= k)?;
        if r0 <= 0.0 && r1 <= 0.0 {
            return None;
        }
        let within = k - n0;
        let a = if length.is_finite() {
            (r1 - r0) / (2.0 * length)
        } else {
            0.0
        };
        let t = if a.abs() < 1e-12 {
            if r0 <= 0.0 {
                return None;
            }
            within / r0
        } else {
            (-r0 + (r0 * r0 + 4.0 * a * within).max(0.0).sqrt()) / (2.0 * a)
        };
        Some(Duration::from_secs_f64((start + t.min(length)).max(0.0)))
    }
}

/// How a user's steps ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Flow {
    /// All ran: on with the next.
    Next,
    /// The user stops (its feeder ran dry, or `exitHereIfFailed`).
    Exit,
    /// A request was KO inside a block that stops at the first (`tryMax`,
    /// `exitBlockOnFail`): the steps up to that block are left.
    Failed,
}

/// Runs a user's steps; `due` is when its first request was due.
async fn run_steps(
    run: &Run,
    conn: &mut Connection,
    session: &mut Session,
    steps: &[Step],
    due: &mut Option<Instant>,
) -> Flow {
    {
        for step in steps {
            if let Some(r) = &step.request {
                let when = due.take().unwrap_or_else(Instant::now);
                // Boxed for the length of the request: a user paused between requests (most
                // of 10,000 users, most of the time) then holds a pointer, not the request's
                // state, whose size is what every user would otherwise reserve.
                Box::pin(run.send(conn, session, r, when)).await;
            } else if let Some(ws) = &step.ws {
                due.take();
                let target = run.stream_target();
                let acted = Box::pin(crate::stream::ws::act(
                    &target,
                    &mut conn.streams.ws,
                    session,
                    ws,
                ))
                .await;
                run.record_stream(&ws.name, acted, session);
            } else if let Some(sse) = &step.sse {
                due.take();
                let target = run.stream_target();
                let acted = Box::pin(crate::stream::sse::act(
                    &target,
                    &mut conn.streams.sse,
                    session,
                    sse,
                ))
                .await;
                run.record_stream(&sse.name, acted, session);
            } else if let Some(p) = step.pause {
                tokio::time::sleep(p.length(fastrand::f64)).await;
            } else if let Some(rep) = &step.repeat {
                for _ in 0..rep.times {
                    match repeated(run, conn, session, &rep.steps, due).await {
                        Flow::Next => {}
                        other => return other,
                    }
                }
            } else if let Some(feed) = &step.feed {
                match run.feeders.get(feed).and_then(|f| f.next()) {
                    Some(record) => session.extend(record.iter().cloned()),
                    None => {
                        let now = Instant::now();
                        run.record(
                            &format!("feed {}", feed.file),
                            now,
                            now,
                            Some(format!("feeder {} is empty", feed.file)),
                        );
                        return Flow::Exit;
                    }
                }
            } else if let Some(w) = &step.when {
                let branch = if holds(session, &w.variable, w.equals.as_deref()) {
                    &w.then
                } else {
                    &w.otherwise
                };
                if !branch.is_empty() {
                    match repeated(run, conn, session, branch, due).await {
                        Flow::Next => {}
                        other => return other,
                    }
                }
            } else if let Some(branches) = &step.random_switch {
                if let Some(b) = pick(branches, fastrand::f64() * 100.0) {
                    match repeated(run, conn, session, &b.steps, due).await {
                        Flow::Next => {}
                        other => return other,
                    }
                }
            } else if let Some(d) = &step.during {
                // A duration past what a clock holds is as good as forever (the run's
                // maxDuration ends it).
                let end = Instant::now().checked_add(d.duration.get());
                while end.is_none_or(|end| Instant::now() < end) {
                    match repeated(run, conn, session, &d.steps, due).await {
                        Flow::Next => {}
                        other => return other,
                    }
                    // A pass that never waits (a request KO before it is sent) must not hold
                    // its thread for the whole duration: it yields once its task's budget is
                    // spent, which a pass that waits renews.
                    tokio::task::consume_budget().await;
                }
            } else if let Some(g) = &step.group {
                session.enter(&g.name);
                let started = Instant::now();
                let flow = repeated(run, conn, session, &g.steps, due).await;
                // Recorded however it ended: a user that exits in a group has run it.
                if let Some(done) = session.leave() {
                    run.record_group(&done, started);
                }
                if flow != Flow::Next {
                    return flow;
                }
            } else if let Some(t) = &step.try_max {
                let mut before = None;
                for _ in 0..t.times {
                    let at_start = session.begin_block();
                    let first = *before.get_or_insert(at_start);
                    let flow = repeated(run, conn, session, &t.steps, due).await;
                    session.end_block();
                    match flow {
                        // This try got through: the tries before it are forgiven.
                        Flow::Next => {
                            session.forgive(first);
                            break;
                        }
                        Flow::Exit => return Flow::Exit,
                        // The last try failed too: the user goes on, failed.
                        Flow::Failed => {}
                    }
                }
            } else if let Some(b) = &step.exit_block_on_fail {
                session.begin_block();
                let flow = repeated(run, conn, session, &b.steps, due).await;
                session.end_block();
                if flow == Flow::Exit {
                    return Flow::Exit;
                }
            } else if let Some(a) = &step.as_long_as {
                let mut pass = 0u64;
                while holds(session, &a.variable, a.equals.as_deref()) {
                    if let Some(c) = &a.counter {
                        session.set(c.clone(), pass.to_string());
                    }
                    match repeated(run, conn, session, &a.steps, due).await {
                        Flow::Next => {}
                        other => return other,
                    }
                    pass += 1;
                    // A pass that never waits must not hold its thread.
                    tokio::task::consume_budget().await;
                }
            } else if let Some(f) = &step.foreach {
                let items = match session.get(&f.items).map(serde_json::from_str) {
                    Some(Ok(serde_json::Value::Array(items))) => items,
                    _ => {
                        let now = Instant::now();
                        run.record(
                            &session.named(&format!("foreach {}", f.items)),
                            now,
                            now,
                            Some(format!("foreach: ${{{}}} holds no JSON array", f.items)),
                        );
                        session.fail();
                        Vec::new()
                    }
                };
                for (i, item) in items.iter().enumerate() {
                    session.set(
                        f.item.clone(),
                        crate::session::value_text(item).into_owned(),
                    );
                    if let Some(c) = &f.counter {
                        session.set(c.clone(), i.to_string());
                    }
                    match repeated(run, conn, session, &f.steps, due).await {
                        Flow::Next => {}
                        other => return other,
                    }
                }
            } else if step.exit_here_if_failed == Some(true) && session.failed() {
                return Flow::Exit;
            }
            if session.block_failed() {
                return Flow::Failed;
            }
        }
        Flow::Next
    }
}

/// Whether the session variable `variable` exists, or has the value `equals` (`${...}`
/// filled in) when one is given: `if` and `asLongAs`.
fn holds(session: &Session, variable: &str, equals: Option<&str>) -> bool {
    match (session.get(variable), equals) {
        (None, _) => false,
        (Some(_), None) => true,
        (Some(value), Some(expected)) => interpolate(expected, session).is_ok_and(|e| e == value),
    }
}

/// The branch whose share of [0, 100) holds `draw`, the branches' weights laid end to end;
/// `None` past their sum (the rest falls through).
fn pick(branches: &[crate::scenario::Branch], draw: f64) -> Option<&crate::scenario::Branch> {
    let mut upto = 0.0;
    branches.iter().find(|b| {
        upto += b.weight;
        draw < upto
    })
}

/// [`run_steps`] inside a `repeat`, boxed: a recursive future must be, and only a scenario
/// that repeats pays an allocation for it.
fn repeated<'a>(
    run: &'a Run,
    conn: &'a mut Connection,
    session: &'a mut Session,
    steps: &'a [Step],
    due: &'a mut Option<Instant>,
) -> std::pin::Pin<Box<dyn Future<Output = Flow> + Send + 'a>> {
    Box::pin(run_steps(run, conn, session, steps, due))
}

/// One virtual user, on `conn` (its own connection; a closed-model slot hands its
/// connection from one user to the next, as a browser's would be reused).
async fn user(
    run: Arc<Run>,
    scenario: Arc<Scenario>,
    users: Arc<Users>,
    due: Instant,
    conn: &mut Connection,
) {
    if due > Instant::now() {
        tokio::time::sleep_until(due).await;
    }
    users.started.fetch_add(1, Relaxed);
    let mut first_due = Some(due);
    let mut session = Session::default();
    run_steps(&run, conn, &mut session, &scenario.steps, &mut first_due).await;
    // Its sockets end with the user (a closed-model slot's next user starts without them).
    conn.streams = crate::stream::Open::default();
    users.done.fetch_add(1, Relaxed);
}

async fn open_user(
    run: Arc<Run>,
    scenario: Arc<Scenario>,
    users: Arc<Users>,
    due: Instant,
    _running: OwnedSemaphorePermit,
) {
    let mut conn = Connection::default();
    user(run, scenario, users, due, &mut conn).await;
}

/// A closed-model slot: a user after another on one connection, each started when the last
/// has finished, until `end` (the last runs to completion).
async fn slot(run: Arc<Run>, scenario: Arc<Scenario>, users: Arc<Users>, end: Instant) {
    let mut conn = Connection {
        closed: true,
        ..Connection::default()
    };
    while Instant::now() < end {
        users.planned.fetch_add(1, Relaxed);
        let now = Instant::now();
        user(run.clone(), scenario.clone(), users.clone(), now, &mut conn).await;
    }
}

/// Runs one scenario's injection: sleeps to each event of its [`Plan`] and starts it, so
/// that only users already due exist (memory follows the users running, not the users
/// planned). A user keeps the time it was due however late it is started, which is what
/// the response times count from.
/// `before` is the arrivals and slots of the scenarios before it (see
/// [`Plan::shard_after`]).
async fn inject(
    run: Arc<Run>,
    scenario: Arc<Scenario>,
    users: Arc<Users>,
    deadline: Instant,
    before: (u64, u64),
) {
    let mut tasks = tokio::task::JoinSet::new();
    let origin = Instant::now();
    let shard = run.shard;
    users.planned.fetch_add(
        shard.share_from(before.0, crate::schedule::open_users(&scenario.injection)),
        Relaxed,
    );
    for event in Plan::new(&scenario.injection).shard_after(shard, before.0, before.1) {
        let Some(at) = origin.checked_add(event.at()).filter(|at| *at < deadline) else {
            break;
        };
        if at > Instant::now() {
            tokio::time::sleep_until(at).await;
        }
        let (run, s, u) = (run.clone(), scenario.clone(), users.clone());
        match event {
            Event::Arrival(_) => {
                let Ok(running) = run.running.clone().acquire_owned().await else {
                    break;
                };
                let user = open_user(run, s, u, at, running);
                tasks.spawn(user)
            }
            Event::Slot { end, .. } => {
                let end = origin
                    .checked_add(end)
                    .map_or(deadline, |e| e.min(deadline));
                let slot = slot(run, s, u, end);
                tasks.spawn(slot)
            }
        };
        // Reap the users that have finished, so the set holds only those still running.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
}

/// Builds the shared state for `simulation`, the whole of it.
pub fn prepare(simulation: &Simulation, base_dir: &std::path::Path) -> Result<Arc<Run>, String> {
    prepare_shard(simulation, base_dir, Shard::WHOLE)
}

/// Builds the shared state for `shard`'s part of `simulation` (`--shard`): its users, its
/// feeders' records, its share of the throttle (see [`crate::shard`]).
pub fn prepare_shard(
    simulation: &Simulation,
    base_dir: &std::path::Path,
    shard: Shard,
) -> Result<Arc<Run>, String> {
    let before = counted_before(simulation);
    let feeders = Feeders::load(
        simulation.scenarios.iter().zip(&before).map(|(s, before)| {
            // A scenario's users continue the count of the users before it (`before`), and
            // its feeders' records follow them, so that one record a user is exactly the
            // unsharded run's on every shard.
            let offset = if crate::schedule::open_users(&s.injection) > 0 {
                before.0
            } else {
                before.1
            };
            (s.steps.as_slice(), offset)
        }),
        base_dir,
        shard,
    )?;
    let files = crate::body::Files::load(
        simulation.scenarios.iter().map(|s| s.steps.as_slice()),
        base_dir,
    )?;
    let uri: http::Uri = simulation
        .base_url
        .parse()
        .map_err(|e| format!("baseUrl {:?}: {e}", simulation.base_url))?;
    let authority = uri
        .authority()
        .ok_or_else(|| format!("baseUrl {:?} has no host", simulation.base_url))?
        .clone();
    let transport = crate::transport::Transport::new(&uri, &simulation.http, base_dir)?;
    let mut default_headers = http::HeaderMap::new();
    for (k, v) in &simulation.http.headers {
        let name =
            http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header {k:?}: {e}"))?;
        let value = http::HeaderValue::from_str(v).map_err(|e| format!("header {k:?}: {e}"))?;
        default_headers.insert(name, value);
    }
    if !simulation.http.keep_alive {
        default_headers.insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        );
    }
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get()) * 4;
    let series_interval = crate::stats::series_interval(simulation.max_duration.get());
    Ok(Arc::new(Run {
        started: Instant::now(),
        stripes: (0..threads)
            .map(|_| Mutex::new(Stats::new(series_interval)))
            .collect(),
        users: simulation
            .scenarios
            .iter()
            .map(|s| {
                Arc::new(Users {
                    name: s.name.clone(),
                    ..Default::default()
                })
            })
            .collect(),
        shard,
        before,
        transport,
        base_path: uri.path().trim_end_matches('/').to_owned(),
        host: http::HeaderValue::from_str(authority.as_str())
            .map_err(|e| format!("baseUrl host: {e}"))?,
        default_headers,
        keep_alive: simulation.http.keep_alive,
        timeout: simulation.http.request_timeout.get(),
        feeders,
        files,
        http: simulation.http.clone(),
        base_dir: base_dir.to_path_buf(),
        others: Mutex::default(),
        limiter: Limiter::new(&simulation.throttle).map(|l| l.shard(shard)),
        correction: simulation.coordinated_omission,
        said_out_of_files: std::sync::atomic::AtomicBool::new(false),
        running: Arc::new(tokio::sync::Semaphore::new(
            simulation
                .http
                .max_connections
                .saturating_mul(USERS_PER_CONNECTION)
                .clamp(1, tokio::sync::Semaphore::MAX_PERMITS),
        )),
    }))
}

/// Each scenario's arrivals and slots before it, in the order of the file. O(steps).
fn counted_before(simulation: &Simulation) -> Vec<(u64, u64)> {
    let mut before = (0u64, 0u64);
    simulation
        .scenarios
        .iter()
        .map(|s| {
            let this = before;
            before.0 = before
                .0
                .saturating_add(crate::schedule::open_users(&s.injection));
            before.1 = before
                .1
                .saturating_add(crate::schedule::closed_slots(&s.injection));
            this
        })
        .collect()
}

/// Runs every scenario until its injection ends or `maxDuration` passes. Returns whether it
/// ended by itself (false: cut at maxDuration).
pub async fn execute(run: Arc<Run>, simulation: &Simulation) -> bool {
    let deadline = run.started + simulation.max_duration.get();
    let mut scenarios = tokio::task::JoinSet::new();
    for ((s, users), before) in simulation.scenarios.iter().zip(&run.users).zip(&run.before) {
        scenarios.spawn(inject(
            run.clone(),
            Arc::new(s.clone()),
            users.clone(),
            deadline,
            *before,
        ));
    }
    let all = async { while scenarios.join_next().await.is_some() {} };
    tokio::time::timeout_at(deadline, all).await.is_ok()
}

#[cfg(test)]
mod tests {
    use super::Limiter;

    fn limiter(yaml: &str) -> Limiter {
        let steps: Vec<crate::scenario::ThrottleStep> = ferrowizard_config::Loader::new()
            .load_str("throttle.yaml", yaml)
            .unwrap();
        Limiter::new(&steps).unwrap()
    }

    /// The first `n` offsets, in milliseconds rounded to a microsecond (`None` once the rate
    /// is zero for good).
    fn offsets(limiter: &Limiter, n: usize) -> Vec<Option<f64>> {
        (0..n)
            .map(|_| {
                limiter
                    .next()
                    .map(|d| (d.as_secs_f64() * 1e6).round() / 1e3)
            })
            .collect()
    }

    /// The k-th request of a throttled run may start when the rate's integral reaches k.
    ///
    /// Catches: a limiter counting from 1 (every offset one slot late), a segment lookup
    /// with `<` where `<=` is meant (the first request of a segment finds none), a ramp's
    /// quadratic solved wrong, and requests let through at once after a ramp down to zero.
    #[test]
    fn the_kth_request_starts_when_the_rates_integral_reaches_k() {
        // 50 a second for 2 s, and at that rate on: k / 50 s.
        let l = limiter("- jumpToRps: 50\n- holdFor: 2s\n");
        let mut expected: Vec<Option<f64>> = (0..102).map(|k| Some(k as f64 * 20.0)).collect();
        assert_eq!(offsets(&l, 102), expected);
        // From 0 to 100 a second over 2 s: ∫ = 25 t², so request k at √k / 5 s; then 100 a
        // second.
        let l = limiter("- reachRps: 100\n  in: 2s\n");
        let got = offsets(&l, 102);
        for (k, want) in [
            (0, 0.0),
            (1, 200.0),
            (4, 400.0),
            (25, 1000.0),
            (100, 2000.0),
            (101, 2010.0),
        ] {
            assert_eq!(got[k], Some(want), "request {k}");
        }
        assert_eq!(got[99], Some(1989.975));
        // A silent second, then 10 a second for a second, then down to zero over a second
        // (5 more requests), and nothing after: the 16th request would be the first at 0/s.
        let l = limiter("- holdFor: 1s\n- jumpToRps: 10\n- holdFor: 1s\n- reachRps: 0\n  in: 1s\n");
        expected = (0..10).map(|k| Some(1000.0 + k as f64 * 100.0)).collect();
        // 10 - 5 t² = k - 10 requests into the ramp: t = 1 - √(1 - (k - 10) / 5).
        expected.extend(
            (0..5).map(|j| {
                Some(2000.0 + ((1.0 - (1.0 - j as f64 / 5.0).sqrt()) * 1e6).round() / 1e3)
            }),
        );
        expected.extend([None, None]);
        assert_eq!(offsets(&l, 17), expected);
        // No throttle, no limiter.
        assert!(Limiter::new(&[]).is_none());
    }

    /// The shards' limiters issue the whole limiter's slots between them, each once: the
    /// shards together send at the whole rate, each at its N-th.
    ///
    /// Catches: a shard's limiter at the whole rate (N times the load together), shards whose
    /// slots coincide (each at the N-th of the rate, all at the same instants).
    #[test]
    fn the_shards_of_a_throttle_send_at_the_whole_rate_together() {
        let yaml = "- reachRps: 90\n  in: 1s\n- holdFor: 1s\n- jumpToRps: 30\n- holdFor: 1s\n";
        let whole = offsets(&limiter(yaml), 200);
        let end = whole.iter().position(Option::is_none);
        assert_eq!(end, None, "the last rate holds");
        let mut union: Vec<Option<f64>> = (0..3)
            .flat_map(|i| {
                let shard = crate::shard::Shard::parse(&format!("{i}/3"), None).unwrap();
                let sharded = limiter(yaml).shard(shard);
                let own = offsets(&sharded, 200 / 3 + 1);
                // A shard's own slots: every third of the whole's, from its index.
                let expected: Vec<Option<f64>> = whole.iter().copied().skip(i).step_by(3).collect();
                assert_eq!(own[..expected.len()], expected[..], "shard {shard}");
                own[..expected.len()].to_vec()
            })
            .collect();
        union.sort_by(|a, b| a.partial_cmp(b).unwrap());
        assert_eq!(union, whole);
        // At the 30/s that holds, a shard sends 10 a second.
        let shard = crate::shard::Shard::parse("1/3", None).unwrap();
        let last = offsets(&limiter(yaml).shard(shard), 60);
        let gap = last[59].unwrap() - last[58].unwrap();
        assert!(
            (gap - 100.0).abs() < 1e-6,
            "{gap} ms between a shard's sends"
        );
    }
}
