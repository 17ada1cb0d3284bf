//! The sqlx pool a section describes: its sizes and wait, and the hooks that run the
//! validation query, the session settings and the age limit, counting what they close.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use sqlx::ConnectOptions;
use sqlx::pool::{PoolConnectionMetadata, PoolOptions};

use crate::config::DataSourceFactory;
use crate::connect::Plan;
use crate::driver::Driver;

/// What the pool's hooks and callers count; the gauges and counters read it.
#[derive(Default)]
pub(crate) struct Stats {
    /// Callers waiting for a connection.
    pub(crate) pending: AtomicI64,
    /// Connections opened since the start.
    pub(crate) opened: AtomicU64,
    /// Connections closed for their age.
    pub(crate) closed_age: AtomicU64,
    /// Connections closed as unused beyond `minSize`.
    pub(crate) closed_idle: AtomicU64,
    /// The fewest idle connections seen since the evictor's window began.
    pub(crate) low_idle: AtomicU64,
    /// The most connections counted as closed for failure so far: the counter never goes
    /// down while a close or an open is under way.
    pub(crate) closed_failed: AtomicU64,
}

/// The settings the hooks need, shared by them.
pub(crate) struct Checks {
    pub(crate) name: Arc<str>,
    pub(crate) validation_query: String,
    pub(crate) validation_timeout: Duration,
    pub(crate) on_connect: Vec<String>,
    pub(crate) check_on_connect: bool,
    pub(crate) check_on_borrow: bool,
    pub(crate) check_on_return: bool,
    pub(crate) max_age: Option<Duration>,
    pub(crate) log_validation_errors: bool,
    pub(crate) stats: Arc<Stats>,
}

impl Checks {
    /// Runs the validation query on `conn` under its timeout; logs a failure when told.
    pub(crate) async fn validate<DB: Driver>(
        &self,
        conn: &mut DB::Connection,
        when: &str,
    ) -> Result<(), String> {
        let outcome = tokio::time::timeout(
            self.validation_timeout,
            DB::execute(conn, &self.validation_query),
        )
        .await;
        let why = match outcome {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!(
                "the validation query did not answer within {:?}",
                self.validation_timeout
            ),
        };
        if self.log_validation_errors {
            tracing::warn!(target: "ferrowizard::db", database = &*self.name, when, error = why.as_str(), "connection failed its validation: closed");
        }
        Err(why)
    }

    /// Runs the session's statements on a new connection, then (`checkConnectionOnConnect`)
    /// the validation query.
    pub(crate) async fn prepare<DB: Driver>(
        &self,
        conn: &mut DB::Connection,
    ) -> Result<(), sqlx::Error> {
        for statement in &self.on_connect {
            DB::execute(conn, statement).await?;
        }
        if self.check_on_connect {
            self.validate::<DB>(conn, "connect")
                .await
                .map_err(sqlx::Error::Protocol)?;
        }
        Ok(())
    }

    /// Whether a connection of `age` is past `maxConnectionAge` (counted when it is).
    fn too_old(&self, meta: &PoolConnectionMetadata) -> bool {
        let old = self.max_age.is_some_and(|max| meta.age >= max);
        if old {
            self.stats.closed_age.fetch_add(1, Ordering::Relaxed);
        }
        old
    }
}

/// The pool for `section`, connecting lazily (the managed start opens the first connections).
pub(crate) fn build<DB: Driver>(
    section: &DataSourceFactory,
    plan: &Plan,
    checks: Arc<Checks>,
) -> Result<sqlx::Pool<DB>, sqlx::Error> {
    DB::prepare();
    let options: <DB::Connection as sqlx::Connection>::Options = plan.url.parse()?;
    // Statements go to the log at DEBUG (the `sqlx::query` target), as they do by default, and
    // a slow one at WARN after a second.
    let options = options.log_slow_statements(log::LevelFilter::Warn, Duration::from_secs(1));
    let on_connect = checks.clone();
    let mut pool = PoolOptions::<DB>::new()
        .min_connections(section.min_size)
        .max_connections(section.max_size)
        .acquire_timeout(section.max_wait_for_connection.get())
        // The hooks below validate, and the evictor ages and trims: sqlx's own reaper and ping
        // on acquire are off.
        .test_before_acquire(false)
        .idle_timeout(None)
        .max_lifetime(None)
        .after_connect(move |conn, _| {
            let checks = on_connect.clone();
            Box::pin(async move {
                checks.stats.opened.fetch_add(1, Ordering::Relaxed);
                checks.prepare::<DB>(conn).await
            })
        });
    // A hook costs a boxed future on every borrow or return: each is set only when it has
    // something to check.
    let ages = checks.max_age.is_some();
    if checks.check_on_borrow || ages {
        let on_borrow = checks.clone();
        pool = pool.before_acquire(move |conn, meta| {
            let checks = on_borrow.clone();
            Box::pin(async move {
                if checks.too_old(&meta) {
                    return Ok(false);
                }
                Ok(!checks.check_on_borrow || checks.validate::<DB>(conn, "borrow").await.is_ok())
            })
        });
    }
    if checks.check_on_return || ages {
        let on_return = checks;
        pool = pool.after_release(move |conn, meta| {
            let checks = on_return.clone();
            Box::pin(async move {
                if checks.too_old(&meta) {
                    return Ok(false);
                }
                Ok(!checks.check_on_return || checks.validate::<DB>(conn, "return").await.is_ok())
            })
        });
    }
    let pool = pool.connect_lazy_with(options);
    Ok(pool)
}
