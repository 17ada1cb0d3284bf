//! `require_role`: DropWizard's `@RolesAllowed`, as a layer.

use std::convert::Infallible;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use ferrowizard::ErrorMessage;
use ferrowizard::axum::extract::Request;
use ferrowizard::axum::http::StatusCode;
use ferrowizard::axum::response::{IntoResponse, Response};
use tower::{Layer, Service};

use crate::authenticator::Principal;

/// Lets through only the requests whose principal has `role`; others are answered 403 with
/// DropWizard's `{"code":403,"message":"User not authorized."}`, and requests with no
/// principal 401. Put it inside an [`Authentication`](crate::Authentication) (added before
/// it, so that it runs after).
///
/// ```
/// use ferrowizard::axum::{Router, routing::post};
/// use ferrowizard_auth::{Authentication, BasicCredentials, Principal, require_role};
///
/// #[derive(Clone)]
/// struct User { name: String, admin: bool }
///
/// impl Principal for User {
///     fn name(&self) -> &str { &self.name }
///     fn has_role(&self, role: &str) -> bool { role == "admin" && self.admin }
/// }
///
/// let authentication = Authentication::new().basic("orders", |c: BasicCredentials| async move {
///     Ok(Some(User { admin: c.username == "root", name: c.username }))
/// });
/// let admin: Router = Router::new()
///     .route("/admin/purge", post(|| async { "purged" }))
///     .layer(require_role::<User>("admin"))
///     .layer(authentication);
/// ```
pub fn require_role<P: Principal>(role: &'static str) -> RequireRole<P> {
    RequireRole {
        role,
        principal: PhantomData,
    }
}

/// The layer [`require_role`] makes.
pub struct RequireRole<P> {
    role: &'static str,
    principal: PhantomData<fn() -> P>,
}

impl<P> Clone for RequireRole<P> {
    fn clone(&self) -> Self {
        RequireRole {
            role: self.role,
            principal: PhantomData,
        }
    }
}

impl<S, P> Layer<S> for RequireRole<P> {
    type Service = RoleGuard<S, P>;

    fn layer(&self, inner: S) -> Self::Service {
        RoleGuard {
            inner,
            role: self.clone(),
        }
    }
}

/// The service [`require_role`] wraps a route in.
pub struct RoleGuard<S, P> {
    inner: S,
    role: RequireRole<P>,
}

impl<S: Clone, P> Clone for RoleGuard<S, P> {
    fn clone(&self) -> Self {
        RoleGuard {
            inner: self.inner.clone(),
            role: self.role.clone(),
        }
    }
}

impl<S, P> Service<Request> for RoleGuard<S, P>
where
    S: Service<Request, Response = Response, Error = Infallible> + Send + 'static,
    S::Future: Send + 'static,
    P: Principal,
{
    type Response = Response;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request) -> Self::Future {
        let refusal = match request.extensions().get::<P>() {
            Some(p) if p.has_role(self.role.role) => None,
            Some(_) => Some(ErrorMessage::new(
                StatusCode::FORBIDDEN,
                "User not authorized.",
            )),
            None => Some(ErrorMessage::new(
                StatusCode::UNAUTHORIZED,
                "Credentials are required to access this resource.",
            )),
        };
        match refusal {
            Some(message) => Box::pin(async move { Ok(message.into_response()) }),
            None => Box::pin(self.inner.call(request)),
        }
    }
}
