//! `server:`: connectors, limits and the request log, with DropWizard's defaults.

use ferrowizard_config::{Config, Duration, Invalid, Size};
use ferrowizard_logging::config::{AppenderFactory, ConsoleAppenderFactory};

/// The keys every connector has, beside its own.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct ConnectorCommon {
    /// The TCP port; 0 picks a free one (the real port is printed at startup).
    #[config(default = 8080)]
    pub port: u16,
    /// The address to bind. Unset: every interface for application connectors,
    /// 127.0.0.1 for admin connectors (DropWizard binds admin to every interface).
    pub bind_host: Option<String>,
    /// Close a connection that moved no bytes for this long (a request being
    /// answered may finish); drop it if it is still silent as long again (a client
    /// that stopped sending its body or reading the response).
    #[config(default = Duration::seconds(30))]
    pub idle_timeout: Duration,
    /// Larger request heads get 431 (HTTP/1), or a stream reset (HTTP/2's header
    /// list). At least 8 KiB: the HTTP/1 parser's smallest buffer.
    #[config(default = Size::kibibytes(8), custom(header_size_floor))]
    pub max_request_header_size: Size,
    /// A client must send its whole request head within this time (slowloris).
    #[config(default = Duration::seconds(10))]
    pub header_read_timeout: Duration,
    /// The listen backlog.
    #[config(default = 1024, range(min = 1))]
    pub accept_queue_size: u32,
    /// Set SO_REUSEADDR.
    #[config(default = true)]
    pub reuse_address: bool,
    /// Connections open at once (beyond DropWizard, as Jetty's `ConnectionLimit`):
    /// past it, a new connection is answered 503 and closed (refused unanswered
    /// over TLS) unless an idle one can be closed to make room; from 90% of it,
    /// connections idle for a second are closed, the longest idle first. Unset: no
    /// limit but the open-file limit, watched the same way.
    #[config(range(min = 1))]
    pub max_connections: Option<u32>,
    /// Send a `Server` header.
    pub use_server_header: bool,
    /// Send a `Date` header.
    #[config(default = true)]
    pub use_date_header: bool,
    /// Take the client's address, scheme and host from a proxy's `Forwarded`
    /// (RFC 7239) or `X-Forwarded-For`/`-Proto`/`-Host` headers: the request log
    /// and handlers (`ConnectInfo`, `ferrowizard::server::Client`) then see the
    /// client, not the proxy. Off by default, as in DropWizard: a client could
    /// name any address.
    pub use_forwarded_headers: bool,
    /// With `useForwardedHeaders`: only these peers' headers are trusted
    /// (networks such as `10.0.0.0/8`, or addresses), and the client is the last
    /// address they name that is not one of them. Empty: every peer is trusted and
    /// the first address named is the client (DropWizard's behaviour).
    #[config(inner(custom(valid_network)))]
    pub trusted_proxies: Vec<String>,
}

/// `type: http`: a plain HTTP/1.1 connector.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct HttpConnectorFactory {
    /// The keys every connector has.
    #[config(inline)]
    pub common: ConnectorCommon,
}

/// `type: https`: HTTP over TLS (rustls), from PEM files.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct HttpsConnectorFactory {
    /// The keys every connector has.
    #[config(inline)]
    pub common: ConnectorCommon,
    /// The certificate chain, PEM. Required.
    #[config(custom(required_path))]
    pub cert_path: Option<String>,
    /// The private key, PEM. Required.
    #[config(custom(required_path))]
    pub key_path: Option<String>,
    /// Accepted protocol versions.
    #[config(default = vec![TlsProtocol::TlsV12, TlsProtocol::TlsV13], length(min = 1))]
    pub supported_protocols: Vec<TlsProtocol>,
}

fn header_size_floor(size: &Size, _: &()) -> garde::Result {
    if size.to_bytes() < 8192 {
        Err(garde::Error::new(
            "must be at least 8KiB (the HTTP/1 parser reads heads into a buffer no smaller)",
        ))
    } else {
        Ok(())
    }
}

fn valid_network(network: &str, _: &()) -> garde::Result {
    crate::server::connection::forwarded::parse_network(network)
        .map(|_| ())
        .map_err(garde::Error::new)
}

/// Request-log appenders' layouts: the default line, a `logFormat` of logback-access's
/// words, or `access-json`.
fn request_log_layouts(appenders: &[AppenderFactory], _: &()) -> garde::Result {
    use ferrowizard_logging::config::LayoutFactory;
    for (i, a) in appenders.iter().enumerate() {
        let common = a.common();
        if matches!(common.layout, Some(LayoutFactory::Json(_))) {
            return Err(garde::Error::new(format!(
                "[{i}]: the request log's layout is access-json (a request's fields); json is \
                 the application log's layout (an event's fields)"
            )));
        }
        if let Some(f) = &common.log_format {
            if common.layout.is_some() {
                return Err(garde::Error::new(format!(
                    "[{i}]: logFormat and layout both give the line's format: keep one"
                )));
            }
            // A pattern that fails `check_words` is reported where it is written.
            if ferrowizard_logging::layout::pattern::check_words(f).is_ok() {
                crate::server::request_log::access_pattern::check(f)
                    .map_err(|e| garde::Error::new(format!("[{i}].logFormat: {e}")))?;
            }
        }
    }
    Ok(())
}

fn required_path(path: &Option<String>, _: &()) -> garde::Result {
    match path {
        Some(p) if !p.trim().is_empty() => Ok(()),
        _ => Err(garde::Error::new("is required for an https connector")),
    }
}

/// TLS protocol versions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Config)]
pub enum TlsProtocol {
    /// TLS 1.2.
    #[config(rename = "TLSv1.2")]
    TlsV12,
    /// TLS 1.3.
    #[config(rename = "TLSv1.3")]
    TlsV13,
}

/// A connector, chosen by `type`.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(rename_all = "lowercase")]
pub enum ConnectorFactory {
    /// `type: http`.
    Http(HttpConnectorFactory),
    /// `type: https`.
    Https(HttpsConnectorFactory),
}

impl ConnectorFactory {
    /// An HTTP connector on `port`.
    pub fn http(port: u16) -> Self {
        ConnectorFactory::Http(HttpConnectorFactory {
            common: ConnectorCommon {
                port,
                ..Default::default()
            },
        })
    }

    /// The keys every connector has.
    pub fn common(&self) -> &ConnectorCommon {
        match self {
            ConnectorFactory::Http(c) => &c.common,
            ConnectorFactory::Https(c) => &c.common,
        }
    }
}

/// `requestLog:`: one line per request, DropWizard's NCSA format by default.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct RequestLogFactory {
    /// Where lines go; `[]` turns the request log off at no cost per request.
    #[config(
        default = vec![AppenderFactory::Console(ConsoleAppenderFactory::default())],
        custom(request_log_layouts),
    )]
    pub appenders: Vec<AppenderFactory>,
    /// Paths not logged, e.g. `/healthcheck` (exact, or a prefix ending in `*`).
    pub excluded_paths: Vec<String>,
}

/// `gzip:`: response compression.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct GzipFactory {
    /// Compress responses the client accepts compressed.
    #[config(default = true)]
    pub enabled: bool,
    /// Smaller bodies are sent as they are (a body of unknown length is compressed).
    #[config(default = Size::bytes(256))]
    pub minimum_entity_size: Size,
    /// Media types compressed (`text/plain`; parameters such as `charset` do not count);
    /// empty: every type but images (SVG aside), gRPC and server-sent events.
    #[config(inner(custom(media_type)))]
    pub compressed_mime_types: Vec<String>,
    /// Request methods whose responses are compressed.
    #[config(default = vec!["GET".to_owned()], inner(custom(http_method)))]
    pub included_methods: Vec<String>,
}

/// The methods DropWizard allows by default.
pub(crate) fn default_allowed_methods() -> Vec<String> {
    ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"]
        .map(str::to_owned)
        .to_vec()
}

/// `requestId:`: each request's ID, the client's when it sends a well-formed one (1 to 128
/// letters, digits and `-_.:+/=`), else 128 random bits in hex; returned in the response
/// under the same header, and `requestId` in the logging context of the request's events.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct RequestIdFactory {
    /// Whether requests get an ID (off by default: its cost is in BENCHMARKS.md, "Server
    /// overhead").
    pub enabled: bool,
    /// The header the ID is read from and returned in.
    #[config(default = "X-Request-Id".to_owned(), custom(header_name))]
    pub header_name: String,
}

/// `traceContext:`: W3C Trace Context. Each request's `traceparent` and `tracestate` are
/// read (a malformed or missing `traceparent` starts a new trace), the request is handled
/// in an `http.server.request` span with OpenTelemetry's HTTP attributes, and `traceId` and
/// `spanId` are in the logging context of the request's events; handlers take the
/// context (`ferrowizard::trace::TraceContext`) to pass it on.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct TraceContextFactory {
    /// Whether requests are traced (off by default: its cost is in BENCHMARKS.md, "Server
    /// overhead").
    pub enabled: bool,
}

fn header_name(name: &String, _: &()) -> garde::Result {
    http::HeaderName::from_bytes(name.as_bytes())
        .map(|_| ())
        .map_err(|_| garde::Error::new(format!("{name:?} is not a header name")))
}

/// The keys both server types have, beside their own.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct ServerCommon {
    /// Requests handled at once, per server; more get 503 at once (see
    /// maxQueuedRequests) instead of waiting until they time out.
    #[config(default = 1024, range(min = 1))]
    pub max_threads: usize,
    /// Requests that may wait for a slot before the server answers 503.
    #[config(default = 1024)]
    pub max_queued_requests: usize,
    /// The request log.
    pub request_log: RequestLogFactory,
    /// Response compression.
    pub gzip: GzipFactory,
    /// Other methods get 405.
    #[config(default = default_allowed_methods(), inner(custom(http_method)))]
    pub allowed_methods: Vec<String>,
    /// The path the application's routes are served under, after the context
    /// path (`/api`; DropWizard's `/api/*` form is read the same). The admin
    /// side is not under it.
    #[config(inner(custom(valid_root_path)))]
    pub root_path: Option<String>,
    /// In-flight requests may finish for this long after SIGTERM.
    #[config(default = Duration::seconds(30))]
    pub shutdown_grace_period: Duration,
    /// Larger request bodies get 413.
    #[config(default = Size::mebibytes(8))]
    pub max_request_body_size: Size,
    /// Request IDs: in the response, and in every log event of the request.
    pub request_id: RequestIdFactory,
    /// W3C trace context: the request's trace, in its span and its log events.
    pub trace_context: TraceContextFactory,
}

fn valid_context_path(path: &str, _: &()) -> garde::Result {
    if path.ends_with("/*") {
        return Err(garde::Error::new(format!(
            "{path:?} must be a path, not a pattern"
        )));
    }
    valid_root_path(&path.to_owned(), &())
}

fn valid_root_path(path: &String, _: &()) -> garde::Result {
    let bad = |why: &str| Err(garde::Error::new(format!("{path:?} {why}")));
    let trimmed = path.strip_suffix("/*").unwrap_or(path);
    if !path.starts_with('/') {
        bad("must start with / (e.g. /api)")
    } else if trimmed.contains('*') {
        bad("may end with /* but holds no other *: it is a path, not a pattern")
    } else if trimmed.contains(['{', '}', '?', '#', ' ']) {
        bad("must be a plain path (no {, }, ?, # or spaces)")
    } else if trimmed.contains("//") {
        bad("must not contain //")
    } else {
        Ok(())
    }
}

/// `base` and `path` joined as path prefixes: `("/", "/api")` is `/api`, `("/app", "/")` is
/// `/app`; the result has no trailing `/` (empty: the root).
fn join_paths(base: &str, path: &str) -> String {
    let path = path.strip_suffix("/*").unwrap_or(path);
    let base = base.trim_end_matches('/');
    let path = path.trim_matches('/');
    if path.is_empty() {
        base.to_owned()
    } else {
        format!("{base}/{path}")
    }
}

fn media_type(media_type: &String, _: &()) -> garde::Result {
    let token = |t: &str| {
        !t.is_empty()
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$&-^_.+".contains(&b))
    };
    match media_type.trim().split_once('/') {
        Some((kind, sub)) if token(kind) && token(sub) => Ok(()),
        _ => Err(garde::Error::new(format!(
            "{media_type:?} is not a media type (type/subtype, e.g. text/plain)"
        ))),
    }
}

fn http_method(method: &String, _: &()) -> garde::Result {
    let valid = !method.is_empty() && method.bytes().all(|b| b.is_ascii_uppercase());
    if valid {
        Ok(())
    } else {
        Err(garde::Error::new(format!(
            "{method:?} is not an HTTP method (upper case, e.g. GET)"
        )))
    }
}

/// `type: default`: application and admin on separate connectors.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = DefaultServerFactory::ports_apart)]
pub struct DefaultServerFactory {
    /// The keys both server types have.
    #[config(inline)]
    pub common: ServerCommon,
    /// The application's connectors.
    #[config(default = vec![ConnectorFactory::http(8080)], length(min = 1))]
    pub application_connectors: Vec<ConnectorFactory>,
    /// The admin interface's connectors.
    #[config(default = vec![ConnectorFactory::http(8081)])]
    pub admin_connectors: Vec<ConnectorFactory>,
    /// Admin requests handled at once.
    #[config(default = 64, range(min = 1))]
    pub admin_max_threads: usize,
    /// The application's path prefix.
    #[config(default = "/".to_owned(), custom(valid_context_path))]
    pub application_context_path: String,
    /// The admin interface's path prefix.
    #[config(default = "/".to_owned(), custom(valid_context_path))]
    pub admin_context_path: String,
}

/// `type: simple`: application and admin on one connector, split by path.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = SimpleServerFactory::paths_apart)]
pub struct SimpleServerFactory {
    /// The keys both server types have.
    #[config(inline)]
    pub common: ServerCommon,
    /// The one connector.
    #[config(default = ConnectorFactory::http(8080))]
    pub connector: ConnectorFactory,
    /// The application's path prefix.
    #[config(default = "/application".to_owned(), custom(valid_context_path))]
    pub application_context_path: String,
    /// The admin interface's path prefix.
    #[config(default = "/admin".to_owned(), custom(valid_context_path))]
    pub admin_context_path: String,
}

/// `server:`, chosen by `type` (`default` when absent).
#[derive(Clone, Debug, PartialEq, Config)]
#[config(rename_all = "lowercase")]
pub enum ServerFactory {
    /// `type: default`.
    Default(DefaultServerFactory),
    /// `type: simple`.
    Simple(SimpleServerFactory),
}

impl ServerFactory {
    /// The keys both server types have.
    pub fn common(&self) -> &ServerCommon {
        match self {
            ServerFactory::Default(f) => &f.common,
            ServerFactory::Simple(f) => &f.common,
        }
    }

    /// Where the application's routes are served: the application context path joined with
    /// `rootPath` (no trailing `/`; empty: the root).
    pub fn application_path(&self) -> String {
        let context = match self {
            ServerFactory::Default(f) => &f.application_context_path,
            ServerFactory::Simple(f) => &f.application_context_path,
        };
        join_paths(context, self.common().root_path.as_deref().unwrap_or("/"))
    }
}

impl Default for ServerFactory {
    fn default() -> Self {
        ServerFactory::Default(DefaultServerFactory::default())
    }
}

impl DefaultServerFactory {
    /// No two connectors on one port (0, a free port each, aside).
    fn ports_apart(&self) -> Result<(), Invalid> {
        let ports: Vec<u16> = self
            .application_connectors
            .iter()
            .chain(&self.admin_connectors)
            .map(|c| c.common().port)
            .collect();
        match ports
            .iter()
            .enumerate()
            .find(|(i, p)| **p != 0 && ports[..*i].contains(p))
        {
            Some((_, p)) => Err(Invalid::at(
                "adminConnectors",
                format!("port {p} is used by two connectors"),
            )),
            None => Ok(()),
        }
    }
}

impl SimpleServerFactory {
    /// The application and the admin interface under different paths.
    fn paths_apart(&self) -> Result<(), Invalid> {
        if self.application_context_path == self.admin_context_path {
            Err(Invalid::at(
                "adminContextPath",
                "must differ from applicationContextPath",
            ))
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_application_path_joins_the_context_path_and_the_root_path() {
        for (base, root, joined) in [
            ("/", "/", ""),
            ("/", "/*", ""),
            ("/", "/api", "/api"),
            ("/", "/api/*", "/api"),
            ("/", "/api/", "/api"),
            ("/application", "/", "/application"),
            ("/application", "/api/v1/*", "/application/api/v1"),
            ("/application/", "/api", "/application/api"),
        ] {
            assert_eq!(join_paths(base, root), joined, "{base} + {root}");
        }
    }

    #[test]
    fn each_log_takes_its_own_layout() {
        use crate::config::{FrameworkConfiguration, load_str};
        let load = |text: &str| load_str::<FrameworkConfiguration>("config.yaml", text, &[]);
        load("server:\n  requestLog:\n    appenders: [{type: console, layout: {type: access-json}}]\n")
            .unwrap();
        load("logging:\n  appenders: [{type: console, layout: {type: json}}]\n").unwrap();
        for (text, path, says) in [
            (
                "server:\n  requestLog:\n    appenders: [{type: console}, {type: console, layout: {type: json}}]\n",
                "server.requestLog.appenders",
                "[1]: the request log's layout is access-json",
            ),
            (
                "logging:\n  appenders: [{type: console, layout: {type: access-json}}]\n",
                "logging.appenders",
                "[0]: access-json is the request log's layout",
            ),
            (
                "logging:\n  loggers:\n    a: {level: INFO, appenders: [{type: console, layout: {type: access-json}}]}\n",
                "logging.loggers.a.appenders",
                "[0]: access-json is the request log's layout",
            ),
            (
                "server:\n  requestLog:\n    appenders: [{type: file, archive: false}]\n",
                "server.requestLog.appenders[0].currentLogFilename",
                "is required",
            ),
        ] {
            let report = load(text).unwrap_err();
            assert_eq!(report.errors.len(), 1, "{report}");
            assert_eq!(report.errors[0].path, path, "{report}");
            assert!(report.to_string().contains(says), "{report}");
        }
    }

    #[test]
    fn a_root_path_must_be_a_plain_path() {
        for ok in ["/", "/*", "/api", "/api/*", "/a/b-c_d.e/"] {
            assert!(valid_root_path(&ok.to_owned(), &()).is_ok(), "{ok}");
        }
        for bad in ["api", "/api/*/x", "/a*", "/{id}", "/a?b", "/a//b", ""] {
            assert!(valid_root_path(&bad.to_owned(), &()).is_err(), "{bad}");
        }
    }
}
