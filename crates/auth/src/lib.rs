#![doc = include_str!("../README.md")]
//!
//! ```
//! use ferrowizard::axum::{Router, routing::get};
//! use ferrowizard_auth::{Auth, Authentication, BasicCredentials, Principal, secrets_equal};
//!
//! #[derive(Clone)]
//! struct User {
//!     name: String,
//! }
//!
//! impl Principal for User {
//!     fn name(&self) -> &str {
//!         &self.name
//!     }
//! }
//!
//! async fn me(Auth(user): Auth<User>) -> String {
//!     format!("hello, {}", user.name)
//! }
//!
//! let authentication = Authentication::new().basic("orders", |c: BasicCredentials| async move {
//!     Ok(secrets_equal(&c.password, "s3cret").then(|| User { name: c.username }))
//! });
//! let routes: Router = Router::new().route("/me", get(me)).layer(authentication);
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod authenticator;
mod caching;
mod credentials;
mod extract;
mod jwt;
mod layer;
mod roles;

pub use authenticator::{AuthError, Authenticator, Principal};
pub use caching::{CachePolicy, CachingAuthenticator};
pub use credentials::{BasicCredentials, BearerToken, Credentials, secrets_equal};
pub use extract::Auth;
pub use jwt::{Claims, JwtAlgorithm, JwtAuthenticator, JwtError, JwtFactory, JwtKeyFactory};
pub use layer::{Authenticated, Authentication};
pub use roles::require_role;
