//! Stage 6, **respond**: an error the server generated (or one that came back from the router
//! without a body) in DropWizard's JSON shape for a client that accepts JSON
//! ([`crate::errors`]), the response's last headers (`Vary: Accept-Encoding` where it may be
//! compressed, `Server` with `useServerHeader`), the `response written` DEBUG event, and the
//! request's end as far as its connection's timeouts are concerned.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::Body;
use http::{HeaderValue, Response, header};
use http_body::Body as _;

use crate::server::connection::activity::InFlight;

/// The `Server` header's value when `useServerHeader` is on, as Jetty sends `Jetty(9.4.x)`.
pub(crate) const SERVER_HEADER: &str = concat!("ferrowizard/", env!("CARGO_PKG_VERSION"));

/// The connection's part of one request's response, made by the connection when it hands
/// the request on, used by the pipeline once the response is ready. Dropped unused when the
/// client goes away first (the request then ends for the timeouts too).
pub(crate) struct Respond {
    in_flight: InFlight,
    /// `useServerHeader`.
    server_header: bool,
}

impl Respond {
    /// The response to the request `in_flight`, with the `Server` header when
    /// `server_header`.
    pub(crate) fn new(in_flight: InFlight, server_header: bool) -> Respond {
        Respond {
            in_flight,
            server_header,
        }
    }

    /// The connection's part: the `Server` header, the event, and the request's end.
    fn answered(self, response: &mut Response<Body>) {
        if self.server_header {
            response
                .headers_mut()
                .entry(header::SERVER)
                .or_insert(HeaderValue::from_static(SERVER_HEADER));
        }
        tracing::debug!(target: "ferrowizard::server::response", peer = self.in_flight.activity().peer(), status = response.status().as_u16(), "response written");
        if response.body().size_hint().exact().is_none() {
            // A streamed body: in flight until its last byte, so that a client's next
            // (pipelined) request meanwhile is not timed as a slow head. (Else the request
            // is answered: `in_flight` is dropped with `self`.)
            let body = std::mem::take(response.body_mut());
            *response.body_mut() = Body::new(Answering {
                body,
                _in_flight: self.in_flight,
            });
        }
    }
}

/// Finishes `response` in place (it is not moved through here: a response is ~100 bytes), with
/// `connection`'s part when a connection handed the request on. `vary_from`: responses at
/// least this long may have been compressed (`gzip.enabled`, `minimumEntitySize`), so they
/// carry `Vary: Accept-Encoding` whoever asked, as tower-http's compression does.
/// `json_errors`: the client accepts JSON, so an error the server generated, or one without
/// a body or a content type, gets DropWizard's JSON shape (such an error gets `Vary: Accept`
/// either way; a response under 400 is not looked at).
#[inline]
pub(crate) fn respond(
    response: &mut Response<Body>,
    json_errors: bool,
    vary_from: Option<u64>,
    connection: Option<Respond>,
) {
    if let Some(min) = vary_from
        && response
            .body()
            .size_hint()
            .exact()
            .is_some_and(|n| n >= min)
        && !response.headers().contains_key(header::VARY)
    {
        response
            .headers_mut()
            .append(header::VARY, HeaderValue::from_static("accept-encoding"));
    }
    // After `Vary: Accept-Encoding`, which is decided on the body the router gave: a body
    // put here is never compressed.
    if response.status().as_u16() >= 400 {
        crate::errors::answer_error(response, json_errors);
    }
    if let Some(connection) = connection {
        connection.answered(response);
    }
}

/// A streamed response body, holding its request in flight until it ends.
struct Answering {
    body: Body,
    _in_flight: InFlight,
}

impl http_body::Body for Answering {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
