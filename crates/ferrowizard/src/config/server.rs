//! `server:`: connectors, limits and the request log, with DropWizard's defaults.

use ferrowizard_config::{Duration, Size, section, serialize_tagged};
use ferrowizard_logging::config::{AppenderFactory, ConsoleAppenderFactory};
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
                /// Larger request heads get 431.
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
                /// Send a `Server` header.
                use_server_header: bool = false
            ]
            [
                /// Send a `Date` header.
                use_date_header: bool = true
            ]
            [
                /// Trust `X-Forwarded-For` / `Forwarded` for the client address.
                use_forwarded_headers: bool = false
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
        supported_protocols: Vec<TlsProtocol> = vec![TlsProtocol::TlsV12, TlsProtocol::TlsV13],
    }
    with connector
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
        /// Smaller bodies are sent as they are.
        minimum_entity_size: Size = Size::bytes(256),
        /// The compressor's buffer.
        buffer_size: Size = Size::kibibytes(8),
        /// Media types compressed; empty means every compressible type.
        compressed_mime_types: Vec<String> = Vec::new(),
        /// Request methods whose responses are compressed.
        included_methods: Vec<String> = vec!["GET".to_owned()],
    }
}

/// The methods DropWizard allows by default.
pub fn default_allowed_methods() -> Vec<String> {
    ["GET", "POST", "PUT", "DELETE", "HEAD", "OPTIONS", "PATCH"]
        .map(str::to_owned)
        .to_vec()
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
                /// Threads kept ready.
                #[garde(range(min = 1))]
                min_threads: usize = 8
            ]
            [
                /// Requests that may wait for a slot before the server answers 503.
                max_queued_requests: usize = 1024
            ]
            [
                /// An idle worker thread stops after this long.
                idle_thread_timeout: Duration = Duration::minutes(1)
            ]
            [
                /// The request log.
                #[garde(dive)]
                request_log: RequestLogFactory = RequestLogFactory::default()
            ]
            [
                /// Response compression.
                gzip: GzipFactory = GzipFactory::default()
            ]
            [
                /// Other methods get 405.
                #[garde(inner(custom(http_method)))]
                allowed_methods: Vec<String> = default_allowed_methods()
            ]
            [
                /// The application's root path.
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
            $($fields)*
        ]);
    };
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
        /// Admin threads kept ready.
        #[garde(range(min = 1))]
        admin_min_threads: usize = 1,
        /// The application's path prefix.
        application_context_path: String = "/".to_owned(),
        /// The admin interface's path prefix.
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
        application_context_path: String = "/application".to_owned(),
        /// The admin interface's path prefix.
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
#[derive(Clone, Copy, Debug)]
pub struct SharedSettings<'a> {
    /// `maxThreads`.
    pub max_threads: usize,
    /// `minThreads`.
    pub min_threads: usize,
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
}

impl ServerFactory {
    /// The settings both server types have.
    pub fn shared(&self) -> SharedSettings<'_> {
        macro_rules! shared {
            ($f:expr) => {
                SharedSettings {
                    max_threads: $f.max_threads,
                    min_threads: $f.min_threads,
                    max_queued_requests: $f.max_queued_requests,
                    allowed_methods: &$f.allowed_methods,
                    gzip: &$f.gzip,
                    max_request_body_size: $f.max_request_body_size,
                    shutdown_grace_period: $f.shutdown_grace_period,
                    request_log: &$f.request_log,
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
        let (min, max) = match self {
            ServerFactory::Default(f) => {
                if f.admin_min_threads > f.admin_max_threads {
                    rule(
                        "admin_min_threads",
                        format!(
                            "must be <= adminMaxThreads ({} > {})",
                            f.admin_min_threads, f.admin_max_threads
                        ),
                    );
                }
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
                (f.min_threads, f.max_threads)
            }
            ServerFactory::Simple(f) => {
                if f.application_context_path == f.admin_context_path {
                    rule(
                        "admin_context_path",
                        "must differ from applicationContextPath".to_owned(),
                    );
                }
                (f.min_threads, f.max_threads)
            }
        };
        if min > max {
            rule(
                "min_threads",
                format!("must be <= maxThreads ({min} > {max})"),
            );
        }
        match self {
            ServerFactory::Default(f) => f.validate_into(ctx, parent, report),
            ServerFactory::Simple(f) => f.validate_into(ctx, parent, report),
        }
    }
}
