//! The client's errors: building it, and each call.

use std::time::Duration;

/// Why a client could not be built from its section.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// `tls.caFile` cannot be read, or holds no certificate.
    #[error("httpClient.tls.caFile {file}: {why}")]
    CaFile {
        /// The file.
        file: String,
        /// Why.
        why: String,
    },
    /// rustls refused the configuration.
    #[error("httpClient.tls: {0}")]
    Tls(String),
    /// A client of this name is built already: each needs its own metrics.
    #[error("an http client named {0:?} is built already: give each client a name of its own")]
    Duplicate(String),
    /// The client's metrics clash with metrics already registered (two clients of one name).
    #[error("the metrics of http client {name:?}: {source}")]
    Metrics {
        /// The client's name.
        name: String,
        /// The registry's refusal.
        source: ferrowizard::metrics::RegistryError,
    },
}

/// Why a call failed. Each names the client and the URL (without its query), never a header.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The request cannot be sent: not an absolute `http`/`https` URL, or a header that cannot
    /// be written.
    #[error("http client {client}: {why}")]
    Request {
        /// The client's name.
        client: String,
        /// Why.
        why: String,
    },
    /// Every connection `maxConnections` or `maxConnectionsPerRoute` allows was in use for
    /// `connectionRequestTimeout`.
    #[error(
        "http client {client}: no connection to {url} free within connectionRequestTimeout ({waited:?})"
    )]
    PoolTimeout {
        /// The client's name.
        client: String,
        /// The URL called.
        url: String,
        /// `connectionRequestTimeout`.
        waited: Duration,
    },
    /// No connection could be opened: refused, unreachable, a TLS handshake that failed, or
    /// nothing within `connectionTimeout`.
    #[error("http client {client}: {url}: {why}")]
    Connect {
        /// The client's name.
        client: String,
        /// The URL called.
        url: String,
        /// What failed.
        why: String,
        /// Whether it was `connectionTimeout` that ran out.
        timed_out: bool,
    },
    /// The response's head, or the next piece of its body, did not come within `timeout`.
    #[error("http client {client}: {url}: no response within timeout ({waited:?})")]
    Timeout {
        /// The client's name.
        client: String,
        /// The URL called.
        url: String,
        /// `timeout`.
        waited: Duration,
    },
    /// The connection failed while the request was sent or the response read (after the
    /// retries `retries` allows, for an idempotent call).
    #[error("http client {client}: {url}: {why}")]
    Io {
        /// The client's name.
        client: String,
        /// The URL called.
        url: String,
        /// What failed.
        why: String,
    },
}

impl ClientError {
    /// Whether a timeout ended the call: `connectionRequestTimeout`, `connectionTimeout` or
    /// `timeout`.
    ///
    /// ```
    /// let e = ferrowizard_client::ClientError::Timeout {
    ///     client: "quotes".into(),
    ///     url: "http://127.0.0.1:9/".into(),
    ///     waited: std::time::Duration::from_millis(500),
    /// };
    /// assert!(e.is_timeout());
    /// ```
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            ClientError::PoolTimeout { .. }
                | ClientError::Timeout { .. }
                | ClientError::Connect {
                    timed_out: true,
                    ..
                }
        )
    }
}

/// A service that failed to answer a handler's call: 503 to the handler's own caller when
/// the service could not be reached in time, 502 when it answered badly, with DropWizard's
/// JSON error (the URL and the cause are logged, not sent).
impl ferrowizard::axum::response::IntoResponse for ClientError {
    fn into_response(self) -> ferrowizard::axum::response::Response {
        use ferrowizard::axum::http::StatusCode;
        tracing::warn!(target: "ferrowizard::client", error = %self, "a call to a service failed");
        let status = match &self {
            ClientError::Request { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            ClientError::Io { .. } => StatusCode::BAD_GATEWAY,
            _ => StatusCode::SERVICE_UNAVAILABLE,
        };
        ferrowizard::ErrorMessage::of(status).into_response()
    }
}
