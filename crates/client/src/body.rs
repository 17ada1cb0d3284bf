//! A response's body: read within `timeout` a piece at a time, holding the call's lease until
//! it ends or is dropped.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Frame, SizeHint};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use tokio::time::{Instant, Sleep};

use crate::error::ClientError;
use crate::lease::Lease;
use crate::metrics::{Failure, Metrics};

/// The body of a response a [`HttpClient`](crate::HttpClient) call returned. Each piece must
/// come within the client's `timeout` of the one before; the connection goes back to the
/// pool once the body is read to its end (or dropped).
///
/// ```no_run
/// # async fn call(client: ferrowizard_client::HttpClient) -> Result<(), ferrowizard_client::ClientError> {
/// let response = client.get("http://127.0.0.1:8080/quotes/ACME").await?;
/// let text = response.into_body().text().await?;
/// # Ok(())
/// # }
/// ```
pub struct Body {
    inner: Incoming,
    idle: Duration,
    sleep: Option<Pin<Box<Sleep>>>,
    lease: Option<Lease>,
    failed: Failed,
}

/// What names a body's failure.
struct Failed {
    client: Arc<str>,
    uri: http::Uri,
    metrics: Arc<Metrics>,
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Body").finish_non_exhaustive()
    }
}

impl Body {
    pub(crate) fn new(
        inner: Incoming,
        idle: Duration,
        lease: Lease,
        client: Arc<str>,
        uri: http::Uri,
        metrics: Arc<Metrics>,
    ) -> Body {
        Body {
            inner,
            idle,
            sleep: None,
            lease: Some(lease),
            failed: Failed {
                client,
                uri,
                metrics,
            },
        }
    }

    /// The whole body.
    pub async fn bytes(self) -> Result<Bytes, ClientError> {
        Ok(self.collect().await?.to_bytes())
    }

    /// The whole body as text (UTF-8, a bad sequence replaced).
    pub async fn text(self) -> Result<String, ClientError> {
        let bytes = self.bytes().await?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    fn error(&mut self, timed_out: bool, why: String) -> ClientError {
        // The first failure gives the lease back and is counted; a later one only says so.
        let first = self.lease.take().is_some();
        let failed = &self.failed;
        let client = failed.client.to_string();
        let url = crate::metrics::queryless(&failed.uri);
        if timed_out {
            if first {
                failed.metrics.failed(Failure::ResponseTimeout);
            }
            ClientError::Timeout {
                client,
                url,
                waited: self.idle,
            }
        } else {
            if first {
                failed.metrics.failed(Failure::Io);
            }
            ClientError::Io { client, url, why }
        }
    }
}

impl http_body::Body for Body {
    type Data = Bytes;
    type Error = ClientError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, ClientError>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(sleep) = &mut this.sleep {
                    sleep.as_mut().reset(Instant::now() + this.idle);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(this.error(false, e.to_string())))),
            Poll::Ready(None) => {
                this.lease = None;
                Poll::Ready(None)
            }
            Poll::Pending => {
                let idle = this.idle;
                let sleep = this
                    .sleep
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(idle)));
                match sleep.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(this.error(true, String::new())))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
