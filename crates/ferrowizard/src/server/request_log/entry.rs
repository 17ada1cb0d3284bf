//! What a request-log line needs from its request, taken before the handler runs, and the
//! pieces of text every line format writes from it.

use std::net::SocketAddr;
use std::time::{Duration, Instant, SystemTime};

use ferrowizard_logging::record::Text;

/// What the line needs from the request, taken before the handler runs.
pub(crate) struct Entry {
    pub(super) started: Instant,
    pub(super) time: SystemTime,
    pub(super) client: Option<SocketAddr>,
    pub(super) method: http::Method,
    /// The request target as received (origin-form: the path and query): the only part of
    /// the URI a line shows, so the only one kept (a clone of the whole URI is three
    /// reference counts taken and given back).
    pub(super) target: Option<http::uri::PathAndQuery>,
    pub(super) version: http::Version,
    pub(super) referer: Option<http::HeaderValue>,
    pub(super) user_agent: Option<http::HeaderValue>,
    /// The authenticated user, as the response says (`%u`, `remoteUser`).
    pub(super) user: Option<RemoteUser>,
    /// Only for access-json lines that ask for more.
    pub(super) extra: Option<Box<Extra>>,
    /// A WebSocket's or event stream's messages, counted as they go.
    pub(super) stream: Option<std::sync::Arc<crate::stream::Tally>>,
}

/// What only access-json lines need from a request (kept only when a layout asks).
pub(crate) struct Extra {
    /// `http` or `https`, as the client asked (a trusted proxy's word, else the connector's).
    pub(super) scheme: &'static str,
    pub(super) request_headers: Vec<(http::HeaderName, String)>,
    pub(super) response_headers: Vec<(http::HeaderName, String)>,
    /// The request's ID, when a layout writes it (`requestId`) and the request has one.
    pub(super) request_id: Option<Box<str>>,
    /// The request's trace and span ids, when a layout writes them and the request has them.
    pub(super) trace_ids: Option<crate::server::pipeline::observe::TraceIds>,
}

/// The scheme the client used: a trusted proxy's (`useForwardedHeaders`), else the
/// connector's.
pub(super) fn scheme(extensions: &http::Extensions) -> &'static str {
    if let Some(f) = extensions.get::<crate::server::connection::forwarded::Forwarded>()
        && let Some(scheme) = f.scheme()
    {
        return scheme;
    }
    if extensions
        .get::<crate::server::connection::forwarded::Tls>()
        .is_some()
    {
        "https"
    } else {
        "http"
    }
}

/// The name of the user a request was authenticated as, which the request log writes (`%u`,
/// access-json's `remoteUser`): the authentication that admits a request puts it in the
/// response's extensions (ferrowizard-auth does).
///
/// ```
/// use ferrowizard::server::RemoteUser;
///
/// let mut response = ferrowizard::axum::response::Response::new(ferrowizard::axum::body::Body::empty());
/// response.extensions_mut().insert(RemoteUser::new("ada"));
/// assert_eq!(response.extensions().get::<RemoteUser>().unwrap().name(), "ada");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteUser(std::sync::Arc<str>);

impl RemoteUser {
    /// The user `name`.
    pub fn new(name: &str) -> RemoteUser {
        RemoteUser(name.into())
    }

    /// The name.
    pub fn name(&self) -> &str {
        &self.0
    }
}

impl Entry {
    /// The authenticated user, when the response names one.
    pub(crate) fn user(&self) -> Option<&str> {
        self.user.as_ref().map(RemoteUser::name)
    }

    /// The request target; empty for the authority form (`CONNECT host:port`), whose URI
    /// has no path.
    pub(crate) fn target(&self) -> &str {
        self.target.as_ref().map_or("", |p| p.as_str())
    }

    pub(crate) fn time(&self) -> SystemTime {
        self.time
    }

    pub(crate) fn client(&self) -> Option<SocketAddr> {
        self.client
    }

    pub(crate) fn method(&self) -> &http::Method {
        &self.method
    }

    pub(crate) fn version(&self) -> http::Version {
        self.version
    }

    pub(crate) fn referer(&self) -> Option<&str> {
        self.referer.as_ref().and_then(|v| v.to_str().ok())
    }

    pub(crate) fn user_agent(&self) -> Option<&str> {
        self.user_agent.as_ref().and_then(|v| v.to_str().ok())
    }

    pub(crate) fn scheme(&self) -> &'static str {
        self.extra.as_ref().map_or("http", |x| x.scheme)
    }

    pub(crate) fn request_headers(&self) -> &[(http::HeaderName, String)] {
        self.extra.as_ref().map_or(&[], |x| &x.request_headers)
    }

    pub(crate) fn response_headers(&self) -> &[(http::HeaderName, String)] {
        self.extra.as_ref().map_or(&[], |x| &x.response_headers)
    }

    pub(crate) fn request_id(&self) -> Option<&str> {
        self.extra.as_ref().and_then(|x| x.request_id.as_deref())
    }

    /// A stream's messages received and sent, for a WebSocket or an event stream.
    pub(crate) fn messages(&self) -> Option<(u64, u64)> {
        self.stream.as_ref().map(|t| t.messages())
    }

    pub(crate) fn trace_ids(&self) -> Option<crate::server::pipeline::observe::TraceIds> {
        self.extra.as_ref().and_then(|x| x.trace_ids)
    }
}

/// The wall-clock time of `at`, from a reading of the system clock taken at most a second
/// earlier on this thread: one clock reading a request instead of two (the line's timestamp
/// has a second's resolution, access-json's a millisecond's; both monotonic within a second).
pub(super) fn wall_clock(at: Instant) -> SystemTime {
    thread_local! {
        static ANCHOR: std::cell::Cell<Option<(Instant, SystemTime)>> =
            const { std::cell::Cell::new(None) };
    }
    ANCHOR.with(
        |anchor| match anchor.get().map(|(i, s)| (at.checked_duration_since(i), s)) {
            Some((Some(since), s)) if since < Duration::from_secs(1) => s + since,
            _ => {
                let (i, s) = (Instant::now(), SystemTime::now());
                anchor.set(Some((i, s)));
                s.checked_sub(i.saturating_duration_since(at)).unwrap_or(s)
            }
        },
    )
}

/// `HTTP/1.1` and the like.
pub(crate) fn version(v: http::Version) -> &'static str {
    match v {
        http::Version::HTTP_09 => "HTTP/0.9",
        http::Version::HTTP_10 => "HTTP/1.0",
        http::Version::HTTP_2 => "HTTP/2.0",
        http::Version::HTTP_3 => "HTTP/3.0",
        _ => "HTTP/1.1",
    }
}

thread_local! {
    /// The client address last written on this thread, as text: consecutive requests often
    /// come from one address (a connection's, a load balancer's).
    static CLIENT: std::cell::RefCell<(Option<std::net::IpAddr>, String)> =
        const { std::cell::RefCell::new((None, String::new())) };
}

pub(crate) fn write_ip(out: &mut Text, ip: std::net::IpAddr) {
    use std::fmt::Write;
    CLIENT.with(|cell| {
        let mut last = cell.borrow_mut();
        if last.0 != Some(ip) {
            last.1.clear();
            match ip {
                // Without the formatting machinery.
                std::net::IpAddr::V4(v4) => {
                    for (i, octet) in v4.octets().iter().enumerate() {
                        if i > 0 {
                            last.1.push('.');
                        }
                        last.1.push_str(itoa::Buffer::new().format(*octet));
                    }
                }
                std::net::IpAddr::V6(_) => {
                    let _ = write!(last.1, "{ip}");
                }
            }
            last.0 = Some(ip);
        }
        out.push_str(&last.1);
    });
}
