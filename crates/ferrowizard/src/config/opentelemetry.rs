//! `opentelemetry:`: the requests' spans and the log events exported over OTLP to a
//! collector, in batches off the request path (ferrowizard's `otlp` cargo feature; a build
//! without it refuses `enabled: true`, saying how to get it).

use std::collections::BTreeMap;

use ferrowizard_config::{Config, Duration};

/// `opentelemetry.protocol`: OTLP's transports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Config)]
pub enum OtlpProtocol {
    /// OTLP over gRPC (a collector's port 4317).
    #[default]
    Grpc,
    /// OTLP's protobuf messages over HTTP POSTs (a collector's port 4318, `/v1/traces` and
    /// `/v1/logs`).
    #[config(rename = "http/protobuf")]
    HttpProtobuf,
}

/// `opentelemetry:`. With `enabled`, each request's server span (which
/// needs `server.traceContext.enabled`) and, with `logs`, each log event the levels let
/// through go to the collector at `endpoint`; a collector that is down or slow costs
/// requests nothing beyond the queue: what does not fit is dropped and counted
/// (`ferrowizard.opentelemetry.spans.dropped`, `.logs.dropped`).
#[derive(Clone, Debug, PartialEq, Config)]
pub struct OpenTelemetryFactory {
    /// Export (needs the `otlp` feature and `server.traceContext.enabled`).
    pub enabled: bool,
    /// The collector: `http://host:4317` for grpc; for http/protobuf the base URL, to
    /// which `/v1/traces` and `/v1/logs` are added (unset: the protocol's localhost port).
    /// `https://` is refused: TLS to the collector is not built in.
    #[config(inner(custom(endpoint)))]
    pub endpoint: Option<String>,
    /// `grpc` or `http/protobuf`.
    #[config(default = OtlpProtocol::Grpc)]
    pub protocol: OtlpProtocol,
    /// The resource's `service.name` (unset: the application's name).
    pub service_name: Option<String>,
    /// More resource attributes (`deployment.environment.name: production`).
    pub resource_attributes: BTreeMap<String, String>,
    /// The share of new traces recorded (0 to 1); a request that continues a caller's
    /// trace follows the caller's sampled flag.
    #[config(default = 1.0, range(min = 0.0, max = 1.0))]
    pub sampling: f64,
    /// Headers sent with every export (an API key).
    pub headers: BTreeMap<String, String>,
    /// How long one export may take.
    #[config(default = Duration::seconds(10))]
    pub timeout: Duration,
    /// Requests' spans (and, apart, the spans made inside them, and the log records)
    /// waiting for export; more are dropped and counted.
    #[config(default = 2048, range(min = 1))]
    pub queue_size: usize,
    /// Export log events too (those the `logging` levels let through).
    #[config(default = true)]
    pub logs: bool,
}

fn endpoint(url: &String, _: &()) -> garde::Result {
    match url.parse::<http::Uri>() {
        Ok(uri) if uri.scheme_str() == Some("http") && uri.host().is_some() => Ok(()),
        Ok(uri) if uri.scheme_str() == Some("https") => Err(garde::Error::new(format!(
            "{url:?}: TLS to the collector is not built in; send over http:// to a collector \
             or agent near the service (on its host, or its pod's sidecar), which forwards \
             over TLS"
        ))),
        _ => Err(garde::Error::new(format!(
            "{url:?} is not an http:// URL with a host"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_http_urls_with_a_host() {
        assert!(endpoint(&"http://127.0.0.1:4317".to_owned(), &()).is_ok());
        let tls = endpoint(&"https://collector:4317".to_owned(), &()).unwrap_err();
        assert!(tls.to_string().contains("TLS to the collector"), "{tls}");
        assert!(endpoint(&"collector:4317".to_owned(), &()).is_err());
        assert!(endpoint(&"http://".to_owned(), &()).is_err());
    }
}
