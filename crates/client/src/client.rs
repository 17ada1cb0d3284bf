//! `HttpClient`: a section built into a client, and each call it makes.

use std::error::Error as _;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use ferrowizard::{Environment, Managed, RunError};
use http::header::USER_AGENT;
use http::{HeaderValue, Method, Request, Response};
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::capture_connection;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use tracing::Instrument;
use tracing::field::Empty;

use crate::body::Body;
use crate::config::HttpClientConfiguration;
use crate::connect::{Born, ConnectError, Connector};
use crate::error::{BuildError, ClientError};
use crate::lease::Leases;
use crate::metrics::{Failure, MetricNameStrategy, Metrics, queryless};
use crate::stats::Stats;

/// A client of other services, built from an `httpClient` section: a pool of connections
/// started and stopped with the service, timed and counted, that passes the request being
/// handled on to the service it calls (its `X-Request-Id`, and its trace as `traceparent`)
/// inside a span of its own. Clone it into the routes' state: clones share the pool.
///
/// ```no_run
/// use ferrowizard::axum::{extract::{Path, State}, routing::get, Router};
/// use ferrowizard_client::{ClientError, HttpClient};
///
/// async fn quote(State(quotes): State<HttpClient>, Path(symbol): Path<String>) -> Result<String, ClientError> {
///     let response = quotes.get(&format!("http://127.0.0.1:8080/quotes/{symbol}")).await?;
///     response.into_body().text().await
/// }
///
/// # async fn run(config: &ferrowizard_client::HttpClientConfiguration, env: &mut ferrowizard::Environment) -> Result<(), ferrowizard::RunError> {
/// let quotes = config.build("quotes", env)?;
/// env.routes(Router::new().route("/quotes/{symbol}", get(quote)).with_state(quotes));
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct HttpClient {
    inner: Arc<Inner>,
}

struct Inner {
    name: Arc<str>,
    /// `None` once the service has stopped it.
    hyper: RwLock<Option<Client<Connector, Full<Bytes>>>>,
    leases: Arc<Leases>,
    stats: Arc<Stats>,
    metrics: Arc<Metrics>,
    timeout: Duration,
    lease_wait: Duration,
    retries: u32,
    user_agent: HeaderValue,
}

impl HttpClientConfiguration {
    /// Builds the client `name` and registers it with `environment`: a managed resource
    /// (`http client NAME`, whose stop closes its connections after the last request) and its
    /// metrics, with DropWizard's names (request timers by method: see
    /// [`build_with`](Self::build_with) for the other strategies). Call it from
    /// [`Application::run`](ferrowizard::Application::run).
    pub fn build(
        &self,
        name: &str,
        environment: &mut Environment,
    ) -> Result<HttpClient, BuildError> {
        self.build_with(name, MetricNameStrategy::MethodOnly, environment)
    }

    /// [`build`](Self::build), with the request timers named by `strategy`.
    ///
    /// ```
    /// use ferrowizard_client::{HttpClientConfiguration, MetricNameStrategy};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let mut environment = ferrowizard::Environment::named("orders");
    /// let section = HttpClientConfiguration::default();
    /// let quotes = section.build_with("quotes", MetricNameStrategy::HostAndMethod, &mut environment).unwrap();
    /// assert_eq!(quotes.name(), "quotes");
    /// # });
    /// ```
    pub fn build_with(
        &self,
        name: &str,
        strategy: MetricNameStrategy,
        environment: &mut Environment,
    ) -> Result<HttpClient, BuildError> {
        if Metrics::registered(environment.metrics(), name) {
            return Err(BuildError::Duplicate(name.to_owned()));
        }
        let tls = crate::tls::client_config(self.tls.as_ref())?;
        let stats = Arc::new(Stats::default());
        let connector = Connector {
            tls: tokio_rustls::TlsConnector::from(Arc::new(tls)),
            timeout: self.connection_timeout.get(),
            time_to_live: self.time_to_live.get(),
            stats: stats.clone(),
        };
        let keep_alive = self.keep_alive.get();
        let mut builder = Client::builder(TokioExecutor::new());
        builder.pool_timer(TokioTimer::new()).set_host(true);
        if keep_alive.is_zero() {
            // `keepAlive: 0ms`: no connection is used twice.
            builder.pool_max_idle_per_host(0);
        } else {
            builder
                .pool_idle_timeout(keep_alive)
                .pool_max_idle_per_host(self.max_connections_per_route as usize);
        }
        let hyper = builder.build(connector);
        let metrics = Metrics::register(
            environment.metrics(),
            name,
            strategy,
            &stats,
            self.max_connections,
        )
        .map_err(|source| BuildError::Metrics {
            name: name.to_owned(),
            source,
        })?;
        let user_agent = match &self.user_agent {
            Some(agent) => agent.clone(),
            None if environment.name().is_empty() => name.to_owned(),
            None => format!("{} ({name})", environment.name()),
        };
        let user_agent = HeaderValue::from_str(&user_agent).map_err(|_| {
            BuildError::Tls(format!(
                "userAgent {user_agent:?} is not a valid header value"
            ))
        })?;
        let client = HttpClient {
            inner: Arc::new(Inner {
                name: Arc::from(name),
                hyper: RwLock::new(Some(hyper)),
                leases: Arc::new(Leases::new(
                    self.max_connections,
                    self.max_connections_per_route,
                    self.connection_request_timeout.get(),
                    stats.clone(),
                )),
                stats,
                metrics: Arc::new(metrics),
                timeout: self.timeout.get(),
                lease_wait: self.connection_request_timeout.get(),
                retries: self.retries,
                user_agent,
            }),
        };
        environment.manage(client.clone());
        Ok(client)
    }
}

/// Methods whose request may be sent twice with the effect of once (RFC 9110).
fn idempotent(method: &Method) -> bool {
    matches!(
        *method,
        Method::GET | Method::HEAD | Method::PUT | Method::DELETE | Method::OPTIONS | Method::TRACE
    )
}

impl HttpClient {
    /// The name it was built with.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// `GET uri`.
    pub async fn get(&self, uri: &str) -> Result<Response<Body>, ClientError> {
        let request = Request::get(uri)
            .body(Bytes::new())
            .map_err(|e| self.refused(e.to_string()))?;
        self.send(request).await
    }

    /// Sends `request` (an absolute `http://` or `https://` URI) and returns the response once
    /// its head has come; read its body with [`Body::bytes`] or [`Body::text`]. The call
    /// - waits for a lease at most `connectionRequestTimeout` when `maxConnections` or
    ///   `maxConnectionsPerRoute` are in use;
    /// - reuses an idle connection to the same host, or opens one within `connectionTimeout`;
    /// - carries `User-Agent`, and the request being handled ([`ferrowizard::trace::propagate`]);
    /// - is sent again, up to `retries` times, when it is idempotent and its connection failed;
    /// - ends with [`ClientError::Timeout`] when the head does not come within `timeout`.
    ///
    /// Any status is a response, not an error.
    pub async fn send(&self, request: Request<Bytes>) -> Result<Response<Body>, ClientError> {
        let (mut parts, body) = request.into_parts();
        let uri = parts.uri.clone();
        let (https, host) = match (uri.scheme_str(), uri.host()) {
            (Some("https"), Some(host)) => (true, host),
            (Some("http"), Some(host)) => (false, host),
            _ => {
                return Err(
                    self.refused(format!("{uri} is not an absolute http:// or https:// URL"))
                );
            }
        };
        let span = tracing::info_span!(
            target: "ferrowizard::client",
            "http.client.request",
            otel.name = parts.method.as_str(),
            otel.kind = "client",
            otel.status_code = Empty,
            http.request.method = parts.method.as_str(),
            server.address = host,
            server.port = Empty,
            url.full = Empty,
            http.response.status_code = Empty,
            http.request.resend_count = Empty,
            client.name = &*self.inner.name,
        );
        if !span.is_disabled() {
            let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
            span.record("server.port", i64::from(port));
            span.record("url.full", queryless(&uri));
        }
        if !parts.headers.contains_key(USER_AGENT) {
            parts
                .headers
                .insert(USER_AGENT, self.inner.user_agent.clone());
        }
        ferrowizard::trace::propagate(&mut parts.headers, &span);
        let timer = self.inner.metrics.timer(&parts.method, &uri);
        let call = async move {
            let inner = &self.inner;
            let authority = uri.authority().map_or("", |a| a.as_str());
            let Some(lease) = inner.leases.lease(https, authority).await else {
                inner.metrics.failed(Failure::LeaseTimeout);
                return Err(ClientError::PoolTimeout {
                    client: inner.name.to_string(),
                    url: queryless(&uri),
                    waited: inner.lease_wait,
                });
            };
            let retries = if idempotent(&parts.method) {
                inner.retries
            } else {
                0
            };
            let mut last = Some((parts, body));
            let mut attempt = 0;
            loop {
                // The last attempt sends the request itself; one before it, a copy.
                let (mut request, copy) = match last.take() {
                    Some((parts, body)) if attempt < retries => {
                        let mut copy = Request::new(Full::new(body.clone()));
                        *copy.method_mut() = parts.method.clone();
                        *copy.uri_mut() = parts.uri.clone();
                        *copy.version_mut() = parts.version;
                        *copy.headers_mut() = parts.headers.clone();
                        (copy, Some((parts, body)))
                    }
                    Some((parts, body)) => (Request::from_parts(parts, Full::new(body)), None),
                    None => unreachable!("each attempt but the last keeps the request"),
                };
                last = copy;
                // Which connection the call gets is watched only while a connection has
                // outlived timeToLive, to retire it.
                let connection = (inner.stats.expired_open.load(Ordering::Relaxed) > 0)
                    .then(|| capture_connection(&mut request));
                let started = Instant::now();
                let sent = {
                    let hyper = inner.hyper.read().unwrap_or_else(|e| e.into_inner());
                    match hyper.as_ref() {
                        Some(hyper) => hyper.request(request),
                        None => return Err(self.refused("the client is stopped".to_owned())),
                    }
                };
                let answered = tokio::time::timeout(inner.timeout, sent).await;
                if let Some(timer) = &timer {
                    timer.update(started.elapsed());
                }
                let error = match answered {
                    Ok(Ok(response)) => {
                        let span = tracing::Span::current();
                        let status = response.status().as_u16();
                        span.record("http.response.status_code", i64::from(status));
                        if status >= 500 {
                            span.record("otel.status_code", "error");
                        }
                        if let Some(Born(age)) = response.extensions().get::<Born>()
                            && age.expired()
                            && let Some(connection) = &connection
                            && let Some(connected) = connection.connection_metadata().as_ref()
                            && age.settle(&inner.stats)
                        {
                            // Older than timeToLive: this response is its last.
                            connected.poison();
                            inner.stats.retired.fetch_add(1, Ordering::Relaxed);
                        }
                        return Ok(response.map(|incoming| {
                            Body::new(
                                incoming,
                                inner.timeout,
                                lease,
                                inner.name.clone(),
                                uri,
                                inner.metrics.clone(),
                            )
                        }));
                    }
                    Ok(Err(error)) => error,
                    Err(_) => {
                        inner.metrics.failed(Failure::ResponseTimeout);
                        tracing::Span::current().record("otel.status_code", "error");
                        return Err(ClientError::Timeout {
                            client: inner.name.to_string(),
                            url: queryless(&uri),
                            waited: inner.timeout,
                        });
                    }
                };
                tracing::Span::current().record("otel.status_code", "error");
                if error.is_connect() {
                    let (failure, why, timed_out) = connect_failure(&error);
                    inner.metrics.failed(failure);
                    return Err(ClientError::Connect {
                        client: inner.name.to_string(),
                        url: queryless(&uri),
                        why,
                        timed_out,
                    });
                }
                if last.is_none() {
                    inner.metrics.failed(Failure::Io);
                    return Err(ClientError::Io {
                        client: inner.name.to_string(),
                        url: queryless(&uri),
                        why: causes(&error),
                    });
                }
                attempt += 1;
                inner.metrics.retries.mark();
                tracing::Span::current().record("http.request.resend_count", attempt);
            }
        };
        // No subscriber wants the span (or no export): nothing to enter on each poll.
        if span.is_disabled() {
            call.await
        } else {
            call.instrument(span).await
        }
    }

    fn refused(&self, why: String) -> ClientError {
        ClientError::Request {
            client: self.inner.name.to_string(),
            why,
        }
    }
}

/// The failure of a connection that could not be opened, what to say of it, and whether
/// `connectionTimeout` ran out.
fn connect_failure(error: &hyper_util::client::legacy::Error) -> (Failure, String, bool) {
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(connect) = cause.downcast_ref::<ConnectError>() {
            let failure = match connect {
                ConnectError::Timeout { .. } => Failure::ConnectTimeout,
                ConnectError::Tls { .. } => Failure::Tls,
                _ => Failure::Connect,
            };
            return (
                failure,
                connect.to_string(),
                matches!(connect, ConnectError::Timeout { .. }),
            );
        }
        source = cause.source();
    }
    (Failure::Connect, causes(error), false)
}

/// An error and its causes, `: `-separated.
fn causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

impl Managed for HttpClient {
    async fn start(&self) -> Result<(), RunError> {
        Ok(())
    }

    /// Closes the pool: idle connections at once, the others as their calls end; a call made
    /// after it is refused.
    async fn stop(&self) -> Result<(), RunError> {
        let hyper = self
            .inner
            .hyper
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        drop(hyper);
        Ok(())
    }

    fn name(&self) -> String {
        format!("http client {}", self.inner.name)
    }
}
