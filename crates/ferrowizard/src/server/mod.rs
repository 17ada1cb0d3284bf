//! The server: connectors from `server:`, the request pipeline, the request log, the admin
//! interface, and graceful shutdown.
//!
//! An application uses [`Server`] (through [`crate::run`], or directly in a test), gives it
//! [`Routes`], and reads a request's [`Client`]; the rest of this module is internal.
//!
//! # A request's stages
//!
//! Each stage is a module, called once per request, in this order; each hands the next what
//! it found as a value, and none calls back into the one that called it.
//!
//! ```text
//!  accept ──▶ connection ──▶ Pipeline: receive ─▶ observe ─▶ admit ─▶ route ─▶ handle ─▶ respond ─▶ measure ─▶ log
//!  connection/             pipeline/                                                                          request_log/
//!    accept.rs mod.rs        mod.rs receive.rs observe.rs admit.rs route.rs handle.rs respond.rs metrics.rs     mod.rs
//! ```
//!
//! The three folders are the three stages of the drawing: `connection/` (a connection's life:
//! accepting, TLS, timeouts, a trusted proxy's client, the connection limits), `pipeline/` (one
//! request, receive to measure) and `request_log/` (the line, its entry and its formats).
//!
//! | stage | module | what it does | hands on |
//! |---|---|---|---|
//! | accept | `connection::accept` | accepts a connection, TLS handshake, counts it | the connection |
//! | connection | `connection` | hyper reads each request; `ConnectInfo`, a trusted proxy's client, timeouts | the request, its `Respond` part |
//! | receive | `pipeline::receive` | arrival time; the headers the later stages need, read once | `Received` (time, request-log entry, whether errors go out as JSON) |
//! | observe | `pipeline::observe` | with `requestId` or `traceContext`: the request's ID, its W3C trace context (for handlers), the logging context with both; the `http.server.request` span (opened once the route is known, entered while the router runs, given the status by respond) | an `Observation` |
//! | admit | `pipeline::admit` | 405 `allowedMethods`, 413 `maxRequestBodySize`, 503 `maxThreads` + `maxQueuedRequests` | a `Place` (running or queued), or the refusal |
//! | route | `pipeline::route` | the known template the path matches (matchit) | a `Route` |
//! | handle | `pipeline::handle` | the application's axum router, compression, a panic as 500 | the response (with `Matched` from a merged router's route layer) |
//! | respond | `pipeline::respond` | a server error's JSON body for a JSON client ([`crate::ErrorMessage`]), `Vary`, `Server`, the request's end for the connection's timeouts | the response, in place |
//! | measure | `pipeline::metrics` | `ferrowizard.requests`, `.responses`, `.routes` timers | |
//! | log | `request_log` | the request-log line (at once, or when a streamed body ends) | |
//!
//! `pipeline` strings receive to log together in one service whose future is the one hyper
//! polls; `activity` is the connection's clock (bytes moved, heads pending, requests in
//! flight), kept by the connection's stream and by each request until it is answered.

pub(crate) mod connection;
pub(crate) mod pipeline;
pub(crate) mod request_log;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::server::{ConnectorFactory, ServerFactory, TlsProtocol};
pub use connection::forwarded::Client;
use connection::pressure::{Connections, Limits};
use connection::{ConnectionSettings, HttpService};
use ferrowizard_metrics::{MetricRegistry, RegistryError};
use pipeline::admit::Overload;
use pipeline::metrics::RequestMetrics;
use pipeline::route::RouteTable;
pub use pipeline::route::Routes;
use pipeline::{Pipeline, PipelineSettings};
use request_log::RequestLog;
pub use request_log::entry::RemoteUser;

/// A startup failure, printed as one line.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A connector could not bind.
    #[error("cannot listen on {addr} ({what}): {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Which connector.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// A bad `bindHost`.
    #[error("{what}: bindHost {host:?} is not an IP address")]
    Host {
        /// Which connector.
        what: String,
        /// The value.
        host: String,
    },
    /// TLS files that cannot be used.
    #[error("{what}: {message}")]
    Tls {
        /// Which connector.
        what: String,
        /// Why.
        message: String,
    },
    /// The request log's appenders could not start.
    #[error("server.requestLog: {0}")]
    RequestLog(#[from] ferrowizard_logging::BuildError),
    /// A metric name taken by another kind of metric (the application registered one of
    /// ferrowizard's names).
    #[error("metrics: {0}")]
    Metrics(#[from] RegistryError),
    /// On the simple server, an application route under the admin interface's context path.
    #[error(
        "server.adminContextPath {prefix:?}: the application has a route there ({why}); \
         give the admin interface another adminContextPath or move the route"
    )]
    AdminPathTaken {
        /// The admin context path.
        prefix: String,
        /// matchit's account of the conflict.
        why: String,
    },
}

/// One listening connector.
#[derive(Clone, Debug)]
pub struct Bound {
    /// `application` or `admin`.
    pub role: &'static str,
    /// `http` or `https`.
    pub scheme: &'static str,
    /// The address actually bound (port 0 resolved).
    pub addr: SocketAddr,
}

/// A server whose connectors are bound and serving.
pub struct Server {
    bound: Vec<Bound>,
    shutdown: watch::Sender<bool>,
    /// The application connectors' open connections, one set per connector.
    connections: Vec<Connections>,
    admin_runtime: Option<(std::thread::JoinHandle<()>, watch::Sender<bool>)>,
    request_log: Option<Arc<RequestLog>>,
    grace: Duration,
    overloads: Vec<Arc<Overload>>,
    /// The application's WebSockets and event streams, ended at shutdown.
    streams: Option<crate::stream::Streams>,
}

struct Plan {
    role: &'static str,
    connector: ConnectorFactory,
    default_host: IpAddr,
    /// Requests running at once, and waiting for a slot, before the rest get 503.
    admission: (usize, usize),
}

fn settings(connector: &ConnectorFactory) -> (ConnectionSettings, u32, bool) {
    let c = connector.common();
    (
        ConnectionSettings {
            idle_timeout: c.idle_timeout.get(),
            header_read_timeout: c.header_read_timeout.get(),
            max_header_size: usize::try_from(c.max_request_header_size.to_bytes())
                .unwrap_or(usize::MAX),
            server_header: c.use_server_header,
            date_header: c.use_date_header,
            forwarded: c
                .use_forwarded_headers
                .then(|| Arc::new(connection::forwarded::Trust::new(&c.trusted_proxies))),
        },
        c.accept_queue_size,
        c.reuse_address,
    )
}

fn address(plan: &Plan) -> Result<SocketAddr, StartError> {
    let host = match plan.connector.common().bind_host.as_deref() {
        None => plan.default_host,
        Some(h) if h.eq_ignore_ascii_case("localhost") => IpAddr::V4(Ipv4Addr::LOCALHOST),
        Some(h) => h.parse().map_err(|_| StartError::Host {
            what: format!("{} connector", plan.role),
            host: h.to_owned(),
        })?,
    };
    Ok(SocketAddr::new(host, plan.connector.common().port))
}

fn tls(plan: &Plan) -> Result<Option<tokio_rustls::TlsAcceptor>, StartError> {
    match &plan.connector {
        ConnectorFactory::Http(_) => Ok(None),
        ConnectorFactory::Https(c) => {
            let v = &c.supported_protocols;
            let only13 = v.iter().all(|p| *p == TlsProtocol::TlsV13);
            let only12 = v.iter().all(|p| *p == TlsProtocol::TlsV12);
            let cert = c.cert_path.as_deref().unwrap_or_default();
            let key = c.key_path.as_deref().unwrap_or_default();
            connection::accept::tls_acceptor(cert, key, only13, only12)
                .map(Some)
                .map_err(|message| StartError::Tls {
                    what: format!("{} https connector", plan.role),
                    message,
                })
        }
    }
}

/// The pipeline, with the route timers and the request log, in front of a router.
fn stack(
    (router, table): (Router, Arc<RouteTable>),
    overload: &Arc<Overload>,
    settings: &PipelineSettings,
    request_log: Option<&Arc<RequestLog>>,
    metrics: Option<&Arc<RequestMetrics>>,
) -> HttpService {
    Pipeline::new(
        router,
        table,
        settings,
        overload.clone(),
        metrics.map(|m| (**m).clone()),
        request_log.cloned(),
    )
}

impl PipelineSettings {
    fn of(shared: &crate::config::server::ServerCommon) -> PipelineSettings {
        PipelineSettings {
            gzip: shared.gzip.enabled,
            minimum_entity_size: shared.gzip.minimum_entity_size.to_bytes(),
            compressed_mime_types: shared.gzip.compressed_mime_types.clone(),
            compressed_methods: shared.gzip.included_methods.clone(),
            allowed_methods: shared.allowed_methods.to_vec(),
            max_body: shared.max_request_body_size.to_bytes(),
            observe: pipeline::observe::Observe::new(
                shared
                    .request_id
                    .enabled
                    .then(|| pipeline::request_id::header_name(&shared.request_id.header_name))
                    .flatten(),
                shared.trace_context.enabled,
            ),
        }
    }
}

/// An application connector's service as [`Server::start`] builds it from `server` (its
/// request log started, its metrics in `metrics`), to be called in place of a connection:
/// what `benches/request_path.rs` measures, through [`crate::bench::service`].
#[cfg(feature = "bench")]
pub(crate) fn bench_service(
    server: &ServerFactory,
    app: Routes,
    metrics: &MetricRegistry,
) -> Result<HttpService, StartError> {
    let shared = server.common();
    let request_log = RequestLog::start(&shared.request_log, "bench")?;
    let request_metrics = Arc::new(RequestMetrics::new(metrics)?);
    let (router, table) = app.under("");
    Ok(stack(
        (router, Arc::new(table)),
        &Overload::new(shared.max_threads, shared.max_queued_requests),
        &PipelineSettings::of(shared),
        request_log.as_ref(),
        Some(&request_metrics),
    ))
}

/// `router` under the context path `path`, routes learned as matched (the admin routes: on
/// their own connector they are not timed, on the simple server's one connector they are).
fn prefixed(router: Router, path: &str) -> Router {
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        router
    } else {
        // `nest_service`, not `nest`: every path under the prefix reaches `router`, unknown
        // ones too, so that its fallback (behind `admin.auth` when set) answers them rather
        // than the outer router's unguarded one.
        Router::new().nest_service(path, router)
    }
}

impl Server {
    /// Binds every connector `server` describes and starts serving `app` (a [`Routes`], or an
    /// axum `Router`, whose routes are then timed through a layer) on the application
    /// connectors and `admin_router` (see [`crate::admin::Admin`]) on the admin connectors. Must be called inside a tokio runtime. The admin connectors get a runtime
    /// of their own (one thread), so that application load cannot starve them. The server's
    /// metrics (requests, routes, status classes, connections, overload, the request log's
    /// counters) go to `metrics`.
    pub async fn start(
        server: &ServerFactory,
        app: impl Into<Routes>,
        admin_router: Router,
        metrics: &MetricRegistry,
        app_name: &str,
    ) -> Result<Server, StartError> {
        let all = Ipv4Addr::UNSPECIFIED.into();
        let loopback = Ipv4Addr::LOCALHOST.into();
        let (shutdown, shutdown_rx) = watch::channel(false);
        let mut connections = Vec::new();
        let mut bound = Vec::new();
        let mut overloads = Vec::new();
        let request_metrics = Arc::new(RequestMetrics::new(metrics)?);
        let shared = server.common();
        let application_path = server.application_path();
        let (max_threads, max_queued, grace) = (
            shared.max_threads,
            shared.max_queued_requests,
            shared.shutdown_grace_period,
        );
        let pipeline_settings = PipelineSettings::of(shared);
        let request_log = RequestLog::start(&shared.request_log, app_name)?;
        if let Some(log) = &request_log {
            let log = log.clone();
            crate::admin::metrics::register_appenders(
                metrics,
                Arc::new(move || log.appenders().iter().map(|a| a.stats()).collect()),
            )?;
        }

        let mut listeners: Vec<(Plan, TcpListener, Option<tokio_rustls::TlsAcceptor>)> = Vec::new();
        type Served = (Router, Arc<RouteTable>);
        let plans: Vec<(Plan, Served)> = match server {
            ServerFactory::Default(f) => {
                let (app, table) = app.into().under(&application_path);
                let app: Served = (app, Arc::new(table));
                let admin_r: Served = (
                    prefixed(admin_router, &f.admin_context_path),
                    Arc::new(RouteTable::none()),
                );
                let mut plans: Vec<(Plan, Served)> = f
                    .application_connectors
                    .iter()
                    .map(|c| {
                        (
                            Plan {
                                role: "application",
                                connector: c.clone(),
                                default_host: all,
                                admission: (max_threads, max_queued),
                            },
                            app.clone(),
                        )
                    })
                    .collect();
                plans.extend(f.admin_connectors.iter().map(|c| {
                    (
                        Plan {
                            role: "admin",
                            connector: c.clone(),
                            default_host: loopback,
                            admission: (f.admin_max_threads, ADMIN_MAX_QUEUED),
                        },
                        admin_r.clone(),
                    )
                }));
                plans
            }
            ServerFactory::Simple(f) => {
                let (app, table) = app.into().under(&application_path);
                let prefix = f.admin_context_path.trim_end_matches('/');
                if let Some(why) = Some(prefix)
                    .filter(|p| !p.is_empty())
                    .and_then(|p| table.conflict_under(p))
                {
                    return Err(StartError::AdminPathTaken {
                        prefix: prefix.to_owned(),
                        why,
                    });
                }
                let admin = prefixed(
                    pipeline::route::layered(admin_router),
                    &f.admin_context_path,
                );
                let router: Served = (app.merge(admin), Arc::new(table));
                vec![(
                    Plan {
                        role: "application",
                        connector: f.connector.clone(),
                        default_host: all,
                        // The admin routes share the one connector's limits.
                        admission: (max_threads, max_queued),
                    },
                    router,
                )]
            }
        };
        let mut routers = Vec::new();
        for (plan, router) in plans {
            let addr = address(&plan)?;
            let (_, backlog, reuse) = settings(&plan.connector);
            let listener = connection::accept::bind(addr, backlog, reuse).map_err(|source| {
                StartError::Bind {
                    addr,
                    what: format!("{} connector", plan.role),
                    source,
                }
            })?;
            let tls = tls(&plan)?;
            routers.push(router);
            listeners.push((plan, listener, tls));
        }
        let mut admin_jobs = Vec::new();
        let mut index = std::collections::HashMap::<&str, usize>::new();
        for ((plan, listener, tls), router) in listeners.into_iter().zip(routers) {
            let wanted = address(&plan)?;
            let addr = listener.local_addr().map_err(|source| StartError::Bind {
                addr: wanted,
                what: plan.role.into(),
                source,
            })?;
            let scheme = if tls.is_some() { "https" } else { "http" };
            bound.push(Bound {
                role: plan.role,
                scheme,
                addr,
            });
            let overload = Overload::new(plan.admission.0, plan.admission.1);
            overloads.push(overload.clone());
            // `application[0]`, `admin[0]`...: the label of this connector's metrics.
            let n = index.entry(plan.role).or_default();
            let connector_name = format!("{}[{n}]", plan.role);
            *n += 1;
            let service = stack(
                router,
                &overload,
                &pipeline_settings,
                request_log.as_ref(),
                // As in DropWizard, the metrics are the application's: the admin side's own
                // requests (a scraper's, a load balancer's) are not counted in them.
                (plan.role != "admin").then_some(&request_metrics),
            );
            let (conn_settings, _, _) = settings(&plan.connector);
            // Every connector's connections are in the metrics, the admin side's too (labelled
            // `admin[n]`): its requests are not the application's, its connections are the
            // process's file descriptors all the same.
            let open = Connections::default();
            register_connector(metrics, &connector_name, &open, &overload)?;
            let limits = Limits::new(plan.connector.common().max_connections.map(|m| m as usize));
            if plan.role == "admin" {
                admin_jobs.push((
                    listener.into_std(),
                    tls,
                    service,
                    conn_settings,
                    (connector_name, open, limits),
                ));
            } else {
                tokio::spawn(connection::accept::accept_loop(
                    listener,
                    tls,
                    service,
                    conn_settings,
                    shutdown_rx.clone(),
                    (connector_name.into(), open.clone(), limits),
                ));
                connections.push(open);
            }
        }
        let application = bound
            .iter()
            .zip(&overloads)
            .filter(|(b, _)| b.role != "admin")
            .map(|(_, o)| o.clone())
            .collect();
        pipeline::metrics::register_active(metrics, application)?;
        let admin_runtime = if admin_jobs.is_empty() {
            None
        } else {
            Some(start_admin_runtime(admin_jobs)?)
        };
        Ok(Server {
            bound,
            shutdown,
            connections,
            admin_runtime,
            request_log,
            grace: grace.get(),
            overloads,
            streams: None,
        })
    }

    /// Ends `streams` (WebSockets, event streams) at shutdown, and waits for them within the
    /// grace period as for connections.
    pub(crate) fn with_streams(mut self, streams: Option<crate::stream::Streams>) -> Server {
        self.streams = streams;
        self
    }

    /// The bound connectors.
    pub fn bound(&self) -> &[Bound] {
        &self.bound
    }

    /// Requests answered 503 for overload, per connector (in `bound` order).
    pub fn rejected(&self) -> Vec<u64> {
        self.overloads.iter().map(|o| o.rejected()).collect()
    }

    /// Stops accepting, lets open connections finish their requests within the grace
    /// period, then writes every request-log line. Returns the connections still open when
    /// the grace period ran out.
    pub async fn shutdown(self) -> usize {
        let _ = self.shutdown.send(true);
        if let Some(streams) = &self.streams {
            streams.close();
        }
        if let Some((thread, stop)) = self.admin_runtime {
            let _ = stop.send(true);
            let _ = tokio::task::spawn_blocking(move || thread.join()).await;
        }
        let deadline = Instant::now() + self.grace;
        // An upgraded connection (a WebSocket) is no longer hyper's: its stream counts.
        let open = || {
            self.connections
                .iter()
                .map(Connections::open)
                .sum::<usize>()
                + self
                    .streams
                    .as_ref()
                    .map_or(0, crate::stream::Streams::open)
        };
        while open() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let left = open();
        if left > 0 {
            tracing::warn!(target: "ferrowizard::server", connections = left, grace_ms = self.grace.as_millis() as u64, "connections still open after the grace period are closed");
        }
        if let Some(log) = &self.request_log {
            for a in log.appenders() {
                a.stop(Duration::from_secs(10));
            }
        }
        left
    }
}

/// A connector's gauges: open connections and requests refused for overload.
fn register_connector(
    registry: &MetricRegistry,
    name: &str,
    open: &Connections,
    overload: &Arc<Overload>,
) -> Result<(), RegistryError> {
    registry.describe("ferrowizard.connections", "Open connections, by connector");
    registry.describe(
        "ferrowizard.overload.rejected",
        "Requests answered 503 because maxThreads and maxQueuedRequests were full, by connector",
    );
    let labels = [("connector", name)];
    let gauge = open.clone();
    registry.gauge("ferrowizard.connections", &labels, move || {
        gauge.open() as f64
    })?;
    let overload = overload.clone();
    registry.counter_fn("ferrowizard.overload.rejected", &labels, move || {
        overload.rejected() as f64
    })?;
    registry.describe(
        "ferrowizard.connections.acceptErrors",
        "Accepts that failed (out of file descriptors, buffers or memory), by connector",
    );
    registry.describe(
        "ferrowizard.connections.refused",
        "Connections refused at maxConnections, by connector",
    );
    registry.describe(
        "ferrowizard.connections.closedIdle",
        "Idle connections closed because connections or file descriptors neared their limit, by connector",
    );
    type Count = fn(&Connections) -> u64;
    let counts: [(&str, Count); 3] = [
        (
            "ferrowizard.connections.acceptErrors",
            Connections::accept_errors,
        ),
        ("ferrowizard.connections.refused", Connections::refused),
        (
            "ferrowizard.connections.closedIdle",
            Connections::closed_idle,
        ),
    ];
    for (name, count) in counts {
        let open = open.clone();
        registry.counter_fn(name, &labels, move || count(&open) as f64)?;
    }
    Ok(())
}

/// Admin requests that may wait for one of the `adminMaxThreads` slots before the admin side
/// answers 503: enough for a burst of scrapers and load-balancer checks, bounded so that a hung
/// health check cannot pile up connections without end.
const ADMIN_MAX_QUEUED: usize = 64;

type AdminJob = (
    std::io::Result<std::net::TcpListener>,
    Option<tokio_rustls::TlsAcceptor>,
    HttpService,
    ConnectionSettings,
    (String, Connections, Limits),
);

fn start_admin_runtime(
    jobs: Vec<AdminJob>,
) -> Result<(std::thread::JoinHandle<()>, watch::Sender<bool>), StartError> {
    let (stop, stop_rx) = watch::channel(false);
    let mut ready = Vec::new();
    for (listener, tls, service, settings, connector) in jobs {
        let listener = listener.map_err(|source| StartError::Bind {
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            what: "admin connector".into(),
            source,
        })?;
        ready.push((listener, tls, service, settings, connector));
    }
    let thread = std::thread::Builder::new()
        .name("ferrowizard-admin".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
                Ok(r) => r,
                Err(e) => {
                    tracing::error!(target: "ferrowizard::server", error = %e, "cannot start the admin runtime");
                    return;
                }
            };
            runtime.block_on(async move {
                // One count per connector: `maxConnections` is each connector's own.
                let mut connections = Vec::new();
                let mut tasks = Vec::new();
                for (listener, tls, service, settings, (name, open, limits)) in ready {
                    match TcpListener::from_std(listener) {
                        Ok(l) => tasks.push(tokio::spawn(connection::accept::accept_loop(l, tls, service, settings, stop_rx.clone(), (name.into(), open.clone(), limits)))),
                        Err(e) => tracing::error!(target: "ferrowizard::server", error = %e, "admin connector"),
                    }
                    connections.push(open);
                }
                for t in tasks {
                    let _ = t.await;
                }
                let deadline = Instant::now() + Duration::from_secs(5);
                let open = || connections.iter().map(Connections::open).sum::<usize>();
                while open() > 0 && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            });
        })
        .map_err(|source| StartError::Bind { addr: SocketAddr::from(([0, 0, 0, 0], 0)), what: "admin runtime".into(), source })?;
    Ok((thread, stop))
}
