//! Error answers in DropWizard's JSON shape, `{"code":404,"message":"HTTP 404 Not Found"}`.
//!
//! [`ErrorMessage`] is that shape (DropWizard's `ErrorMessage`), for a handler to answer with.
//! The server answers its own errors in it too when the client accepts JSON: the pipeline's
//! 405 (`allowedMethods`), 413 (`maxRequestBodySize`) and 503 (full), the 500 of a handler
//! that panicked, and any error status that comes back from the router without a body or a
//! content type (axum's 404 for an unknown path, its 405 for a known path without that
//! method, a bare `StatusCode` from a handler or layer). Other clients get those as before:
//! the pipeline's short texts, axum's empty bodies. Either way such an error carries
//! `Vary: Accept`. A response with a body or a content type of its own is never rewritten.
//!
//! Whether a client accepts JSON is decided from its first `Accept` header, read on arrival
//! (`prefers_json`, below); the body is built only for an error.
//!
//! [`RunError`] is the error an application's own code returns (`run`, a managed object, a
//! command), beside the answers.

use axum::body::Body;
use axum::response::{IntoResponse, Response};
use http::{HeaderValue, StatusCode, header};
use http_body::Body as _;

/// The error an application's `run` may return: printed as one line at startup, exit 1.
///
/// Any error converts into it with `?`, and a message with `.into()`:
///
/// ```
/// fn port(text: &str) -> Result<u16, ferrowizard::RunError> {
///     let port: u16 = text.parse()?;
///     if port == 0 {
///         return Err("the port must not be 0".into());
///     }
///     Ok(port)
/// }
/// assert_eq!(port("8080").unwrap(), 8080);
/// assert_eq!(port("0").unwrap_err().to_string(), "the port must not be 0");
/// ```
pub type RunError = Box<dyn std::error::Error + Send + Sync>;

/// An error answer in DropWizard's JSON shape: `{"code":404,"message":"HTTP 404 Not Found"}`,
/// with the status `code` and `Content-Type: application/json`.
///
/// ```
/// use ferrowizard::axum::http::StatusCode;
/// use ferrowizard::axum::response::IntoResponse;
/// use ferrowizard::ErrorMessage;
///
/// let unknown = ErrorMessage::new(StatusCode::NOT_FOUND, "no quote for XYZ");
/// assert_eq!(unknown.to_json(), r#"{"code":404,"message":"no quote for XYZ"}"#);
/// assert_eq!(
///     ErrorMessage::of(StatusCode::NOT_FOUND).to_json(),
///     r#"{"code":404,"message":"HTTP 404 Not Found"}"#
/// );
/// let response = unknown.into_response();
/// assert_eq!(response.status(), StatusCode::NOT_FOUND);
/// assert_eq!(response.headers()["content-type"], "application/json");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ErrorMessage {
    status: StatusCode,
    message: String,
}

impl ErrorMessage {
    /// The answer `status` with `message`.
    ///
    /// ```
    /// # use ferrowizard::{ErrorMessage, axum::http::StatusCode};
    /// let e = ErrorMessage::new(StatusCode::CONFLICT, "already booked");
    /// assert_eq!(e.message(), "already booked");
    /// ```
    pub fn new(status: StatusCode, message: impl Into<String>) -> ErrorMessage {
        ErrorMessage {
            status,
            message: message.into(),
        }
    }

    /// The answer `status` with Jersey's message for it: `HTTP 404 Not Found`.
    ///
    /// ```
    /// # use ferrowizard::{ErrorMessage, axum::http::StatusCode};
    /// assert_eq!(ErrorMessage::of(StatusCode::SERVICE_UNAVAILABLE).message(), "HTTP 503 Service Unavailable");
    /// ```
    pub fn of(status: StatusCode) -> ErrorMessage {
        let message = match status.canonical_reason() {
            Some(reason) => format!("HTTP {} {reason}", status.as_u16()),
            None => format!("HTTP {}", status.as_u16()),
        };
        ErrorMessage { status, message }
    }

    /// The status.
    ///
    /// ```
    /// # use ferrowizard::{ErrorMessage, axum::http::StatusCode};
    /// assert_eq!(ErrorMessage::of(StatusCode::GONE).status(), StatusCode::GONE);
    /// ```
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The message.
    ///
    /// ```
    /// # use ferrowizard::{ErrorMessage, axum::http::StatusCode};
    /// assert_eq!(ErrorMessage::of(StatusCode::GONE).message(), "HTTP 410 Gone");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The JSON body: `code` first, then `message`.
    ///
    /// ```
    /// # use ferrowizard::{ErrorMessage, axum::http::StatusCode};
    /// let e = ErrorMessage::new(StatusCode::BAD_REQUEST, "a \"quoted\" word");
    /// assert_eq!(e.to_json(), r#"{"code":400,"message":"a \"quoted\" word"}"#);
    /// ```
    pub fn to_json(&self) -> String {
        serde_json::json!({ "code": self.status.as_u16(), "message": self.message }).to_string()
    }
}

impl IntoResponse for ErrorMessage {
    fn into_response(self) -> Response {
        json_response(self.status, self.to_json())
    }
}

/// `body` as `application/json`, with `status`.
pub(crate) fn json_response(status: StatusCode, body: String) -> Response {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Marks a response the server generated itself (its text may become JSON).
#[derive(Clone, Copy, Debug)]
struct Generated;

/// An error the server answers itself: a short text, marked so that [`answer_error`] may give
/// a JSON client the JSON shape instead.
pub(crate) fn generated(status: StatusCode, text: &'static str) -> Response {
    let mut r = Response::new(Body::from(text));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.extensions_mut().insert(Generated);
    r
}

/// An error `response` (a status of 400 or more) the server generated, or one without a body
/// or a content type: its body depends on the client's `Accept`, so it gets `Vary: Accept`,
/// and for a client that accepts JSON (`json`) the JSON shape of [`ErrorMessage::of`] its
/// status. Anything else is left as it is.
#[cold]
pub(crate) fn answer_error(response: &mut Response, json: bool) {
    let bare = response.body().size_hint().exact() == Some(0)
        && !response.headers().contains_key(header::CONTENT_TYPE);
    if !bare && response.extensions().get::<Generated>().is_none() {
        return;
    }
    // A cache (a 404 is cacheable by default) must not hand one client's answer to another.
    response
        .headers_mut()
        .append(header::VARY, HeaderValue::from_static("accept"));
    if !json {
        return;
    }
    let body = ErrorMessage::of(response.status()).to_json();
    *response.body_mut() = Body::from(body);
    let headers = response.headers_mut();
    headers.remove(header::CONTENT_LENGTH);
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
}

/// Whether a client whose `Accept` header is `accept` gets errors as JSON: when it names
/// `application/json` (or `application/*`) with a weight above 0, and weighs `text/plain` no
/// more than that (each type's weight is that of the most specific range it matches, as
/// RFC 9110 has it). `*/*` alone (curl's default) and browsers' lists (text first, `*/*` last)
/// keep plain text; `application/json`, and `application/json, text/plain, */*` (axios's
/// default), get JSON. A header that does not mention JSON is rejected in one scan, with no
/// parse.
pub(crate) fn prefers_json(accept: &[u8]) -> bool {
    let mentions = |word: &[u8]| {
        accept
            .windows(word.len())
            .any(|w| w.eq_ignore_ascii_case(word))
    };
    if !mentions(b"json") && !mentions(b"application/*") {
        return false;
    }
    negotiate(accept)
}

#[cold]
fn negotiate(accept: &[u8]) -> bool {
    let Ok(accept) = std::str::from_utf8(accept) else {
        return false;
    };
    // The weight of each range that matters, from the most specific to the least.
    let (mut json, mut application, mut text_plain, mut text, mut any) =
        (None, None, None, None, None);
    for range in accept.split(',') {
        let mut parts = range.split(';');
        let media = parts.next().unwrap_or_default().trim();
        let weight = parts
            .filter_map(|p| {
                let (name, value) = p.split_once('=')?;
                name.trim()
                    .eq_ignore_ascii_case("q")
                    .then(|| value.trim().parse::<f32>().ok())
            })
            .next()
            // An unreadable weight counts as 0: the range is not taken as accepted.
            .map_or(1.0, |q| q.unwrap_or(0.0));
        let slot = if media.eq_ignore_ascii_case("application/json") {
            &mut json
        } else if media.eq_ignore_ascii_case("application/*") {
            &mut application
        } else if media.eq_ignore_ascii_case("text/plain") {
            &mut text_plain
        } else if media.eq_ignore_ascii_case("text/*") {
            &mut text
        } else if media == "*/*" {
            &mut any
        } else {
            continue;
        };
        *slot = Some(slot.map_or(weight, |w: f32| w.max(weight)));
    }
    let Some(json) = json.or(application) else {
        return false;
    };
    let text = text_plain.or(text).or(any).unwrap_or(0.0);
    json > 0.0 && json >= text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_for_clients_that_name_it_text_for_the_rest() {
        for accept in [
            "application/json",
            "Application/JSON",
            "application/json;charset=utf-8",
            "application/*",
            "application/json, text/plain, */*",
            "text/plain;q=0.5, application/json",
            "*/*;q=0.1, application/json;q=0.2",
        ] {
            assert!(prefers_json(accept.as_bytes()), "{accept}");
        }
        for accept in [
            "*/*",
            "text/plain",
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "application/json;q=0",
            "application/json;q=0.5, text/plain",
            "application/json;q=0.5, text/*",
            "application/json;q=0.5, */*",
            "application/json;q=nonsense",
            "application/xml",
            "",
        ] {
            assert!(!prefers_json(accept.as_bytes()), "{accept}");
        }
    }

    #[test]
    fn only_bare_or_generated_errors_become_json() {
        let mut bare = Response::new(Body::empty());
        *bare.status_mut() = StatusCode::NOT_FOUND;
        answer_error(&mut bare, true);
        assert_eq!(bare.headers()[header::CONTENT_TYPE], "application/json");
        assert_eq!(bare.headers()[header::VARY], "accept");

        let mut json = generated(StatusCode::SERVICE_UNAVAILABLE, "full\n");
        answer_error(&mut json, true);
        assert_eq!(json.headers()[header::CONTENT_TYPE], "application/json");
        // Text for the rest, still marked as depending on `Accept`.
        let mut text = generated(StatusCode::SERVICE_UNAVAILABLE, "full\n");
        answer_error(&mut text, false);
        assert_eq!(
            text.headers()[header::CONTENT_TYPE],
            "text/plain; charset=utf-8"
        );
        assert_eq!(text.headers()[header::VARY], "accept");

        // A handler's own body, and a handler's own (empty) typed body, are theirs.
        let mut own = (StatusCode::NOT_FOUND, "no such quote").into_response();
        answer_error(&mut own, true);
        assert_eq!(
            own.headers()[header::CONTENT_TYPE],
            "text/plain; charset=utf-8"
        );
        assert!(!own.headers().contains_key(header::VARY));
        let mut typed = Response::new(Body::empty());
        *typed.status_mut() = StatusCode::NOT_FOUND;
        typed
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html"));
        answer_error(&mut typed, true);
        assert_eq!(typed.headers()[header::CONTENT_TYPE], "text/html");
    }
}
