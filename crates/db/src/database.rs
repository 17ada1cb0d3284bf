//! A database as the routes use it: a pool of connections, timed and counted, started and
//! stopped with the service, checked by the health checks.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use ferrowizard::health::{Health, HealthCheck};
use ferrowizard::metrics::{Counter, MetricRegistry, Timer};
use ferrowizard::{Environment, Managed, RunError};
use sqlx::ConnectOptions;
use sqlx::pool::PoolConnection;
use tracing::Instrument;

use crate::config::DataSourceFactory;
use crate::connect;
use crate::driver::Driver;
use crate::error::{BuildError, DbError};
use crate::outage::Outage;
use crate::pool::{self, Checks, Stats};

/// A database of the service: a sqlx pool built from a [`DataSourceFactory`], opened before
/// the ports open and closed after the last request, with a health check and metrics. Clone it
/// into the routes' state: clones share the pool.
///
/// ```no_run
/// use ferrowizard::axum::{Json, Router, extract::{Path, State}, routing::get};
/// use ferrowizard_db::{Database, DbError, sqlx};
///
/// async fn name(State(db): State<Database<sqlx::Sqlite>>, Path(id): Path<i64>) -> Result<Json<String>, DbError> {
///     let mut conn = db.acquire().await?;
///     let query = sqlx::query_scalar("SELECT name FROM accounts WHERE id = ?").bind(id);
///     let name: String = db.timed("accounts.name", query.fetch_one(&mut *conn)).await?;
///     Ok(Json(name))
/// }
///
/// # async fn run(config: &ferrowizard_db::DataSourceFactory, env: &mut ferrowizard::Environment) -> Result<(), ferrowizard::RunError> {
/// let db: Database<sqlx::Sqlite> = config.build("orders", env)?;
/// env.routes(Router::new().route("/accounts/{id}/name", get(name)).with_state(db));
/// # Ok(())
/// # }
/// ```
pub struct Database<DB: Driver> {
    inner: Arc<Inner<DB>>,
}

impl<DB: Driver> Clone for Database<DB> {
    fn clone(&self) -> Self {
        Database {
            inner: self.inner.clone(),
        }
    }
}

struct Inner<DB: Driver> {
    name: Arc<str>,
    target: String,
    url: String,
    pool: sqlx::Pool<DB>,
    checks: Arc<Checks>,
    stats: Arc<Stats>,
    outage: Outage,
    wait: Timer,
    timeouts: Counter,
    registry: MetricRegistry,
    queries: RwLock<HashMap<&'static str, Timer>>,
    system: &'static str,
    initial_size: u32,
    min_size: u32,
    max_wait: Duration,
    eviction_interval: Duration,
    min_idle_time: Duration,
    check_while_idle: bool,
    start_anyway: bool,
    evictor: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

impl DataSourceFactory {
    /// Builds the database `name` and registers it with `environment`: a managed resource
    /// (named `database NAME`), a health check (`NAME`), and metrics labelled `database=NAME`:
    /// gauges `ferrowizard.db.connections` (`state` size, active, idle, pending), the timer
    /// `ferrowizard.db.wait`, the counters `ferrowizard.db.timeouts`, `ferrowizard.db.opened`
    /// and `ferrowizard.db.closed` (`reason` age, idle, failed), and a timer
    /// `ferrowizard.db.queries` per name [`Database::timed`] is given.
    ///
    /// The managed start opens `initialSize` connections before the ports open (and fails,
    /// or with `ignoreExceptionOnPreLoad` warns, when the database cannot be reached); the pool
    /// keeps `minSize` open from the moment it is built. Call it from
    /// [`Application::run`](ferrowizard::Application::run), inside the service's runtime.
    pub fn build<DB: Driver>(
        &self,
        name: &str,
        environment: &mut Environment,
    ) -> Result<Database<DB>, BuildError> {
        let plan = connect::plan(self)?;
        if !DB::serves(plan.backend) {
            return Err(BuildError::Driver {
                found: plan.backend,
                expected: <DB as Driver>::NAME,
            });
        }
        let name: Arc<str> = Arc::from(name);
        let stats = Arc::new(Stats::default());
        let checks = Arc::new(Checks {
            name: name.clone(),
            validation_query: self.validation_query.clone(),
            validation_timeout: self
                .validation_query_timeout
                .unwrap_or(self.max_wait_for_connection)
                .get(),
            on_connect: plan.on_connect.clone(),
            check_on_connect: self.check_connection_on_connect,
            check_on_borrow: self.check_connection_on_borrow,
            check_on_return: self.check_connection_on_return,
            max_age: self.max_connection_age.map(|d| d.get()),
            log_validation_errors: self.log_validation_errors,
            stats: stats.clone(),
        });
        let pool = pool::build::<DB>(self, &plan, checks.clone())
            .map_err(|e| BuildError::Url(format!("{}: {e}", self.url)))?;
        let registry = environment.metrics().clone();
        let labels = [("database", &*name)];
        let wait = registry.timer_with("ferrowizard.db.wait", &labels)?;
        let timeouts = registry.counter_with("ferrowizard.db.timeouts", &labels)?;
        let database = Database {
            inner: Arc::new(Inner {
                name: name.clone(),
                target: plan.target,
                url: plan.url,
                pool,
                checks,
                stats,
                outage: Outage::default(),
                wait,
                timeouts,
                registry: registry.clone(),
                queries: RwLock::default(),
                system: match plan.backend {
                    crate::secret::Backend::Postgres => "postgresql",
                    crate::secret::Backend::Sqlite => "sqlite",
                },
                initial_size: self.initial_size,
                min_size: self.min_size,
                max_wait: self.max_wait_for_connection.get(),
                eviction_interval: self.eviction_interval.get(),
                min_idle_time: self.min_idle_time.get(),
                check_while_idle: self.check_connection_while_idle,
                start_anyway: self.ignore_exception_on_pre_load,
                evictor: Mutex::new(None),
            }),
        };
        database.register_metrics(&registry)?;
        environment
            .manage(database.clone())
            .health_check(&*name, database.clone());
        Ok(database)
    }
}

impl<DB: Driver> Database<DB> {
    /// The name it was built with.
    ///
    /// ```
    /// # use ferrowizard_db::{Database, sqlx};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let section = ferrowizard_db::DataSourceFactory {
    /// #     url: ferrowizard_db::DatabaseUrl::new("sqlite::memory:"),
    /// #     ..Default::default()
    /// # };
    /// # let mut environment = ferrowizard::Environment::default();
    /// let db: Database<sqlx::Sqlite> = section.build("orders", &mut environment).unwrap();
    /// assert_eq!(db.name(), "orders");
    /// # });
    /// ```
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The sqlx pool, for what this type does not wrap; connections taken from it directly
    /// are not timed, and their failures are not counted.
    ///
    /// ```
    /// # use ferrowizard_db::{Database, sqlx};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let section = ferrowizard_db::DataSourceFactory {
    /// #     url: ferrowizard_db::DatabaseUrl::new("sqlite::memory:"),
    /// #     ..Default::default()
    /// # };
    /// # let mut environment = ferrowizard::Environment::default();
    /// let db: Database<sqlx::Sqlite> = section.build("orders", &mut environment).unwrap();
    /// assert_eq!(db.pool().options().get_max_connections(), 100);
    /// # });
    /// ```
    pub fn pool(&self) -> &sqlx::Pool<DB> {
        &self.inner.pool
    }

    /// A connection, waiting at most `maxWaitForConnection` (then [`DbError::Unavailable`],
    /// a 503). The wait is timed (`ferrowizard.db.wait`); the connection goes back to the pool
    /// when dropped, a request cancelled by its client's disconnect included.
    ///
    /// ```
    /// # use ferrowizard_db::{Database, sqlx};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let section = ferrowizard_db::DataSourceFactory {
    /// #     url: ferrowizard_db::DatabaseUrl::new("sqlite::memory:"),
    /// #     ..Default::default()
    /// # };
    /// # let mut environment = ferrowizard::Environment::default();
    /// let db: Database<sqlx::Sqlite> = section.build("orders", &mut environment).unwrap();
    /// let mut conn = db.acquire().await?;
    /// let one: i64 = sqlx::query_scalar("SELECT 1").fetch_one(&mut *conn).await?;
    /// assert_eq!(one, 1);
    /// # Ok::<(), ferrowizard_db::DbError>(())
    /// # });
    /// ```
    pub async fn acquire(&self) -> Result<PoolConnection<DB>, DbError> {
        self.waited(self.inner.pool.acquire()).await
    }

    /// A connection with a transaction begun, waited for as [`acquire`](Self::acquire) does.
    /// Dropped without `commit`, the transaction is rolled back.
    ///
    /// ```
    /// # use ferrowizard_db::{Database, sqlx};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let section = ferrowizard_db::DataSourceFactory {
    /// #     url: ferrowizard_db::DatabaseUrl::new("sqlite::memory:"),
    /// #     ..Default::default()
    /// # };
    /// # let mut environment = ferrowizard::Environment::default();
    /// let db: Database<sqlx::Sqlite> = section.build("orders", &mut environment).unwrap();
    /// let mut tx = db.begin().await?;
    /// sqlx::query("CREATE TABLE t (x INTEGER)").execute(&mut *tx).await?;
    /// tx.commit().await?;
    /// # Ok::<(), ferrowizard_db::DbError>(())
    /// # });
    /// ```
    pub async fn begin(&self) -> Result<sqlx::Transaction<'static, DB>, DbError> {
        self.waited(self.inner.pool.begin()).await
    }

    async fn waited<T>(
        &self,
        wait: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, DbError> {
        let inner = &*self.inner;
        let _pending = Pending::new(&inner.stats);
        let started = Instant::now();
        let outcome = wait.await;
        inner.wait.update(started.elapsed());
        match outcome {
            Ok(got) => {
                // Written only when lower: most calls leave the shared line alone.
                let idle = inner.pool.num_idle() as u64;
                if idle < inner.stats.low_idle.load(Ordering::Relaxed) {
                    inner.stats.low_idle.fetch_min(idle, Ordering::Relaxed);
                }
                inner.outage.succeeded(&inner.name);
                Ok(got)
            }
            Err(e) => {
                if matches!(e, sqlx::Error::PoolTimedOut) {
                    inner.timeouts.inc();
                }
                Err(self.failed(e))
            }
        }
    }

    fn failed(&self, e: sqlx::Error) -> DbError {
        let error = DbError::classify(&self.inner.name, e);
        if let DbError::Unavailable { reason, .. } = &error {
            self.inner.outage.failed(&self.inner.name, reason);
        }
        error
    }

    /// Runs `query` (a sqlx call's future), timed under `name` (`ferrowizard.db.queries`,
    /// labelled `database` and `query`) and inside a `db.query` span (at INFO, target
    /// `ferrowizard::db`), which joins the request's trace when tracing is on. A failure is sorted for the client ([`DbError`])
    /// and a lost database is counted in its outage log.
    ///
    /// ```
    /// # use ferrowizard_db::{Database, sqlx};
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// # let section = ferrowizard_db::DataSourceFactory {
    /// #     url: ferrowizard_db::DatabaseUrl::new("sqlite::memory:"),
    /// #     ..Default::default()
    /// # };
    /// # let mut environment = ferrowizard::Environment::default();
    /// let db: Database<sqlx::Sqlite> = section.build("orders", &mut environment).unwrap();
    /// let mut conn = db.acquire().await?;
    /// let query = sqlx::query_scalar::<_, i64>("SELECT 6 * 7").fetch_one(&mut *conn);
    /// assert_eq!(db.timed("answer", query).await?, 42);
    /// # Ok::<(), ferrowizard_db::DbError>(())
    /// # });
    /// ```
    pub async fn timed<T>(
        &self,
        name: &'static str,
        query: impl Future<Output = Result<T, sqlx::Error>>,
    ) -> Result<T, DbError> {
        let timer = self.query_timer(name);
        let span = tracing::info_span!(
            target: "ferrowizard::db",
            "db.query",
            db.system = self.inner.system,
            db.namespace = &*self.inner.name,
            db.operation.name = name,
        );
        let started = Instant::now();
        let outcome = query.instrument(span).await;
        timer.update(started.elapsed());
        match outcome {
            Ok(value) => {
                self.inner.outage.succeeded(&self.inner.name);
                Ok(value)
            }
            Err(e) => Err(self.failed(e)),
        }
    }

    /// The timer of the query `name`, registered the first time.
    fn query_timer(&self, name: &'static str) -> Timer {
        let inner = &*self.inner;
        if let Some(timer) = inner
            .queries
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(name)
        {
            return timer.clone();
        }
        let mut queries = inner.queries.write().unwrap_or_else(|e| e.into_inner());
        queries
            .entry(name)
            .or_insert_with(|| {
                inner
                    .registry
                    .timer_with(
                        "ferrowizard.db.queries",
                        &[("database", &inner.name), ("query", name)],
                    )
                    // A name taken by another kind of metric: timed, but not published.
                    .unwrap_or_default()
            })
            .clone()
    }

    fn register_metrics(&self, registry: &MetricRegistry) -> Result<(), BuildError> {
        let name = &*self.inner.name;
        registry.describe(
            "ferrowizard.db.connections",
            "A database pool's connections: size, active, idle, and callers pending",
        );
        let gauges: [(&str, Reading<DB, f64>); 4] = [
            ("size", |i| f64::from(i.pool.size())),
            ("active", |i| {
                f64::from(i.pool.size()).max(i.pool.num_idle() as f64) - i.pool.num_idle() as f64
            }),
            ("idle", |i| i.pool.num_idle() as f64),
            ("pending", |i| {
                i.stats.pending.load(Ordering::Relaxed).max(0) as f64
            }),
        ];
        for (state, read) in gauges {
            let weak = Arc::downgrade(&self.inner);
            registry.gauge(
                "ferrowizard.db.connections",
                &[("database", name), ("state", state)],
                move || weak.upgrade().map_or(0.0, |i| read(&i)),
            )?;
        }
        let stats = self.inner.stats.clone();
        registry.counter_fn("ferrowizard.db.opened", &[("database", name)], move || {
            stats.opened.load(Ordering::Relaxed) as f64
        })?;
        let closed: [(&str, Reading<DB, u64>); 3] = [
            ("age", |i| i.stats.closed_age.load(Ordering::Relaxed)),
            ("idle", |i| i.stats.closed_idle.load(Ordering::Relaxed)),
            // Every connection closed for no other reason: a validation, a ping or a query
            // that failed.
            ("failed", |i| {
                let s = &i.stats;
                let now = s
                    .opened
                    .load(Ordering::Relaxed)
                    .saturating_sub(u64::from(i.pool.size()))
                    .saturating_sub(s.closed_age.load(Ordering::Relaxed))
                    .saturating_sub(s.closed_idle.load(Ordering::Relaxed));
                s.closed_failed.fetch_max(now, Ordering::Relaxed).max(now)
            }),
        ];
        for (reason, read) in closed {
            let weak = Arc::downgrade(&self.inner);
            registry.counter_fn(
                "ferrowizard.db.closed",
                &[("database", name), ("reason", reason)],
                move || weak.upgrade().map_or(0.0, |i| read(&i) as f64),
            )?;
        }
        Ok(())
    }

    /// Opens `initialSize` connections, after one attempt that fails at once if the database
    /// cannot be reached.
    async fn open(&self) -> Result<(), String> {
        let inner = &*self.inner;
        let options: <DB::Connection as sqlx::Connection>::Options =
            inner.url.parse().map_err(|e: sqlx::Error| e.to_string())?;
        let cannot = |e: sqlx::Error| format!("cannot connect to {}: {e}", inner.target);
        let probe = async {
            let mut probe = options.connect().await?;
            let prepared = inner.checks.prepare::<DB>(&mut probe).await;
            let _ = sqlx::Connection::close(probe).await;
            prepared
        };
        tokio::time::timeout(inner.max_wait, probe)
            .await
            .map_err(|_| {
                format!(
                    "cannot connect to {}: no answer within {:?}",
                    inner.target, inner.max_wait
                )
            })?
            .map_err(cannot)?;
        let mut held = Vec::new();
        while held.len() < inner.initial_size as usize {
            held.push(inner.pool.acquire().await.map_err(cannot)?);
        }
        Ok(())
    }

    /// Every `evictionInterval`: trims the connections unused beyond `minSize` for
    /// `minIdleTime`, validates the idle ones (`checkConnectionWhileIdle`), and closes those
    /// past `maxConnectionAge` (the release hook does, as each goes back).
    async fn evict(self) {
        let inner = &*self.inner;
        let mut window = Instant::now();
        inner
            .stats
            .low_idle
            .store(inner.pool.num_idle() as u64, Ordering::Relaxed);
        loop {
            tokio::time::sleep(inner.eviction_interval).await;
            if window.elapsed() >= inner.min_idle_time {
                let unused = inner.stats.low_idle.load(Ordering::Relaxed);
                let surplus = u64::from(inner.pool.size().saturating_sub(inner.min_size));
                for _ in 0..unused.min(surplus) {
                    let Some(conn) = inner.pool.try_acquire() else {
                        break;
                    };
                    let _ = tokio::time::timeout(Duration::from_secs(5), conn.close()).await;
                    inner.stats.closed_idle.fetch_add(1, Ordering::Relaxed);
                }
                window = Instant::now();
                inner
                    .stats
                    .low_idle
                    .store(inner.pool.num_idle() as u64, Ordering::Relaxed);
            }
            if !inner.check_while_idle && inner.checks.max_age.is_none() {
                continue;
            }
            // Each goes back as soon as it is looked at (the release hook ages it); the idle
            // queue is first in, first out, so a round does not meet one twice.
            for _ in 0..inner.pool.num_idle() {
                let Some(mut conn) = inner.pool.try_acquire() else {
                    break;
                };
                if inner.check_while_idle
                    && inner
                        .checks
                        .validate::<DB>(&mut conn, "idle")
                        .await
                        .is_err()
                {
                    let _ = tokio::time::timeout(Duration::from_secs(5), conn.close()).await;
                }
            }
        }
    }
}

/// How a gauge or counter reads the pool.
type Reading<DB, T> = fn(&Inner<DB>) -> T;

/// Counts a caller waiting for a connection, until it has one or gives up (or is dropped).
struct Pending<'a>(&'a AtomicI64);

impl<'a> Pending<'a> {
    fn new(stats: &'a Stats) -> Self {
        stats.pending.fetch_add(1, Ordering::Relaxed);
        Pending(&stats.pending)
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

impl<DB: Driver> Managed for Database<DB> {
    async fn start(&self) -> Result<(), RunError> {
        match self.open().await {
            Ok(()) => {}
            Err(why) if self.inner.start_anyway => {
                tracing::warn!(target: "ferrowizard::db", database = &*self.inner.name, error = why.as_str(), "starting without the database (ignoreExceptionOnPreLoad): its health check reports it");
            }
            Err(why) => return Err(why.into()),
        }
        let evictor = tokio::spawn(self.clone().evict());
        *self.inner.evictor.lock().unwrap_or_else(|e| e.into_inner()) = Some(evictor);
        Ok(())
    }

    async fn stop(&self) -> Result<(), RunError> {
        let evictor = self
            .inner
            .evictor
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(evictor) = evictor {
            evictor.abort();
        }
        self.inner.pool.close().await;
        Ok(())
    }

    fn name(&self) -> String {
        format!("database {}", self.inner.name)
    }
}

impl<DB: Driver> HealthCheck for Database<DB> {
    /// Runs the validation query on a connection of the pool, within
    /// `validationQueryTimeout`, the wait for the connection included.
    async fn check(&self) -> Health {
        let inner = &*self.inner;
        let timeout = inner.checks.validation_timeout;
        let outcome = tokio::time::timeout(timeout, async {
            let mut conn = inner.pool.acquire().await?;
            DB::execute(&mut conn, &inner.checks.validation_query).await
        })
        .await;
        match outcome {
            Ok(Ok(())) => {
                inner.outage.succeeded(&inner.name);
                Health::healthy()
            }
            Ok(Err(e)) => Health::unhealthy(format!("{}: {e}", inner.target)),
            Err(_) => Health::unhealthy(format!(
                "{}: the validation query did not answer within {timeout:?}",
                inner.target
            )),
        }
    }
}
