//! The route of `bench/auth.sh` on plain axum, twice: `/open`, unauthenticated, and
//! `/guarded`, the same handler behind Basic authentication with the caching authenticator
//! (in front of a user store that compares the password in constant time).
//!
//!   cargo run --release -p ferrowizard-auth --example auth_bench -- 8095

use ferrowizard::axum::Router;
use ferrowizard::axum::routing::get;
use ferrowizard::metrics::MetricRegistry;
use ferrowizard_auth::{
    Auth, Authentication, BasicCredentials, CachePolicy, CachingAuthenticator, Principal,
    secrets_equal,
};

#[derive(Clone)]
struct User(String);

impl Principal for User {
    fn name(&self) -> &str {
        &self.0
    }
}

#[tokio::main]
async fn main() -> Result<(), ferrowizard::RunError> {
    let port: u16 = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "8095".into())
        .parse()?;
    let store = |c: BasicCredentials| async move {
        Ok((c.username == "ada" && secrets_equal(&c.password, "pw")).then_some(User(c.username)))
    };
    let cached = CachingAuthenticator::new(
        store,
        &CachePolicy::default(),
        "users",
        &MetricRegistry::new(),
    )?;
    let guarded = Router::new()
        .route(
            "/guarded",
            get(|Auth(u): Auth<User>| async move { format!("hello, {}", u.0) }),
        )
        .layer(Authentication::new().basic("bench", cached));
    let open = Router::new().route("/open", get(|| async { "hello, ada".to_owned() }));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    println!("listening on {}", listener.local_addr()?);
    ferrowizard::axum::serve(listener, open.merge(guarded)).await?;
    Ok(())
}
