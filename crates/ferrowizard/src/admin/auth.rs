//! `admin.auth`: every admin request carries the configured credentials, or gets 401.
//!
//! DropWizard's admin port has no authentication at all (its users ask for it in
//! dropwizard/dropwizard#122 and #2562). Here it is optional, bearer or basic, and the
//! comparison takes the same time whatever the guess (`subtle`), so that the secret cannot
//! be found a byte at a time.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use subtle::ConstantTimeEq;

use crate::config::AdminAuth;

/// The `Authorization` header value that is accepted, and the challenge sent otherwise.
#[derive(Clone)]
pub(crate) struct Guard {
    expected: Arc<[u8]>,
    challenge: HeaderValue,
}

impl Guard {
    pub(crate) fn new(auth: &AdminAuth) -> Guard {
        let (expected, challenge) = match auth {
            AdminAuth::Bearer(token) => (
                format!("Bearer {}", token.0),
                "Bearer realm=\"ferrowizard admin\"",
            ),
            AdminAuth::Basic(b) => (
                format!(
                    "Basic {}",
                    base64::engine::general_purpose::STANDARD
                        .encode(format!("{}:{}", b.username, b.password.0))
                ),
                "Basic realm=\"ferrowizard admin\"",
            ),
        };
        Guard {
            expected: expected.into_bytes().into(),
            challenge: HeaderValue::from_static(challenge),
        }
    }

    fn admits(&self, request: &Request) -> bool {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .map_or(&[][..], HeaderValue::as_bytes);
        // `ct_eq` on slices of different lengths is false at once; the length of the secret
        // is not what it protects.
        bool::from(given.ct_eq(&self.expected))
    }
}

/// The middleware: passes admitted requests on, answers the rest 401 with a challenge.
pub(crate) async fn require(guard: Arc<Guard>, request: Request, next: Next) -> Response {
    if guard.admits(&request) {
        return next.run(request).await;
    }
    let mut response = (
        StatusCode::UNAUTHORIZED,
        Body::from("credentials required\n"),
    )
        .into_response();
    response
        .headers_mut()
        .insert(header::WWW_AUTHENTICATE, guard.challenge.clone());
    response
}
