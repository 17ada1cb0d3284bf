//! The span exporter: each batch made into an export request ([`super::encode`]) and sent to
//! the collector over OTLP/gRPC (opentelemetry-proto's tonic client) or OTLP/HTTP (prost's
//! bytes through hyper, on the export runtime), with the configured headers and timeout.

use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Request};
use opentelemetry_http::HttpClient as _;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::collector::trace::v1::trace_service_client::TraceServiceClient;
use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::SpanData;
use prost::Message;

use super::encode;
use super::http_client::HttpClient;

/// Spans to an OTLP collector.
#[derive(Debug)]
pub(super) struct Spans {
    transport: Transport,
    resource: ResourceAttributesWithSchema,
    handle: tokio::runtime::Handle,
    timeout: Duration,
}

#[derive(Debug)]
enum Transport {
    Grpc(Box<Grpc>),
    Http(Box<Http>),
}

/// OTLP/gRPC's destination.
#[derive(Debug)]
struct Grpc {
    client: TraceServiceClient<tonic::transport::Channel>,
    metadata: tonic::metadata::MetadataMap,
}

/// OTLP/HTTP's destination.
#[derive(Debug)]
struct Http {
    client: HttpClient,
    url: http::Uri,
    headers: HeaderMap,
}

impl Spans {
    /// Spans over gRPC to `endpoint` (a URL), with `metadata` on every export. Builds the
    /// channel (which connects when first used) on `handle`'s runtime.
    pub(super) fn grpc(
        endpoint: &str,
        metadata: tonic::metadata::MetadataMap,
        timeout: Duration,
        handle: tokio::runtime::Handle,
    ) -> Result<Spans, String> {
        let channel = tonic::transport::Endpoint::from_shared(endpoint.to_owned())
            .map_err(|e| format!("endpoint {endpoint:?}: {e}"))?
            .connect_timeout(timeout)
            .timeout(timeout);
        let channel = {
            let _entered = handle.enter();
            channel.connect_lazy()
        };
        Ok(Spans {
            transport: Transport::Grpc(Box::new(Grpc {
                client: TraceServiceClient::new(channel),
                metadata,
            })),
            resource: ResourceAttributesWithSchema::default(),
            handle,
            timeout,
        })
    }

    /// Spans over HTTP to `url` (`…/v1/traces`) with `headers` on every export.
    pub(super) fn http(
        url: &str,
        headers: HeaderMap,
        client: HttpClient,
        timeout: Duration,
        handle: tokio::runtime::Handle,
    ) -> Result<Spans, String> {
        let url = url
            .parse::<http::Uri>()
            .map_err(|e| format!("endpoint {url:?}: {e}"))?;
        Ok(Spans {
            transport: Transport::Http(Box::new(Http {
                client,
                url,
                headers,
            })),
            resource: ResourceAttributesWithSchema::default(),
            handle,
            timeout,
        })
    }

    /// Exports recorded requests' spans (see [`super::request`]).
    pub(super) async fn export_requests(
        &self,
        records: &[super::record::Record],
    ) -> Result<(), String> {
        if records.is_empty() {
            return Ok(());
        }
        self.send(encode::recorded(&self.resource, "ferrowizard", records))
            .await
    }

    /// Sends one export request; runs on the export runtime.
    async fn send(&self, export: ExportTraceServiceRequest) -> Result<(), String> {
        match &self.transport {
            Transport::Grpc(grpc) => {
                let Grpc { client, metadata } = &**grpc;
                let mut client = client.clone();
                let mut request = tonic::Request::new(export);
                *request.metadata_mut() = metadata.clone();
                request.set_timeout(self.timeout);
                // The answer's partial-success counts are not read.
                let answer = async move {
                    client
                        .export(request)
                        .await
                        .map(drop)
                        .map_err(|status| format!("{}: {}", status.code(), status.message()))
                };
                let timeout = self.timeout;
                // The timer is made on the export runtime: the batch processor's thread has none.
                self.handle
                    .spawn(async move { tokio::time::timeout(timeout, answer).await })
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|_| "the collector did not answer in time".to_owned())??;
                Ok(())
            }
            Transport::Http(http) => {
                let Http {
                    client,
                    url,
                    headers,
                } = &**http;
                let mut request = Request::post(url.clone())
                    .body(Bytes::from(export.encode_to_vec()))
                    .map_err(|e| e.to_string())?;
                *request.headers_mut() = headers.clone();
                request.headers_mut().insert(
                    http::header::CONTENT_TYPE,
                    HeaderValue::from_static("application/x-protobuf"),
                );
                let response = client
                    .send_bytes(request)
                    .await
                    .map_err(|e| e.to_string())?;
                if response.status().is_success() {
                    Ok(())
                } else {
                    Err(format!("the collector answered {}", response.status()))
                }
            }
        }
    }
}

impl opentelemetry_sdk::trace::SpanExporter for Spans {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        if batch.is_empty() {
            return Ok(());
        }
        self.send(encode::sdk_spans(&self.resource, batch))
            .await
            .map_err(|e| OTelSdkError::InternalFailure(format!("span export: {e}")))
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.resource = ResourceAttributesWithSchema::from(resource);
    }
}
