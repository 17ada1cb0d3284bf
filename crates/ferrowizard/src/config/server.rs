//! `server:`: connectors, limits and the request log, with DropWizard's defaults.

use ferrowizard_config::{Duration, Size, section, serialize_tagged};
use ferrowizard_logging::config::{AppenderFactory, ConsoleAppenderFactory};
use std::net::IpAddr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize, Serializer};

/// Declares a connector section: the fields every connector has, then its own.
macro_rules! connector {
    (@fields $section:path; [$($meta:tt)*] $name:ident [$($fields:tt)*]) => {
        ferrowizard_config::section!(@emit [$($meta)*] $name [
            [
                /// The TCP port; 0 picks a free one (the real port is printed at startup).
                port: u16 = 8080
            ]
            [
                /// The address to bind. Unset: every interface for application connectors,
                /// 127.0.0.1 for admin connectors (DropWizard binds admin to every interface).
                bind_host: Option<String> = None
            ]
            [
                /// Close a connection that moved no bytes for this long (a request being
                /// answered may finish); drop it if it is still silent as long again (a client
                /// that stopped sending its body or reading the response).
                idle_timeout: Duration = Duration::seconds(30)
            ]
            [
                /// Larger request heads get 431 (HTTP/1), or a stream reset (HTTP/2's header
                /// list). At least 8 KiB: the HTTP/1 parser's smallest buffer.
                #[garde(custom(header_size_floor))]
                max_request_header_size: Size = Size::kibibytes(8)
            ]
            [
                /// A client must send its whole request head within this time (slowloris).
                header_read_timeout: Duration = Duration::seconds(10)
            ]
            [
                /// The listen backlog.
                #[garde(range(min = 1))]
                accept_queue_size: u32 = 1024
            ]
            [
                /// Set SO_REUSEADDR.
                reuse_address: bool = true
            ]
            [
                /// Connections open at once (beyond DropWizard, as Jetty's `ConnectionLimit`):
                /// past it, a new connection is answered 503 and closed (refused unanswered
                /// over TLS) unless an idle one can be closed to make room; from 90% of it,
                /// connections idle for a second are closed, the longest idle first. Unset: no
                /// limit but the open-file limit, watched the same way.
                #[garde(range(min = 1))]
                max_connections: Option<u32> = None
            ]
            [
                /// Send a `Server` header.
                use_server_header: bool = false
            ]
            [
                /// Send a `Date` header.
                use_date_header: bool = true
            ]
            [
                /// Take the client's address, scheme and host from a proxy's `Forwarded`
                /// (RFC 7239) or `X-Forwarded-For`/`-Proto`/`-Host` headers: the request log
                /// and handlers (`ConnectInfo`, `ferrowizard::server::Client`) then see the
                /// client, not the proxy. Off by default, as in DropWizard: a client could
                /// name any address.
                use_forwarded_headers: bool = false
            ]
            [
                /// With `useForwardedHeaders`: only these peers' headers are trusted
                /// (networks such as `10.0.0.0/8`, or addresses), and the client is the last
                /// address they name that is not one of them. Empty: every peer is trusted and
                /// the first address named is the client (DropWizard's behaviour).
                #[garde(inner(custom(valid_network)))]
                trusted_proxies: Vec<String> = Vec::new()
            ]
            $($fields)*
        ]);
    };
}

section! {
    /// `type: http`: a plain HTTP/1.1 connector.
    pub struct HttpConnectorFactory {}
    with connector
}

section! {
    /// `type: https`: HTTP over TLS (rustls), from PEM files.
    pub struct HttpsConnectorFactory {
        /// The certificate chain, PEM. Required.
        #[garde(custom(required_path))]
        cert_path: Option<String> = None,
        /// The private key, PEM. Required.
        #[garde(custom(required_path))]
        key_path: Option<String> = None,
        /// Accepted protocol versions.
        #[garde(length(min = 1))]
        supported_protocols: Vec<TlsProtocol> = vec![TlsProtocol::TlsV12, TlsProtocol::TlsV13],
    }
    with connector
}

/// A network of `trustedProxies`: `10.0.0.0/8`, `2001:db8::/32`, or one address.
pub(crate) fn parse_network(text: &str) -> Result<IpNet, String> {
    let text = text.trim();
    text.parse::<IpNet>()
        .or_else(|_| text.parse::<IpAddr>().map(IpNet::from))
        .map_err(|_| format!("{text:?} is not a network (10.0.0.0/8) or an address (10.1.2.3)"))
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
    parse_network(network)
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
                crate::server::check_log_format(f)
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
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum TlsProtocol {
    /// TLS 1.2.
    #[serde(rename = "TLSv1.2")]
    TlsV12,
    /// TLS 1.3.
    #[serde(rename = "TLSv1.3")]
    TlsV13,
}

/// A connector, chosen by `type`.
#[derive(Clone, Debug, PartialEq, Deserialize, garde::Validate)]
#[serde(rename_all = "lowercase")]
pub enum ConnectorFactory {
    /// `type: http`.
    Http(#[garde(dive)] HttpConnectorFactory),
    /// `type: https`.
    Https(#[garde(dive)] HttpsConnectorFactory),
}

impl ConnectorFactory {
    /// An HTTP connector on `port`.
    pub fn http(port: u16) -> Self {
        ConnectorFactory::Http(HttpConnectorFactory {
            port,
            ..Default::default()
        })
    }

    /// The port.
    pub fn port(&self) -> u16 {
        match self {
            ConnectorFactory::Http(c) => c.port,
            ConnectorFactory::Https(c) => c.port,
        }
    }

    /// `maxConnections`, if set.
    pub fn max_connections(&self) -> Option<usize> {
        let max = match self {
            ConnectorFactory::Http(c) => c.max_connections,
            ConnectorFactory::Https(c) => c.max_connections,
        };
        max.map(|m| m as usize)
    }

    /// The configured bind address, if any.
    pub fn bind_host(&self) -> Option<&str> {
        match self {
            ConnectorFactory::Http(c) => c.bind_host.as_deref(),
            ConnectorFactory::Https(c) => c.bind_host.as_deref(),
        }
    }
}

impl Serialize for ConnectorFactory {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ConnectorFactory::Http(c) => serialize_tagged(s, "http", c),
            ConnectorFactory::Https(c) => serialize_tagged(s, "https", c),
        }
    }
}

section! {
    /// `requestLog:`: one line per request, DropWizard's NCSA format by default.
    pub struct RequestLogFactory {
        /// Where lines go; `[]` turns the request log off at no cost per request.
        #[garde(dive, custom(request_log_layouts))]
        appenders: Vec<AppenderFactory> = vec![AppenderFactory::Console(ConsoleAppenderFactory::default())],
        /// Paths not logged, e.g. `/healthcheck` (exact, or a prefix ending in `*`).
        excluded_paths: Vec<String> = Vec::new(),
    }
}

section! {
    /// `gzip:`: response compression.
    pub struct GzipFactory {
        /// Compress responses the client accepts compressed.
        enabled: bool = true,
        /// Smaller bodies are sent as they are (a body of unknown length is compressed).
        minimum_entity_size: Size = Size::bytes(256),
        /// Media types compressed (`text/plain`; parameters such as `charset` do not count);
        /// empty: every type but images (SVG aside), gRPC and server-sent events.
        #[garde(inner(custom(media_type)))]
        compressed_mime_types: Vec<String> = Vec::new(),
        /// Request methods whose responses are compressed.
        #[garde(inner(custom(http_method)))]
        included_methods: Vec<String> = vec!["GET".to_owned()],
    }
}

/// The methods DropWizard allows by default.
pub fn default_allowed_methods() -> Vec<String> {
    ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"]
        .map(str::to_owned)
        .to_vec()
}

section! {
    /// `requestId:`: each request's ID, the client's when it sends a well-formed one (1 to 128
    /// letters, digits and `-_.:+/=`), else 128 random bits in hex; returned in the response
    /// under the same header, and `requestId` in the logging context of the request's events.
    pub struct RequestIdFactory {
        /// Whether requests get an ID (off by default: it adds about 7% to the instructions of
        /// a simple request, BENCHMARKS.md "Issue 23").
        enabled: bool = false,
        /// The header the ID is read from and returned in.
        #[garde(custom(header_name))]
        header_name: String = "X-Request-Id".to_owned(),
    }
}

section! {
    /// `traceContext:`: W3C Trace Context. Each request's `traceparent` and `tracestate` are
    /// read (a malformed or missing `traceparent` starts a new trace), the request is handled
    /// in an `http.server.request` span with OpenTelemetry's HTTP attributes, and `traceId` and
    /// `spanId` are in the logging context of the request's events; handlers take the
    /// context (`ferrowizard::trace::TraceContext`) to pass it on.
    pub struct TraceContextFactory {
        /// Whether requests are traced (off by default: see BENCHMARKS.md "Issue 23" for
        /// its cost).
        enabled: bool = false,
    }
}

fn header_name(name: &String, _: &()) -> garde::Result {
    http::HeaderName::from_bytes(name.as_bytes())
        .map(|_| ())
        .map_err(|_| garde::Error::new(format!("{name:?} is not a header name")))
}

/// Declares a server section: the fields both server types have, then its own.
macro_rules! server {
    (@fields $section:path; [$($meta:tt)*] $name:ident [$($fields:tt)*]) => {
        ferrowizard_config::section!(@emit [$($meta)*] $name [
            [
                /// Requests handled at once, per server; more get 503 at once (see
                /// maxQueuedRequests) instead of waiting until they time out.
                #[garde(range(min = 1))]
                max_threads: usize = 1024
            ]
            [
                /// Requests that may wait for a slot before the server answers 503.
                max_queued_requests: usize = 1024
            ]
            [
                /// The request log.
                #[garde(dive)]
                request_log: RequestLogFactory = RequestLogFactory::default()
            ]
            [
                /// Response compression.
                #[garde(dive)]
                gzip: GzipFactory = GzipFactory::default()
            ]
            [
                /// Other methods get 405.
                #[garde(inner(custom(http_method)))]
                allowed_methods: Vec<String> = default_allowed_methods()
            ]
            [
                /// The path the application's routes are served under, after the context
                /// path (`/api`; DropWizard's `/api/*` form is read the same). The admin
                /// side is not under it.
                #[garde(inner(custom(valid_root_path)))]
                root_path: Option<String> = None
            ]
            [
                /// In-flight requests may finish for this long after SIGTERM.
                shutdown_grace_period: Duration = Duration::seconds(30)
            ]
            [
                /// Larger request bodies get 413.
                max_request_body_size: Size = Size::mebibytes(8)
            ]
            [
                /// Request IDs: in the response, and in every log event of the request.
                #[garde(dive)]
                request_id: RequestIdFactory = RequestIdFactory::default()
            ]
            [
                /// W3C trace context: the request's trace, in its span and its log events.
                #[garde(dive)]
                trace_context: TraceContextFactory = TraceContextFactory::default()
            ]
            $($fields)*
        ]);
    };
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

section! {
    /// `type: default`: application and admin on separate connectors.
    pub struct DefaultServerFactory {
        /// The application's connectors.
        #[garde(dive, length(min = 1))]
        application_connectors: Vec<ConnectorFactory> = vec![ConnectorFactory::http(8080)],
        /// The admin interface's connectors.
        #[garde(dive)]
        admin_connectors: Vec<ConnectorFactory> = vec![ConnectorFactory::http(8081)],
        /// Admin requests handled at once.
        #[garde(range(min = 1))]
        admin_max_threads: usize = 64,
        /// The application's path prefix.
        #[garde(custom(valid_context_path))]
        application_context_path: String = "/".to_owned(),
        /// The admin interface's path prefix.
        #[garde(custom(valid_context_path))]
        admin_context_path: String = "/".to_owned(),
    }
    with server
}

section! {
    /// `type: simple`: application and admin on one connector, split by path.
    pub struct SimpleServerFactory {
        /// The one connector.
        #[garde(dive)]
        connector: ConnectorFactory = ConnectorFactory::http(8080),
        /// The application's path prefix.
        #[garde(custom(valid_context_path))]
        application_context_path: String = "/application".to_owned(),
        /// The admin interface's path prefix.
        #[garde(custom(valid_context_path))]
        admin_context_path: String = "/admin".to_owned(),
    }
    with server
}

/// `server:`, chosen by `type` (`default` when absent).
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ServerFactory {
    /// `type: default`.
    Default(DefaultServerFactory),
    /// `type: simple`.
    Simple(SimpleServerFactory),
}

/// The settings both server types have, borrowed from either.
#[derive(Clone, Debug)]
pub struct SharedSettings<'a> {
    /// `maxThreads`.
    pub max_threads: usize,
    /// `maxQueuedRequests`.
    pub max_queued_requests: usize,
    /// `allowedMethods`.
    pub allowed_methods: &'a [String],
    /// `gzip`.
    pub gzip: &'a GzipFactory,
    /// `maxRequestBodySize`.
    pub max_request_body_size: Size,
    /// `shutdownGracePeriod`.
    pub shutdown_grace_period: Duration,
    /// `requestLog`.
    pub request_log: &'a RequestLogFactory,
    /// `requestId`.
    pub request_id: &'a RequestIdFactory,
    /// `traceContext`.
    pub trace_context: &'a TraceContextFactory,
    /// Where the application's routes are served: the application context path joined with
    /// `rootPath` (no trailing `/`; empty: the root).
    pub application_path: String,
}

impl ServerFactory {
    /// The settings both server types have.
    pub fn shared(&self) -> SharedSettings<'_> {
        macro_rules! shared {
            ($f:expr) => {
                SharedSettings {
                    max_threads: $f.max_threads,
                    max_queued_requests: $f.max_queued_requests,
                    allowed_methods: &$f.allowed_methods,
                    gzip: &$f.gzip,
                    max_request_body_size: $f.max_request_body_size,
                    shutdown_grace_period: $f.shutdown_grace_period,
                    request_log: &$f.request_log,
                    request_id: &$f.request_id,
                    trace_context: &$f.trace_context,
                    application_path: join_paths(
                        &$f.application_context_path,
                        $f.root_path.as_deref().unwrap_or("/"),
                    ),
                }
            };
        }
        match self {
            ServerFactory::Default(f) => shared!(f),
            ServerFactory::Simple(f) => shared!(f),
        }
    }
}

impl Default for ServerFactory {
    fn default() -> Self {
        ServerFactory::Default(DefaultServerFactory::default())
    }
}

impl Serialize for ServerFactory {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ServerFactory::Default(f) => serialize_tagged(s, "default", f),
            ServerFactory::Simple(f) => serialize_tagged(s, "simple", f),
        }
    }
}

impl garde::Validate for ServerFactory {
    type Context = ();

    fn validate_into(
        &self,
        ctx: &(),
        parent: &mut dyn FnMut() -> garde::Path,
        report: &mut garde::Report,
    ) {
        let mut rule = |field: &str, message: String| {
            report.append(parent().join(field), garde::Error::new(message))
        };
        match self {
            ServerFactory::Default(f) => {
                let ports: Vec<u16> = f
                    .application_connectors
                    .iter()
                    .chain(&f.admin_connectors)
                    .map(ConnectorFactory::port)
                    .collect();
                for (i, p) in ports.iter().enumerate() {
                    if *p != 0 && ports[..i].contains(p) {
                        rule(
                            "admin_connectors",
                            format!("port {p} is used by two connectors"),
                        );
                    }
                }
            }
            ServerFactory::Simple(f) => {
                if f.application_context_path == f.admin_context_path {
                    rule(
                        "admin_context_path",
                        "must differ from applicationContextPath".to_owned(),
                    );
                }
            }
        }
        match self {
            ServerFactory::Default(f) => f.validate_into(ctx, parent, report),
            ServerFactory::Simple(f) => f.validate_into(ctx, parent, report),
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
