//! `CachingAuthenticator`: DropWizard's, on quick_cache: the principals of good credentials
//! kept for a while, so that a user store is not asked on every request.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use ferrowizard::Config;
use ferrowizard::config::{Duration, positive_duration};
use ferrowizard::metrics::MetricRegistry;

use crate::authenticator::{AuthError, Authenticator, Principal};
use crate::credentials::Credentials;

/// A cache of authentications, as an application's configuration holds it (DropWizard's
/// `authenticationCachePolicy`, in two keys).
///
/// ```
/// use ferrowizard::config::Duration;
/// use ferrowizard_auth::CachePolicy;
///
/// let policy: CachePolicy = ferrowizard::config::loader(&[])
///     .load_str("auth.yaml", "maximumSize: 500\nexpireAfterWrite: 1m\n")
///     .unwrap();
/// assert_eq!((policy.maximum_size, policy.expire_after_write), (500, Duration::minutes(1)));
/// ```
#[derive(Clone, Debug, PartialEq, Config)]
pub struct CachePolicy {
    /// The most credentials kept; the least used go first (quick_cache's S3-FIFO: a
    /// principal asked for again is kept over one that was not).
    #[config(default = 10_000, range(min = 1))]
    pub maximum_size: u64,
    /// How long a principal is kept after its credentials were checked.
    #[config(default = Duration::minutes(10), custom(positive_duration))]
    pub expire_after_write: Duration,
}

/// An authenticator in front of another, keeping the principals of good credentials by
/// [`CachePolicy`]; credentials refused are asked again each time (DropWizard caches no
/// refusal). Counts `ferrowizard.auth.cache{authenticator=NAME,result=hit|miss}`. The
/// principals are kept by the token the credentials are sent as ([`Credentials::sent`]), so
/// that a hit is answered at once ([`Authenticator::known`]) from the request's header, with
/// nothing decoded and no future to wait on.
///
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU32, Ordering};
/// use ferrowizard::metrics::MetricRegistry;
/// use ferrowizard_auth::{Authenticator, BasicCredentials, CachePolicy, CachingAuthenticator, Principal};
///
/// #[derive(Clone)]
/// struct User(String);
/// impl Principal for User {
///     fn name(&self) -> &str { &self.0 }
/// }
///
/// let asked = Arc::new(AtomicU32::new(0));
/// let counting = asked.clone();
/// let store = move |c: BasicCredentials| {
///     counting.fetch_add(1, Ordering::Relaxed);
///     async move { Ok((c.password == "pw").then_some(User(c.username))) }
/// };
/// let cached = CachingAuthenticator::new(store, &CachePolicy::default(), "users", &MetricRegistry::new()).unwrap();
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let ada = || BasicCredentials { username: "ada".into(), password: "pw".into() };
/// assert!(cached.authenticate(ada()).await.unwrap().is_some());
/// assert!(cached.authenticate(ada()).await.unwrap().is_some());
/// assert_eq!(asked.load(Ordering::Relaxed), 1);
/// # });
/// ```
pub struct CachingAuthenticator<A, C, P> {
    inner: A,
    /// Each principal with the moment it expires.
    cache: quick_cache::sync::Cache<String, (P, coarsetime::Instant)>,
    ttl: coarsetime::Duration,
    credentials: std::marker::PhantomData<fn(C)>,
    hits: Arc<AtomicU64>,
    misses: Arc<AtomicU64>,
}

impl<A, C, P> CachingAuthenticator<A, C, P>
where
    A: Authenticator<C, Principal = P>,
    C: Credentials,
    P: Principal,
{
    /// `inner`, cached by `policy`; its counters are registered in `metrics` under `name`.
    pub fn new(
        inner: A,
        policy: &CachePolicy,
        name: &str,
        metrics: &MetricRegistry,
    ) -> Result<Self, ferrowizard::metrics::RegistryError> {
        let capacity = usize::try_from(policy.maximum_size).unwrap_or(usize::MAX);
        let cache = quick_cache::sync::Cache::new(capacity);
        let ttl = coarsetime::Duration::from(policy.expire_after_write.get());
        let hits = Arc::new(AtomicU64::new(0));
        let misses = Arc::new(AtomicU64::new(0));
        metrics.describe(
            "ferrowizard.auth.cache",
            "Authentications answered from the cache (hit) or by the authenticator (miss)",
        );
        for (result, count) in [("hit", &hits), ("miss", &misses)] {
            let count = count.clone();
            metrics.counter_fn(
                "ferrowizard.auth.cache",
                &[("authenticator", name), ("result", result)],
                move || count.load(Ordering::Relaxed) as f64,
            )?;
        }
        Ok(CachingAuthenticator {
            inner,
            cache,
            ttl,
            credentials: std::marker::PhantomData,
            hits,
            misses,
        })
    }

    /// Forgets every principal kept (DropWizard's `invalidateAll`): after a password change,
    /// say.
    pub fn invalidate_all(&self) {
        self.cache.clear();
    }
}

impl<A, C, P> Authenticator<C> for CachingAuthenticator<A, C, P>
where
    A: Authenticator<C, Principal = P>,
    C: Credentials,
    P: Principal,
{
    type Principal = P;

    async fn authenticate(&self, credentials: C) -> Result<Option<P>, AuthError> {
        let sent = credentials.sent();
        if let Some(principal) = self.known(&sent) {
            return Ok(Some(principal));
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let found = self.inner.authenticate(credentials).await?;
        if let Some(principal) = &found {
            let expires = coarsetime::Instant::now() + self.ttl;
            self.cache.insert(sent, (principal.clone(), expires));
        }
        Ok(found)
    }

    fn known(&self, token: &str) -> Option<P> {
        let (principal, expires) = self.cache.get(token)?;
        // The coarse clock (a few milliseconds' resolution) is enough for a time to live of
        // seconds or minutes, at a fraction of a precise reading's cost.
        if coarsetime::Instant::now() >= expires {
            self.cache.remove(token);
            return None;
        }
        self.hits.fetch_add(1, Ordering::Relaxed);
        Some(principal)
    }
}
