//! What the application supplies: its principal, and how credentials become one.

use std::future::Future;

/// Who is calling, as the application knows it: a user, a service account. Its name is what
/// the request log shows (`%u`); its roles are what [`require_role`](crate::require_role)
/// asks.
///
/// ```
/// use ferrowizard_auth::Principal;
///
/// #[derive(Clone)]
/// struct User {
///     name: String,
///     admin: bool,
/// }
///
/// impl Principal for User {
///     fn name(&self) -> &str {
///         &self.name
///     }
///
///     fn has_role(&self, role: &str) -> bool {
///         role == "admin" && self.admin
///     }
/// }
///
/// let ada = User { name: "ada".into(), admin: true };
/// assert!(ada.has_role("admin"));
/// ```
pub trait Principal: Clone + Send + Sync + 'static {
    /// The name the request log shows.
    fn name(&self) -> &str;

    /// Whether it has `role`: none unless told otherwise.
    fn has_role(&self, role: &str) -> bool {
        let _ = role;
        false
    }
}

/// An authenticator that could not decide (its user store is down, say): the request is
/// answered 500 and the error logged, as DropWizard answers an `AuthenticationException`.
///
/// ```
/// let e = ferrowizard_auth::AuthError::new("user store unreachable");
/// assert_eq!(e.to_string(), "user store unreachable");
/// ```
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AuthError(String);

impl AuthError {
    /// An error saying `why`.
    pub fn new(why: impl Into<String>) -> AuthError {
        AuthError(why.into())
    }
}

/// Turns credentials `C` ([`BasicCredentials`](crate::BasicCredentials) or
/// [`BearerToken`](crate::BearerToken)) into the application's principal: `Some` when they
/// are good, `None` when they are not (the request is answered 401). Implemented for async
/// closures taking the credentials.
///
/// ```
/// use ferrowizard_auth::{AuthError, Authenticator, BearerToken, Principal, secrets_equal};
///
/// #[derive(Clone)]
/// struct Service(String);
///
/// impl Principal for Service {
///     fn name(&self) -> &str {
///         &self.0
///     }
/// }
///
/// struct Tokens;
///
/// impl Authenticator<BearerToken> for Tokens {
///     type Principal = Service;
///
///     async fn authenticate(&self, token: BearerToken) -> Result<Option<Service>, AuthError> {
///         Ok(secrets_equal(token.as_str(), "t0ken").then(|| Service("billing".into())))
///     }
/// }
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let found = Tokens.authenticate(BearerToken::new("t0ken")).await.unwrap();
/// assert_eq!(found.unwrap().name(), "billing");
/// # });
/// ```
pub trait Authenticator<C>: Send + Sync + 'static {
    /// What good credentials become.
    type Principal: Principal;

    /// Checks `credentials`.
    fn authenticate(
        &self,
        credentials: C,
    ) -> impl Future<Output = Result<Option<Self::Principal>, AuthError>> + Send;

    /// The principal of the credentials sent as `token` (the `Authorization` value after the
    /// scheme, not yet decoded: see [`Credentials`](crate::Credentials)) when it is known at
    /// once, without waiting (a cache's hit): the schemes ask this first, and decode the
    /// credentials for [`authenticate`](Self::authenticate) only on `None`. None unless told
    /// otherwise; [`CachingAuthenticator`](crate::CachingAuthenticator) answers from its
    /// cache.
    fn known(&self, token: &str) -> Option<Self::Principal> {
        let _ = token;
        None
    }
}

impl<C, P, F, Fut> Authenticator<C> for F
where
    C: Send + 'static,
    P: Principal,
    F: Fn(C) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Option<P>, AuthError>> + Send,
{
    type Principal = P;

    fn authenticate(
        &self,
        credentials: C,
    ) -> impl Future<Output = Result<Option<P>, AuthError>> + Send {
        self(credentials)
    }
}
