//! OTLP/HTTP's client.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};

/// OTLP/HTTP's client: hyper's, on the export runtime (the batch processors' threads only
/// wait for its answer), so that no second HTTP stack is needed.
#[derive(Clone, Debug)]
pub(super) struct HttpClient {
    pub(super) handle: tokio::runtime::Handle,
    pub(super) client: hyper_util::client::legacy::Client<
        hyper_util::client::legacy::connect::HttpConnector,
        Full<Bytes>,
    >,
    pub(super) timeout: Duration,
}

#[async_trait::async_trait]
impl opentelemetry_http::HttpClient for HttpClient {
    async fn send_bytes(
        &self,
        request: http::Request<Bytes>,
    ) -> Result<http::Response<Bytes>, opentelemetry_http::HttpError> {
        let (client, timeout) = (self.client.clone(), self.timeout);
        self.handle
            .spawn(async move {
                let answer = async move {
                    let response = client.request(request.map(Full::new)).await?;
                    let (parts, body) = response.into_parts();
                    let body = body.collect().await?.to_bytes();
                    Ok::<_, opentelemetry_http::HttpError>(http::Response::from_parts(parts, body))
                };
                match tokio::time::timeout(timeout, answer).await {
                    Ok(answer) => answer,
                    Err(_) => Err("the collector did not answer in time".into()),
                }
            })
            .await
            .map_err(|e| -> opentelemetry_http::HttpError { Box::new(e) })?
    }
}
