//! The client's metrics under the names DropWizard's instrumented client gives them (Apache
//! HttpClient 5's classes, metrics-httpclient5), so that a DropWizard team's dashboards and
//! alerts read them unchanged:
//! - a timer per request name, `org.apache.hc.client5.http.classic.HttpClient.NAME.get-requests`
//!   by default ([`MetricNameStrategy`]), each attempt timed up to the response's head;
//! - a meter per kind of failure, named after the exception Apache's client throws for it;
//! - a meter of retries;
//! - the pool's gauges, `org.apache.hc.client5.http.io.HttpClientConnectionManager.NAME.*`.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock, RwLock};

use ferrowizard::metrics::{Meter, MetricRegistry, RegistryError, Timer};
use http::{Method, Uri};

use crate::stats::Stats;

/// The prefix of the request timers and failure meters.
const CLIENT: &str = "org.apache.hc.client5.http.classic.HttpClient";
/// The prefix of the pool's gauges.
const POOL: &str = "org.apache.hc.client5.http.io.HttpClientConnectionManager";

/// How the request timers are named: DropWizard's `HttpClientMetricNameStrategies`, given to
/// [`HttpClientConfiguration::build_with`](crate::HttpClientConfiguration::build_with).
///
/// ```
/// use ferrowizard_client::MetricNameStrategy;
/// use http::{Method, Uri};
///
/// let uri: Uri = "https://quotes.internal:8443/quotes/ACME?fresh=1".parse().unwrap();
/// let name = |s: MetricNameStrategy| s.name("quotes", &Method::GET, &uri);
/// let prefix = "org.apache.hc.client5.http.classic.HttpClient.quotes";
/// assert_eq!(name(MetricNameStrategy::MethodOnly), format!("{prefix}.get-requests"));
/// assert_eq!(name(MetricNameStrategy::HostAndMethod), format!("{prefix}.quotes.internal.get-requests"));
/// assert_eq!(
///     name(MetricNameStrategy::QuerylessUrlAndMethod),
///     format!("{prefix}.https://quotes.internal:8443/quotes/ACME.get-requests"),
/// );
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum MetricNameStrategy {
    /// One timer per method: `…HttpClient.NAME.get-requests` (DropWizard's default).
    #[default]
    MethodOnly,
    /// Per host and method: `…HttpClient.NAME.HOST.get-requests` (the host without its port).
    HostAndMethod,
    /// Per URL without its query, and method: `…HttpClient.NAME.URL.get-requests`.
    QuerylessUrlAndMethod,
}

impl MetricNameStrategy {
    /// The timer's name for a call of `client` with `method` to `uri`.
    pub fn name(self, client: &str, method: &Method, uri: &Uri) -> String {
        let method = method.as_str().to_ascii_lowercase();
        match self {
            MetricNameStrategy::MethodOnly => format!("{CLIENT}.{client}.{method}-requests"),
            MetricNameStrategy::HostAndMethod => format!(
                "{CLIENT}.{client}.{}.{method}-requests",
                uri.host().unwrap_or_default()
            ),
            MetricNameStrategy::QuerylessUrlAndMethod => {
                format!("{CLIENT}.{client}.{}.{method}-requests", queryless(uri))
            }
        }
    }
}

/// `uri` without its query (and without user info, which a URI in a call never needs).
pub(crate) fn queryless(uri: &Uri) -> String {
    let scheme = uri.scheme_str().unwrap_or("http");
    let host = uri.host().unwrap_or_default();
    match uri.port_u16() {
        Some(port) => format!("{scheme}://{host}:{port}{}", uri.path()),
        None => format!("{scheme}://{host}{}", uri.path()),
    }
}

/// The slot of a standard method's timer.
fn standard(method: &Method) -> Option<usize> {
    Some(match *method {
        Method::GET => 0,
        Method::POST => 1,
        Method::PUT => 2,
        Method::DELETE => 3,
        Method::HEAD => 4,
        Method::OPTIONS => 5,
        Method::PATCH => 6,
        Method::TRACE => 7,
        Method::CONNECT => 8,
        _ => return None,
    })
}

/// A failure, as Apache's client names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Failure {
    /// No lease within `connectionRequestTimeout`.
    LeaseTimeout,
    /// No connection within `connectionTimeout`.
    ConnectTimeout,
    /// The connection was refused or the host unreachable.
    Connect,
    /// The TLS handshake failed.
    Tls,
    /// No response (or no next piece of its body) within `timeout`.
    ResponseTimeout,
    /// The connection failed during the exchange.
    Io,
}

impl Failure {
    const ALL: [Failure; 6] = [
        Failure::LeaseTimeout,
        Failure::ConnectTimeout,
        Failure::Connect,
        Failure::Tls,
        Failure::ResponseTimeout,
        Failure::Io,
    ];

    fn exception(self) -> &'static str {
        match self {
            Failure::LeaseTimeout => "ConnectionRequestTimeoutException",
            Failure::ConnectTimeout => "ConnectTimeoutException",
            Failure::Connect => "HttpHostConnectException",
            Failure::Tls => "SSLException",
            Failure::ResponseTimeout => "SocketTimeoutException",
            Failure::Io => "SocketException",
        }
    }
}

/// A client's metrics.
pub(crate) struct Metrics {
    name: String,
    strategy: MetricNameStrategy,
    registry: MetricRegistry,
    timers: RwLock<HashMap<String, Timer>>,
    /// The timers of the standard methods, by [`standard`]'s slot: no lock, no hash.
    standard: [OnceLock<Option<Timer>>; 9],
    by_method: RwLock<HashMap<Method, Timer>>,
    failures: HashMap<Failure, Meter>,
    pub(crate) retries: Meter,
}

impl Metrics {
    /// Whether a client `name` has registered its metrics in `registry`.
    pub(crate) fn registered(registry: &MetricRegistry, name: &str) -> bool {
        registry.contains(&format!("{POOL}.{name}.max-connections"))
    }

    /// Registers the meters and the pool's gauges of the client `name`.
    pub(crate) fn register(
        registry: &MetricRegistry,
        name: &str,
        strategy: MetricNameStrategy,
        stats: &Arc<Stats>,
        max_connections: u32,
    ) -> Result<Metrics, RegistryError> {
        let mut failures = HashMap::new();
        for failure in Failure::ALL {
            let meter = registry.meter(&format!("{CLIENT}.{name}.{}", failure.exception()))?;
            failures.insert(failure, meter);
        }
        let retries = registry.meter(&format!("{CLIENT}.{name}.retries"))?;
        type Read = fn(&Stats) -> f64;
        let gauges: [(&str, Read); 3] = [
            ("available-connections", |s| {
                (s.open.load(Ordering::Relaxed) - s.leased.load(Ordering::Relaxed)).max(0) as f64
            }),
            ("leased-connections", |s| {
                s.leased.load(Ordering::Relaxed).max(0) as f64
            }),
            ("pending-connections", |s| {
                s.pending.load(Ordering::Relaxed).max(0) as f64
            }),
        ];
        for (gauge, read) in gauges {
            let stats = Arc::downgrade(stats);
            registry.gauge(&format!("{POOL}.{name}.{gauge}"), &[], move || {
                stats.upgrade().map_or(0.0, |s| read(&s))
            })?;
        }
        registry.gauge(&format!("{POOL}.{name}.max-connections"), &[], move || {
            f64::from(max_connections)
        })?;
        let weak = Arc::downgrade(stats);
        registry.counter_fn(
            &format!("{POOL}.{name}.opened-connections"),
            &[],
            move || {
                weak.upgrade()
                    .map_or(0.0, |s| s.opened.load(Ordering::Relaxed) as f64)
            },
        )?;
        let weak = Arc::downgrade(stats);
        registry.counter_fn(
            &format!("{POOL}.{name}.expired-connections"),
            &[],
            move || {
                weak.upgrade()
                    .map_or(0.0, |s| s.retired.load(Ordering::Relaxed) as f64)
            },
        )?;
        Ok(Metrics {
            name: name.to_owned(),
            strategy,
            registry: registry.clone(),
            timers: RwLock::default(),
            standard: Default::default(),
            by_method: RwLock::default(),
            failures,
            retries,
        })
    }

    /// The timer of a call with `method` to `uri`, registered the first time.
    pub(crate) fn timer(&self, method: &Method, uri: &Uri) -> Option<Timer> {
        if self.strategy == MetricNameStrategy::MethodOnly {
            if let Some(slot) = standard(method) {
                let timer = self.standard[slot].get_or_init(|| {
                    self.registry
                        .timer(&self.strategy.name(&self.name, method, uri))
                        .ok()
                });
                return timer.clone();
            }
            if let Some(timer) = self
                .by_method
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .get(method)
            {
                return Some(timer.clone());
            }
            let timer = self
                .registry
                .timer(&self.strategy.name(&self.name, method, uri))
                .ok()?;
            self.by_method
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .insert(method.clone(), timer.clone());
            return Some(timer);
        }
        let name = self.strategy.name(&self.name, method, uri);
        if let Some(timer) = self
            .timers
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&name)
        {
            return Some(timer.clone());
        }
        let timer = self.registry.timer(&name).ok()?;
        self.timers
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name, timer.clone());
        Some(timer)
    }

    /// Marks a failure.
    pub(crate) fn failed(&self, failure: Failure) {
        if let Some(meter) = self.failures.get(&failure) {
            meter.mark();
        }
    }
}
