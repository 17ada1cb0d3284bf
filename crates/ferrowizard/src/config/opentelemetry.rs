//! `opentelemetry:`: the requests' spans and the log events exported over OTLP to a
//! collector, in batches off the request path (ferrowizard's `otlp` cargo feature; a build
//! without it refuses `enabled: true`, saying how to get it).

use std::collections::BTreeMap;

use ferrowizard_config::{Duration, section};
use serde::{Deserialize, Serialize};

/// `opentelemetry.protocol`: OTLP's transports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum OtlpProtocol {
    /// OTLP over gRPC (a collector's port 4317).
    #[default]
    #[serde(rename = "grpc")]
    Grpc,
    /// OTLP's protobuf messages over HTTP POSTs (a collector's port 4318, `/v1/traces` and
    /// `/v1/logs`).
    #[serde(rename = "http/protobuf")]
    HttpProtobuf,
}

section! {
    /// `opentelemetry:`. With `enabled`, each request's server span (which
    /// needs `server.traceContext.enabled`) and, with `logs`, each log event the levels let
    /// through go to the collector at `endpoint`; a collector that is down or slow costs
    /// requests nothing beyond the queue: what does not fit is dropped and counted
    /// (`ferrowizard.opentelemetry.spans.dropped`, `.logs.dropped`).
    pub struct OpenTelemetryFactory {
        /// Export (needs the `otlp` feature and `server.traceContext.enabled`).
        enabled: bool = false,
        /// The collector: `http://host:4317` for grpc; for http/protobuf the base URL, to
        /// which `/v1/traces` and `/v1/logs` are added (unset: the protocol's localhost port).
        /// `https://` is refused: TLS to the collector is not built in.
        #[garde(inner(custom(endpoint)))]
        endpoint: Option<String> = None,
        /// `grpc` or `http/protobuf`.
        protocol: OtlpProtocol = OtlpProtocol::Grpc,
        /// The resource's `service.name` (unset: the application's name).
        service_name: Option<String> = None,
        /// More resource attributes (`deployment.environment.name: production`).
        resource_attributes: BTreeMap<String, String> = BTreeMap::new(),
        /// The share of new traces recorded (0 to 1); a request that continues a caller's
        /// trace follows the caller's sampled flag.
        #[garde(range(min = 0.0, max = 1.0))]
        sampling: f64 = 1.0,
        /// Headers sent with every export (an API key).
        headers: BTreeMap<String, String> = BTreeMap::new(),
        /// How long one export may take.
        timeout: Duration = Duration::seconds(10),
        /// Requests' spans (and, apart, the spans made inside them, and the log records)
        /// waiting for export; more are dropped and counted.
        #[garde(range(min = 1))]
        queue_size: usize = 2048,
        /// Export log events too (those the `logging` levels let through).
        logs: bool = true,
    }
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
