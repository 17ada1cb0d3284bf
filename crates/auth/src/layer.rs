//! `Authentication`: the tower layer that checks each request's credentials with the
//! application's authenticators, scheme after scheme.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use ferrowizard::ErrorMessage;
use ferrowizard::axum::extract::Request;
use ferrowizard::axum::http::{HeaderValue, StatusCode, header};
use ferrowizard::axum::response::{IntoResponse, Response};
use tower::{Layer, Service};

use crate::authenticator::{AuthError, Authenticator, Principal};
use crate::credentials::{BasicCredentials, BearerToken, Credentials};

type Checking<P> = Pin<Box<dyn Future<Output = Result<Option<P>, AuthError>> + Send>>;

/// A scheme's answer for an `Authorization` value of its own: the principal known at once (a
/// cache's hit), or the authenticator's check to wait for.
enum Checked<P> {
    Known(P),
    Checking(Checking<P>),
}

/// A scheme's check of an `Authorization` value (`None`: not this scheme's, or not
/// well-formed).
type Check<P> = Arc<dyn Fn(&str) -> Option<Checked<P>> + Send + Sync>;

/// One scheme (cloned with the builder that holds it): its challenge, and its check of an `Authorization` value (`None`: the value is
/// not this scheme's, or not well-formed).
struct Scheme<P> {
    challenge: HeaderValue,
    check: Check<P>,
}

impl<P> Clone for Scheme<P> {
    fn clone(&self) -> Self {
        Scheme {
            challenge: self.challenge.clone(),
            check: self.check.clone(),
        }
    }
}

/// The message of every 401, DropWizard's.
const REQUIRED: &str = "Credentials are required to access this resource.";

/// Authentication for the routes it wraps (`Router::layer`, or
/// [`Environment::layer`](ferrowizard::Environment::layer) for all of them): each request's
/// `Authorization` is tried against the schemes in the order they were added, and the first
/// authenticator that admits it gives the request its principal (for [`Auth`](crate::Auth)
/// and [`require_role`](crate::require_role)). A request no scheme admits is answered 401 with
/// DropWizard's JSON error and one `WWW-Authenticate` challenge per scheme; an authenticator
/// that fails answers 500, logged.
///
/// ```
/// use ferrowizard::axum::{Router, routing::get};
/// use ferrowizard_auth::{Authentication, BasicCredentials, BearerToken, Principal};
///
/// #[derive(Clone)]
/// struct Caller(String);
///
/// impl Principal for Caller {
///     fn name(&self) -> &str {
///         &self.0
///     }
/// }
///
/// let authentication = Authentication::new()
///     .basic("orders", |c: BasicCredentials| async move {
///         Ok((c.username == "ada" && c.password == "pw").then(|| Caller(c.username)))
///     })
///     .bearer("orders", |t: BearerToken| async move {
///         Ok((t.as_str() == "t0ken").then(|| Caller("service".into())))
///     });
/// let routes: Router = Router::new().route("/orders", get(|| async { "[]" })).layer(authentication);
/// ```
pub struct Authentication<P> {
    schemes: Arc<Vec<Scheme<P>>>,
    optional: bool,
}

impl<P> Clone for Authentication<P> {
    fn clone(&self) -> Self {
        Authentication {
            schemes: self.schemes.clone(),
            optional: self.optional,
        }
    }
}

impl<P: Principal> Default for Authentication<P> {
    fn default() -> Self {
        Authentication {
            schemes: Arc::new(Vec::new()),
            optional: false,
        }
    }
}

/// `SCHEME realm="REALM"`, the realm's quotes and backslashes left out.
fn challenge(scheme: &str, realm: &str) -> HeaderValue {
    let realm: String = realm
        .chars()
        .filter(|c| !matches!(c, '"' | '\\') && !c.is_control())
        .collect();
    HeaderValue::from_str(&format!("{scheme} realm=\"{realm}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("Basic"))
}

impl<P: Principal> Authentication<P> {
    /// No scheme yet: add them with [`basic`](Self::basic) and [`bearer`](Self::bearer).
    pub fn new() -> Self {
        Self::default()
    }

    fn push(mut self, scheme: Scheme<P>) -> Self {
        // A builder cloned before this call keeps its own schemes.
        let mut schemes = Arc::unwrap_or_clone(self.schemes);
        schemes.push(scheme);
        self.schemes = Arc::new(schemes);
        self
    }

    /// Adds the Basic scheme: `Authorization: Basic base64(user:password)`, checked by
    /// `authenticator`, challenged with `Basic realm="REALM"`.
    pub fn basic(
        self,
        realm: &str,
        authenticator: impl Authenticator<BasicCredentials, Principal = P>,
    ) -> Self {
        let authenticator = Arc::new(authenticator);
        self.push(Scheme {
            challenge: challenge("Basic", realm),
            check: Arc::new(move |value| {
                if let Some(principal) = authenticator.known(BasicCredentials::token(value)?) {
                    return Some(Checked::Known(principal));
                }
                let credentials = BasicCredentials::parse(value)?;
                let authenticator = authenticator.clone();
                Some(Checked::Checking(Box::pin(async move {
                    authenticator.authenticate(credentials).await
                })))
            }),
        })
    }

    /// Adds the Bearer scheme: `Authorization: Bearer TOKEN`, checked by `authenticator`,
    /// challenged with `Bearer realm="REALM"`.
    pub fn bearer(
        self,
        realm: &str,
        authenticator: impl Authenticator<BearerToken, Principal = P>,
    ) -> Self {
        let authenticator = Arc::new(authenticator);
        self.push(Scheme {
            challenge: challenge("Bearer", realm),
            check: Arc::new(move |value| {
                if let Some(principal) = authenticator.known(BearerToken::token(value)?) {
                    return Some(Checked::Known(principal));
                }
                let token = BearerToken::parse(value)?;
                let authenticator = authenticator.clone();
                Some(Checked::Checking(Box::pin(async move {
                    authenticator.authenticate(token).await
                })))
            }),
        })
    }

    /// Lets a request without an `Authorization` header through, with no principal (a
    /// handler takes `Option<Auth<P>>`); credentials given and refused are still answered
    /// 401.
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    fn unauthorized(&self) -> Response {
        let mut response = ErrorMessage::new(StatusCode::UNAUTHORIZED, REQUIRED).into_response();
        for scheme in self.schemes.iter() {
            response
                .headers_mut()
                .append(header::WWW_AUTHENTICATE, scheme.challenge.clone());
        }
        response
    }
}

impl<S, P> Layer<S> for Authentication<P> {
    type Service = Authenticated<S, P>;

    fn layer(&self, inner: S) -> Self::Service {
        Authenticated {
            inner,
            auth: self.clone(),
        }
    }
}

/// The service [`Authentication`] wraps a route in.
pub struct Authenticated<S, P> {
    inner: S,
    auth: Authentication<P>,
}

impl<S: Clone, P> Clone for Authenticated<S, P> {
    fn clone(&self) -> Self {
        Authenticated {
            inner: self.inner.clone(),
            auth: self.auth.clone(),
        }
    }
}

impl<S, P> Service<Request> for Authenticated<S, P>
where
    S: Service<Request, Response = Response, Error = Infallible> + Clone + Send + 'static,
    S::Future: Send + 'static,
    P: Principal,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut request: Request) -> Self::Future {
        // The ready service goes with the request; a clone takes its place.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let auth = self.auth.clone();
        Box::pin(async move {
            let value = request
                .headers()
                .get(header::AUTHORIZATION)
                .map(HeaderValue::to_str);
            let Some(value) = value else {
                if auth.optional {
                    return inner.call(request).await;
                }
                return Ok(auth.unauthorized());
            };
            // A value that is not visible ASCII is no scheme's.
            let value = value.unwrap_or_default();
            for scheme in auth.schemes.iter() {
                let checked = match (scheme.check)(value) {
                    None => continue,
                    Some(Checked::Known(principal)) => Ok(Some(principal)),
                    Some(Checked::Checking(checking)) => checking.await,
                };
                match checked {
                    Ok(Some(principal)) => {
                        let user = ferrowizard::server::RemoteUser::new(principal.name());
                        request.extensions_mut().insert(principal);
                        let mut response = inner.call(request).await?;
                        response.extensions_mut().insert(user);
                        return Ok(response);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        tracing::error!(target: "ferrowizard::auth", error = %e, "the authenticator failed");
                        return Ok(
                            ErrorMessage::of(StatusCode::INTERNAL_SERVER_ERROR).into_response()
                        );
                    }
                }
            }
            Ok(auth.unauthorized())
        })
    }
}
