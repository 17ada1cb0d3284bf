//! `Auth<P>`: the principal [`Authentication`](crate::Authentication) found, for a handler.

use ferrowizard::ErrorMessage;
use ferrowizard::axum::extract::{FromRequestParts, OptionalFromRequestParts};
use ferrowizard::axum::http::StatusCode;
use ferrowizard::axum::http::request::Parts;

use crate::authenticator::Principal;

/// The request's principal, as the [`Authentication`](crate::Authentication) wrapping the
/// route found it: DropWizard's `@Auth`. `Option<Auth<P>>` is `None` for a request an
/// optional authentication let through without credentials. On a route no authentication
/// wraps, `Auth<P>` answers 500, saying so: the route is wired wrong, not the request.
///
/// ```
/// use ferrowizard_auth::{Auth, Principal};
///
/// #[derive(Clone)]
/// struct User(String);
///
/// impl Principal for User {
///     fn name(&self) -> &str {
///         &self.0
///     }
/// }
///
/// async fn me(Auth(user): Auth<User>) -> String {
///     user.0
/// }
///
/// async fn greeting(user: Option<Auth<User>>) -> String {
///     match user {
///         Some(Auth(user)) => format!("hello, {}", user.0),
///         None => "hello, stranger".to_owned(),
///     }
/// }
/// # let _ = ferrowizard::axum::Router::<()>::new()
/// #     .route("/me", ferrowizard::axum::routing::get(me))
/// #     .route("/hi", ferrowizard::axum::routing::get(greeting));
/// ```
#[derive(Clone, Debug)]
pub struct Auth<P>(pub P);

impl<P: Principal, S: Send + Sync> FromRequestParts<S> for Auth<P> {
    type Rejection = ErrorMessage;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, ErrorMessage> {
        parts
            .extensions
            .get::<P>()
            .cloned()
            .map(Auth)
            .ok_or_else(|| {
                ErrorMessage::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "this route takes a principal, but no Authentication wraps it",
                )
            })
    }
}

impl<P: Principal, S: Send + Sync> OptionalFromRequestParts<S> for Auth<P> {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Option<Self>, Self::Rejection> {
        Ok(parts.extensions.get::<P>().cloned().map(Auth))
    }
}
