//! The caching authenticator's keys at work: what is kept, for how long, and what is counted.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use ferrowizard::metrics::MetricRegistry;
use ferrowizard_auth::{
    Authenticator, BasicCredentials, CachePolicy, CachingAuthenticator, Principal,
};

#[derive(Clone, Debug)]
struct User(String);

impl Principal for User {
    fn name(&self) -> &str {
        &self.0
    }
}

fn policy(yaml: &str) -> CachePolicy {
    ferrowizard::config::loader(&[])
        .load_str("cache.yaml", yaml)
        .unwrap_or_else(|r| panic!("{r}"))
}

fn credentials(user: &str, password: &str) -> BasicCredentials {
    BasicCredentials {
        username: user.into(),
        password: password.into(),
    }
}

/// A store that counts how often it is asked; `pw` is every user's password.
fn cached(
    yaml: &str,
    metrics: &MetricRegistry,
) -> (
    impl Authenticator<BasicCredentials, Principal = User>,
    Arc<AtomicU32>,
) {
    let asked = Arc::new(AtomicU32::new(0));
    let counting = asked.clone();
    let store = move |c: BasicCredentials| {
        counting.fetch_add(1, Ordering::Relaxed);
        async move { Ok((c.password == "pw").then_some(User(c.username))) }
    };
    let cache = CachingAuthenticator::new(store, &policy(yaml), "users", metrics).unwrap();
    (cache, asked)
}

fn counted(metrics: &MetricRegistry, result: &str) -> f64 {
    metrics
        .counter_fn(
            "ferrowizard.auth.cache",
            &[("authenticator", "users"), ("result", result)],
            || -1.0,
        )
        .unwrap()
        .value()
}

/// Catches: good credentials asked again, refused ones kept, hits or misses not counted.
#[tokio::test]
async fn good_credentials_are_kept_and_refusals_are_asked_again() {
    let metrics = MetricRegistry::new();
    let (cache, asked) = cached("{}", &metrics);
    for _ in 0..3 {
        assert!(
            cache
                .authenticate(credentials("ada", "pw"))
                .await
                .unwrap()
                .is_some()
        );
        assert!(
            cache
                .authenticate(credentials("ada", "bad"))
                .await
                .unwrap()
                .is_none()
        );
    }
    // One for ada's good password, three for the bad one.
    assert_eq!(asked.load(Ordering::Relaxed), 4);
    assert_eq!(
        (counted(&metrics, "hit"), counted(&metrics, "miss")),
        (2.0, 4.0)
    );
}

/// Catches: expireAfterWrite not expiring.
#[tokio::test]
async fn expire_after_write_bounds_how_long_a_principal_is_kept() {
    for (yaml, expected) in [
        ("expireAfterWrite: 100ms\n", 2),
        ("expireAfterWrite: 1h\n", 1),
    ] {
        let (cache, asked) = cached(yaml, &MetricRegistry::new());
        assert!(
            cache
                .authenticate(credentials("ada", "pw"))
                .await
                .unwrap()
                .is_some()
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
        assert!(
            cache
                .authenticate(credentials("ada", "pw"))
                .await
                .unwrap()
                .is_some()
        );
        assert_eq!(asked.load(Ordering::Relaxed), expected, "{yaml}");
    }
}

/// Catches: maximumSize not bounding what is kept.
#[tokio::test]
async fn maximum_size_bounds_what_is_kept() {
    for (yaml, kept_all) in [("maximumSize: 1\n", false), ("maximumSize: 100\n", true)] {
        let (cache, asked) = cached(yaml, &MetricRegistry::new());
        let users: Vec<String> = (0..20).map(|i| format!("user{i}")).collect();
        for user in &users {
            cache.authenticate(credentials(user, "pw")).await.unwrap();
        }
        let before = asked.load(Ordering::Relaxed);
        for user in &users {
            cache.authenticate(credentials(user, "pw")).await.unwrap();
        }
        let asked_again = asked.load(Ordering::Relaxed) - before;
        assert_eq!(
            asked_again == 0,
            kept_all,
            "{yaml}: asked again {asked_again}"
        );
    }
}
