//! Extractors for handlers: [`Valid`], a JSON body deserialized and validated, as
//! DropWizard's `@Valid` entity parameter.

use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::response::{IntoResponse, Response};
use http::{HeaderMap, StatusCode, header};
use serde::de::DeserializeOwned;

use crate::errors::{ErrorMessage, json_response};

/// A JSON request body deserialized into `T` and validated, as DropWizard's `@Valid` on an
/// entity parameter: the handler runs only for a body that is valid.
///
/// Derive [`Config`](crate::Config) for the body's type: its keys are its fields in camelCase,
/// an absent key takes its default (as Jackson leaves a field null or zero for the validator
/// to judge), an unknown key is refused, and the rules are garde's, in `#[config(...)]`. The
/// application needs no serde or garde of its own for it. (A type with serde's and garde's own
/// derives works too; then its garde must be the version ferrowizard uses.)
///
/// Refused bodies are answered in DropWizard's JSON shapes (see [`ValidRejection`]):
/// - a content type other than `application/json` (or `application/*+json`): 415,
///   `{"code":415,"message":"HTTP 415 Unsupported Media Type"}`;
/// - malformed JSON, or JSON that does not fit `T`: 400 with serde_json's message and where
///   it stopped, `{"code":400,"message":"expected `,` or `}` at line 1 column 15"}`;
/// - a body that fails validation: 422 with every violation, each with its field's path,
///   sorted as text: `{"code":422,"errors":["name: length is lower than 1","tags[0]: ..."]}`;
/// - a body longer than the server allows: 413.
///
/// ```
/// use ferrowizard::Config;
/// use ferrowizard::axum::{Router, body::Body, http::Request, routing::post};
/// use ferrowizard::extract::Valid;
/// use tower::ServiceExt;
///
/// /// A trade to place.
/// #[derive(Config)]
/// struct Trade {
///     /// The symbol traded.
///     #[config(length(min = 1))]
///     symbol: String,
///     /// How many.
///     #[config(range(min = 1))]
///     quantity: u32,
/// }
///
/// async fn trade(Valid(trade): Valid<Trade>) -> String {
///     format!("{} x{}", trade.symbol, trade.quantity)
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let app = Router::new().route("/trades", post(trade));
/// let post = |body: &'static str| {
///     Request::post("/trades")
///         .header("content-type", "application/json")
///         .body(Body::from(body))
///         .unwrap()
/// };
/// let ok = app.clone().oneshot(post(r#"{"symbol":"ACME","quantity":5}"#)).await.unwrap();
/// assert_eq!(ok.status(), 200);
/// let unknown = app.clone().oneshot(post(r#"{"symbol":"ACME","quantity":5,"price":1}"#)).await;
/// assert_eq!(unknown.unwrap().status(), 400);
/// let invalid = app.clone().oneshot(post(r#"{"symbol":""}"#)).await.unwrap();
/// assert_eq!(invalid.status(), 422);
/// let body = axum::body::to_bytes(invalid.into_body(), 1024).await.unwrap();
/// assert_eq!(
///     body,
///     r#"{"code":422,"errors":["quantity: lower than 1","symbol: length is lower than 1"]}"#
/// );
/// # });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Valid<T>(pub T);

/// Why a [`Valid`] body was refused; its response is the JSON shape DropWizard answers with.
///
/// ```
/// use ferrowizard::axum::response::IntoResponse;
/// use ferrowizard::extract::ValidRejection;
///
/// let refused = ValidRejection::Invalid(vec!["name: length is lower than 1".to_owned()]);
/// assert_eq!(refused.to_string(), "the body is not valid: name: length is lower than 1");
/// assert_eq!(refused.into_response().status(), 422);
/// ```
#[derive(Debug, thiserror::Error)]
pub enum ValidRejection {
    /// The request's content type is not JSON: 415.
    #[error("the body is not JSON (Content-Type: application/json expected)")]
    NotJson,
    /// The body could not be read (413 when it is longer than allowed).
    #[error("the body could not be read: {0}")]
    Body(#[from] BytesRejection),
    /// The body is not JSON, or not JSON that fits the type: 400, with serde_json's message
    /// and position.
    #[error("the body is not valid JSON: {0}")]
    Malformed(#[source] serde_json::Error),
    /// The body fails validation: 422, with every violation (`path: message`, sorted).
    #[error("the body is not valid: {}", .0.join("; "))]
    Invalid(Vec<String>),
}

impl IntoResponse for ValidRejection {
    fn into_response(self) -> Response {
        match self {
            ValidRejection::NotJson => {
                ErrorMessage::of(StatusCode::UNSUPPORTED_MEDIA_TYPE).into_response()
            }
            ValidRejection::Body(rejection) => {
                let status = rejection.status();
                if status == StatusCode::PAYLOAD_TOO_LARGE {
                    ErrorMessage::of(status).into_response()
                } else {
                    ErrorMessage::new(status, rejection.body_text()).into_response()
                }
            }
            ValidRejection::Malformed(e) => {
                ErrorMessage::new(StatusCode::BAD_REQUEST, e.to_string()).into_response()
            }
            ValidRejection::Invalid(errors) => {
                let code = StatusCode::UNPROCESSABLE_ENTITY;
                let body = serde_json::json!({ "code": code.as_u16(), "errors": errors });
                json_response(code, body.to_string())
            }
        }
    }
}

impl<S, T> FromRequest<S> for Valid<T>
where
    S: Send + Sync,
    T: DeserializeOwned + garde::Validate<Context = ()>,
{
    type Rejection = ValidRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if !json_content_type(req.headers()) {
            return Err(ValidRejection::NotJson);
        }
        let bytes = Bytes::from_request(req, state).await?;
        let value: T = serde_json::from_slice(&bytes).map_err(ValidRejection::Malformed)?;
        match value.validate() {
            Ok(()) => Ok(Valid(value)),
            Err(report) => {
                let mut errors: Vec<String> = report
                    .iter()
                    .map(|(path, error)| {
                        if path.is_empty() {
                            error.to_string()
                        } else {
                            format!("{path}: {error}")
                        }
                    })
                    .collect();
                // garde's order is its derive's to choose: sorted, the answer is the same
                // for the same body.
                errors.sort_unstable();
                Err(ValidRejection::Invalid(errors))
            }
        }
    }
}

/// Whether the request says its body is JSON: `application/json` or `application/*+json`,
/// parameters (`charset`) aside, as axum's `Json` decides.
fn json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let media = value.split(';').next().unwrap_or_default().trim();
    let Some((kind, subtype)) = media.split_once('/') else {
        return false;
    };
    let subtype = subtype.to_ascii_lowercase();
    kind.eq_ignore_ascii_case("application") && (subtype == "json" || subtype.ends_with("+json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_content_types_as_axum_has_them() {
        let with = |value: &'static str| {
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, http::HeaderValue::from_static(value));
            json_content_type(&h)
        };
        assert!(with("application/json"));
        assert!(with("application/json; charset=utf-8"));
        assert!(with("Application/JSON;charset=utf-8"));
        assert!(with("application/cloudevents+json"));
        assert!(!with("text/json"));
        assert!(!with("text/plain"));
        assert!(!with("application/jsonp"));
        assert!(!json_content_type(&HeaderMap::new()));
    }
}
