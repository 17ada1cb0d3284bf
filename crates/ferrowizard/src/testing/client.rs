//! A [`TestService`](super::TestService)'s HTTP client: requests to its application and admin
//! connectors, answered with the whole response.

use bytes::Bytes;
use http::{HeaderMap, Method, Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde::de::DeserializeOwned;

/// A response from a [`TestService`](super::TestService): its status, its headers and its
/// whole body.
#[derive(Clone, Debug)]
pub struct TestResponse {
    /// The status.
    pub status: StatusCode,
    /// The headers.
    pub headers: HeaderMap,
    /// The body.
    pub body: Bytes,
}

impl TestResponse {
    /// The body as text (bytes that are not UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    /// The body as JSON, read into `T` (`serde_json::Value` for any JSON).
    pub fn json<T: DeserializeOwned>(&self) -> Result<T, serde_json::Error> {
        serde_json::from_slice(&self.body)
    }

    /// A header's value, when present and text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Why a request to a [`TestService`](super::TestService) got no response.
#[derive(Debug, thiserror::Error)]
pub enum RequestError {
    /// The URL or a header could not be made into a request.
    #[error("the request could not be made: {0}")]
    Build(#[from] http::Error),
    /// The connection failed, or the response could not be read.
    #[error("no response: {0}")]
    Send(String),
    /// The service has no connector of that kind (no admin connector).
    #[error("the service has no {0} connector")]
    NoConnector(&'static str),
    /// The connector speaks TLS: this client speaks plain HTTP.
    #[error("{0} is https: the test client speaks plain HTTP (use an HTTP client with TLS)")]
    Tls(String),
}

/// HTTP/1.1 over plain TCP, on the caller's runtime.
#[derive(Clone, Debug)]
pub(super) struct TestClient {
    client: Client<HttpConnector, Full<Bytes>>,
}

impl TestClient {
    pub(super) fn new() -> Self {
        TestClient {
            client: Client::builder(TokioExecutor::new()).build_http(),
        }
    }

    /// Sends `method base+path` with `body` (and its content type, if any).
    pub(super) async fn send(
        &self,
        method: Method,
        url: String,
        body: Bytes,
        content_type: Option<&'static str>,
    ) -> Result<TestResponse, RequestError> {
        if url.starts_with("https://") {
            return Err(RequestError::Tls(url));
        }
        let mut request = Request::builder().method(method).uri(url);
        if let Some(content_type) = content_type {
            request = request.header(header::CONTENT_TYPE, content_type);
        }
        let request = request.body(Full::new(body))?;
        let response = self
            .client
            .request(request)
            .await
            .map_err(|e| RequestError::Send(e.to_string()))?;
        let (parts, body) = response.into_parts();
        let body = body
            .collect()
            .await
            .map_err(|e| RequestError::Send(e.to_string()))?
            .to_bytes();
        Ok(TestResponse {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }
}
