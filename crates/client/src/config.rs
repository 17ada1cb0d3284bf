//! `httpClient:`: DropWizard's `HttpClientConfiguration`, the keys that mean something for a
//! hyper client.

use ferrowizard::Config;
use ferrowizard::config::{Duration, Invalid, positive_duration};

/// An HTTP client section: its timeouts, its pool of connections and its TLS. An application
/// adds one field of this type per service it calls (`quotes:`, `payments:`...) and builds
/// each with [`HttpClientConfiguration::build`].
///
/// ```
/// use ferrowizard::config::{Duration, FrameworkConfiguration, load_str};
/// use ferrowizard::Config;
/// use ferrowizard_client::HttpClientConfiguration;
///
/// /// The service's configuration: ferrowizard's sections and the client of one service.
/// #[derive(Clone, Debug, Config)]
/// pub struct OrdersConfig {
///     /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
///     #[config(framework)]
///     pub framework: FrameworkConfiguration,
///     /// The quotes service.
///     pub quotes: HttpClientConfiguration,
/// }
///
/// let yaml = "quotes:\n  timeout: 2s\n  maxConnectionsPerRoute: 16\n  retries: 1\n";
/// let config: OrdersConfig = load_str("config.yaml", yaml, &[]).unwrap();
/// assert_eq!(config.quotes.timeout, Duration::seconds(2));
/// assert_eq!(config.quotes.connection_timeout, Duration::milliseconds(500));
/// assert_eq!(config.quotes.max_connections_per_route, 16);
///
/// let refused = load_str::<OrdersConfig>("config.yaml", "quotes:\n  cookiesEnabled: true\n", &[]);
/// assert!(refused.unwrap_err().to_string().contains("keeps no cookies"));
/// ```
#[derive(Clone, Debug, PartialEq, Config)]
#[config(
    check = HttpClientConfiguration::limits_fit,
    refuse(
        cookiesEnabled = "the client keeps no cookies: a service call carries what the handler \
                          puts in its headers",
        proxy = "the client connects to the services it calls directly; a proxy is not \
                 supported",
        validateAfterInactivityPeriod = "a pooled connection the peer closed is noticed when it \
                                         closes, so nothing is checked before a lease",
        gzipEnabled = "responses are passed on as the service sends them, and no compression is \
                       asked for",
        gzipEnabledForRequests = "request bodies are sent as given; compress one in the handler \
                                  and set Content-Encoding",
        chunkedEncodingEnabled = "a body of known length is sent with Content-Length, a stream \
                                  chunked: the body decides",
        minThreads = "the client runs on the service's tokio runtime and has no threads of its \
                      own",
        maxThreads = "the client runs on the service's tokio runtime and has no threads of its \
                      own",
        workQueueSize = "the client runs on the service's tokio runtime and has no queue of its \
                         own; maxConnections and connectionRequestTimeout bound the waiting"
    )
)]
pub struct HttpClientConfiguration {
    /// How long the client waits for the response's head, and then for each piece of its
    /// body (DropWizard's socket and response timeout).
    #[config(default = Duration::milliseconds(500), custom(positive_duration))]
    pub timeout: Duration,
    /// How long opening a connection may take: the TCP connection and, for `https`, the TLS
    /// handshake.
    #[config(default = Duration::milliseconds(500), custom(positive_duration))]
    pub connection_timeout: Duration,
    /// How long a call waits for a connection when `maxConnections` or
    /// `maxConnectionsPerRoute` are in use.
    #[config(default = Duration::milliseconds(500), custom(positive_duration))]
    pub connection_request_timeout: Duration,
    /// How long a connection lives from when it opens: an older one is not used again.
    #[config(default = Duration::minutes(60), custom(positive_duration))]
    pub time_to_live: Duration,
    /// How long an idle connection is kept for the next call: `0ms` closes each connection
    /// after its response.
    #[config(default = Duration::milliseconds(0))]
    pub keep_alive: Duration,
    /// Calls in flight at most, over every host; a call beyond them waits for one to end.
    #[config(default = 1024, range(min = 1))]
    pub max_connections: u32,
    /// Calls in flight at most to one host and port (a route).
    #[config(default = 1024, range(min = 1))]
    pub max_connections_per_route: u32,
    /// How many times an idempotent call (GET, HEAD, PUT, DELETE, OPTIONS, TRACE) is sent
    /// again when its connection failed after it was sent. A timeout, a connection that could
    /// not be opened, and a response, whatever its status, are never retried.
    #[config(default = 0, range(max = 1000))]
    pub retries: u32,
    /// The `User-Agent` of every call (unset: `SERVICE (CLIENT)`, the service's and the
    /// client's names).
    pub user_agent: Option<String>,
    /// The certificates `https` services are checked with (unset: the system's CAs).
    pub tls: Option<TlsConfiguration>,
}

/// `httpClient.tls:`: which servers the client trusts.
///
/// ```
/// use ferrowizard_client::TlsConfiguration;
///
/// let loader = ferrowizard::config::loader(&[]);
/// let tls: TlsConfiguration = loader.load_str("tls.yaml", "caFile: ca.pem\n").unwrap();
/// assert_eq!(tls.ca_file.as_deref(), Some("ca.pem"));
///
/// let once = loader.load_str::<TlsConfiguration>("tls.yaml", "insecure: true\n");
/// assert!(once.unwrap_err().to_string().contains("verifyHostname: false"));
/// ```
#[derive(Clone, Debug, PartialEq, Config)]
#[config(
    check = TlsConfiguration::insecure_said_twice,
    refuse(
        protocol = "TLS 1.2 and 1.3 are both offered, and the server picks",
        supportedProtocols = "TLS 1.2 and 1.3 are both offered, and the server picks",
        supportedCiphers = "rustls offers only modern cipher suites, all of them safe",
        provider = "the TLS provider is rustls, with ring",
        keyStorePath = "client certificates are not supported: authenticate to the service with \
                        a header (a bearer token)",
        keyStorePassword = "client certificates are not supported: authenticate to the service \
                            with a header (a bearer token)",
        keyStoreType = "client certificates are not supported",
        keyStoreProvider = "client certificates are not supported",
        certAlias = "client certificates are not supported",
        trustStorePath = "give the CAs as a PEM file: caFile",
        trustStorePassword = "a PEM caFile has no password",
        trustStoreType = "give the CAs as a PEM file: caFile",
        trustStoreProvider = "give the CAs as a PEM file: caFile",
        trustSelfSignedCertificates = "it would trust any self-signed certificate; give the \
                                       server's own certificate as caFile instead"
    )
)]
pub struct TlsConfiguration {
    /// A PEM file of the CAs (or the self-signed certificates) the client trusts, in place of
    /// the system's.
    pub ca_file: Option<String>,
    /// Check that the certificate names the host called.
    #[config(default = true)]
    pub verify_hostname: bool,
    /// Accept any certificate, for a test server: refused unless `verifyHostname: false` says
    /// so too.
    pub insecure: bool,
}

impl HttpClientConfiguration {
    fn limits_fit(&self) -> Result<(), Invalid> {
        if self.max_connections_per_route > self.max_connections {
            return Err(Invalid::at(
                "maxConnectionsPerRoute",
                format!(
                    "is {}, above maxConnections ({}), which bounds every route",
                    self.max_connections_per_route, self.max_connections
                ),
            ));
        }
        Ok(())
    }
}

impl TlsConfiguration {
    fn insecure_said_twice(&self) -> Result<(), Invalid> {
        if self.insecure && self.verify_hostname {
            return Err(Invalid::at(
                "insecure",
                "accepts any certificate from anyone: for a test server, say so twice with \
                 verifyHostname: false as well, or give the server's certificate as caFile",
            ));
        }
        if self.insecure && self.ca_file.is_some() {
            return Err(Invalid::at(
                "caFile",
                "has no effect with insecure: true, which accepts any certificate: keep one",
            ));
        }
        Ok(())
    }
}
