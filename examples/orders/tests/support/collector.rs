//! An OpenTelemetry collector over OTLP/HTTP on a free port of 127.0.0.1: the spans it
//! receives. Shared by the tests that follow spans (`#[path]`-included).

use std::sync::{Arc, Mutex};

use ferrowizard::axum::{self, body::Bytes, routing::post};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message;

/// Starts the collector on `runtime`: its base URL and the spans received.
pub fn start(runtime: &tokio::runtime::Runtime) -> (String, Arc<Mutex<Vec<Span>>>) {
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let spans: Arc<Mutex<Vec<Span>>> = Arc::default();
    let received = spans.clone();
    let app = axum::Router::new().route(
        "/v1/traces",
        post(move |body: Bytes| async move {
            let request = ExportTraceServiceRequest::decode(body).unwrap();
            for rs in request.resource_spans {
                for ss in rs.scope_spans {
                    received.lock().unwrap().extend(ss.spans);
                }
            }
            ExportTraceServiceResponse::default().encode_to_vec()
        }),
    );
    runtime.spawn(async move { axum::serve(listener, app).await });
    (format!("http://{addr}"), spans)
}

/// Bytes as lowercase hex (trace and span ids).
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
