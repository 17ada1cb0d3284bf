//! The database section's keys at work on SQLite: a file database in a temporary folder, the
//! pool built, started and checked as a service does.

use std::time::{Duration, Instant};

use ferrowizard::health::HealthCheck;
use ferrowizard::{Environment, Managed};
use ferrowizard_db::sqlx::{self, Sqlite};
use ferrowizard_db::{DataSourceFactory, Database, DbError};

fn section(yaml: &str) -> DataSourceFactory {
    ferrowizard::config::loader(&[])
        .load_str::<DataSourceFactory>("database.yaml", yaml)
        .unwrap_or_else(|r| panic!("{r}"))
}

/// A file database with a table `gate`, and the yaml of a section for it plus `extra`.
struct Fixture {
    dir: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn url(&self) -> String {
        format!("sqlite:{}", self.dir.path().join("t.db").display())
    }

    /// The section: `extra`'s keys over a url, one initial connection, no minimum, and the
    /// gate as the validation query.
    fn yaml(&self, extra: &str) -> String {
        let mut yaml = extra.to_owned();
        let url = format!("url: {}", self.url());
        for line in [
            url.as_str(),
            "initialSize: 1",
            "minSize: 0",
            "validationQuery: SELECT 1 FROM gate",
        ] {
            let key = line.split(':').next().unwrap_or_default();
            if !extra.lines().any(|l| l.starts_with(&format!("{key}:"))) {
                yaml.push_str(line);
                yaml.push('\n');
            }
        }
        yaml
    }

    async fn gate(&self, open: bool) {
        use sqlx::Connection;
        let mut c = sqlx::SqliteConnection::connect(&format!("{}?mode=rwc", self.url()))
            .await
            .unwrap();
        let sql = if open {
            "CREATE TABLE IF NOT EXISTS gate (x INTEGER)"
        } else {
            "DROP TABLE IF EXISTS gate"
        };
        sqlx::raw_sql(sql).execute(&mut c).await.unwrap();
    }

    /// The database built from `extra`'s section, started, with the gate open.
    async fn start(&self, extra: &str) -> (Environment, Database<Sqlite>) {
        self.gate(true).await;
        let mut env = Environment::default();
        let db = section(&self.yaml(extra))
            .build::<Sqlite>("t", &mut env)
            .unwrap();
        Managed::start(&db).await.unwrap();
        (env, db)
    }
}

fn counter(env: &Environment, name: &str, labels: &[(&str, &str)]) -> f64 {
    let mut all = vec![("database", "t")];
    all.extend_from_slice(labels);
    env.metrics()
        .counter_fn(name, &all, || -1.0)
        .unwrap()
        .value()
}

fn closed(env: &Environment, reason: &str) -> f64 {
    counter(env, "ferrowizard.db.closed", &[("reason", reason)])
}

fn gauge(env: &Environment, state: &str) -> f64 {
    env.metrics()
        .gauge(
            "ferrowizard.db.connections",
            &[("database", "t"), ("state", state)],
            || -1.0,
        )
        .unwrap()
        .value()
}

async fn scalar(db: &Database<Sqlite>, sql: &'static str) -> i64 {
    let mut c = db.acquire().await.unwrap();
    db.timed("probe", sqlx::query_scalar(sql).fetch_one(&mut *c))
        .await
        .unwrap()
}

/// Polls `f` until it holds or 5 s pass.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !f() {
        assert!(Instant::now() < deadline, "{what}: not within 5 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Catches: initialSize not opened at start, maxSize not bounding the pool, a wait past
/// maxWaitForConnection (or none), a timeout neither counted nor shown as pending.
#[tokio::test]
async fn sizes_open_the_pool_bound_it_and_the_wait_for_a_connection_ends_in_a_503() {
    let f = Fixture::new();
    let (env, db) = f
        .start("initialSize: 3\nmaxSize: 4\nmaxWaitForConnection: 300ms\n")
        .await;
    assert_eq!(gauge(&env, "size"), 3.0);
    assert_eq!(counter(&env, "ferrowizard.db.opened", &[]), 3.0);
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(db.acquire().await.unwrap());
    }
    assert_eq!(gauge(&env, "active"), 4.0);
    let waiting = tokio::spawn({
        let db = db.clone();
        async move {
            let started = Instant::now();
            let e = db.acquire().await.err().unwrap();
            (e, started.elapsed())
        }
    });
    eventually("one caller pending", || gauge(&env, "pending") == 1.0).await;
    let (e, waited) = waiting.await.unwrap();
    assert!(matches!(e, DbError::Unavailable { .. }), "{e}");
    assert!(
        waited >= Duration::from_millis(300) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert_eq!(counter(&env, "ferrowizard.db.timeouts", &[]), 1.0);
    assert_eq!(gauge(&env, "pending"), 0.0);
    assert_eq!(gauge(&env, "size"), 4.0);
    drop(held);
    Managed::stop(&db).await.unwrap();
}

/// Catches: minSize not kept, or connections unused beyond it never closed after
/// minIdleTime.
#[tokio::test]
async fn min_size_is_kept_and_the_unused_beyond_it_close_after_min_idle_time() {
    let f = Fixture::new();
    let (env, db) = f
        .start("initialSize: 0\nminSize: 2\nevictionInterval: 50ms\nminIdleTime: 1s\n")
        .await;
    eventually("minSize opened", || gauge(&env, "size") == 2.0).await;
    let mut held = Vec::new();
    for _ in 0..5 {
        held.push(db.acquire().await.unwrap());
    }
    drop(held);
    eventually("all five idle", || gauge(&env, "idle") == 5.0).await;
    assert_eq!(closed(&env, "idle"), 0.0);
    eventually("trimmed to minSize", || gauge(&env, "size") == 2.0).await;
    assert_eq!(closed(&env, "idle"), 3.0);
    Managed::stop(&db).await.unwrap();
}

/// Catches: a connection kept past maxConnectionAge, or closed without being counted.
#[tokio::test]
async fn connections_older_than_max_connection_age_are_closed() {
    for (age, closes) in [("maxConnectionAge: 100ms\n", true), ("", false)] {
        let f = Fixture::new();
        let (env, db) = f.start(age).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(scalar(&db, "SELECT 7").await, 7);
        if closes {
            eventually("closed for age", || closed(&env, "age") >= 1.0).await;
        } else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            assert_eq!(closed(&env, "age"), 0.0);
        }
        Managed::stop(&db).await.unwrap();
    }
}

/// Catches: the validation query not run on a new connection, or run when switched off.
#[tokio::test]
async fn check_connection_on_connect_refuses_a_connection_that_fails_validation() {
    let f = Fixture::new();
    f.gate(false).await;
    let mut env = Environment::default();
    let db = section(&f.yaml("")).build::<Sqlite>("t", &mut env).unwrap();
    let e = Managed::start(&db).await.unwrap_err().to_string();
    assert!(e.contains("no such table: gate"), "{e}");

    // The pool's own new connections are checked too: with one held, a second must be opened,
    // and it is refused once the gate is shut.
    for (on, opens) in [(true, false), (false, true)] {
        f.gate(true).await;
        let mut env = Environment::default();
        let db = section(&f.yaml(&format!(
            "checkConnectionOnConnect: {on}\nmaxWaitForConnection: 300ms\n"
        )))
        .build::<Sqlite>("t", &mut env)
        .unwrap();
        Managed::start(&db).await.unwrap();
        eventually("the initial connection back", || gauge(&env, "idle") == 1.0).await;
        let held = db.acquire().await.unwrap();
        f.gate(false).await;
        assert_eq!(
            db.acquire().await.is_ok(),
            opens,
            "checkConnectionOnConnect {on}"
        );
        drop(held);
        Managed::stop(&db).await.unwrap();
    }
}

/// The connections closed for failure once the gate is shut, with `key` set to `on`.
async fn closed_when_gate_shuts(key: &str, on: bool, settle: Duration) -> f64 {
    let f = Fixture::new();
    let (env, db) = f
        .start(&format!(
            "checkConnectionOnConnect: false\nevictionInterval: 50ms\n{key}: {on}\n{}",
            if key == "checkConnectionWhileIdle" {
                ""
            } else {
                "checkConnectionWhileIdle: false\n"
            }
        ))
        .await;
    eventually("the initial connection idle", || gauge(&env, "idle") == 1.0).await;
    f.gate(false).await;
    tokio::time::sleep(settle).await;
    // A borrow and a return.
    assert_eq!(scalar(&db, "SELECT 1").await, 1);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let failed = closed(&env, "failed");
    Managed::stop(&db).await.unwrap();
    failed
}

/// Catches: checkConnectionOnBorrow, checkConnectionOnReturn or checkConnectionWhileIdle
/// (with evictionInterval) not validating, or validating when off.
#[tokio::test]
async fn the_validation_query_checks_connections_when_borrowed_returned_and_idle() {
    let quick = Duration::ZERO;
    assert_eq!(
        closed_when_gate_shuts("checkConnectionOnBorrow", true, quick).await,
        1.0
    );
    assert_eq!(
        closed_when_gate_shuts("checkConnectionOnBorrow", false, quick).await,
        0.0
    );
    assert!(closed_when_gate_shuts("checkConnectionOnReturn", true, quick).await >= 1.0);
    assert_eq!(
        closed_when_gate_shuts("checkConnectionOnReturn", false, quick).await,
        0.0
    );
    let idle = Duration::from_millis(300);
    assert!(closed_when_gate_shuts("checkConnectionWhileIdle", true, idle).await >= 1.0);
    assert_eq!(
        closed_when_gate_shuts("checkConnectionWhileIdle", false, idle).await,
        0.0
    );
}

/// Catches: evictionInterval not pacing the idle checks.
#[tokio::test]
async fn eviction_interval_paces_the_idle_checks() {
    for (interval, expected) in [("50ms", true), ("1h", false)] {
        let f = Fixture::new();
        let (env, db) = f
            .start(&format!(
                "checkConnectionOnConnect: false\nevictionInterval: {interval}\n"
            ))
            .await;
        f.gate(false).await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(closed(&env, "failed") >= 1.0, expected, "{interval}");
        Managed::stop(&db).await.unwrap();
    }
}

/// Catches: the health check not running validationQuery.
#[tokio::test]
async fn the_health_check_runs_the_validation_query() {
    let f = Fixture::new();
    let (_env, db) = f.start("checkConnectionOnConnect: false\n").await;
    assert!(db.check().await.is_healthy());
    f.gate(false).await;
    let health = db.check().await;
    assert!(!health.is_healthy());
    assert!(
        health.message().unwrap().contains("no such table: gate"),
        "{health:?}"
    );
    Managed::stop(&db).await.unwrap();
}

/// Catches: initializationQuery, properties (pragmas), readOnlyByDefault or
/// defaultTransactionIsolation not applied to each connection.
#[tokio::test]
async fn each_connection_gets_the_sessions_settings() {
    let f = Fixture::new();
    let (_env, db) = f
        .start(
            "initializationQuery: PRAGMA cache_size = -1234\nproperties:\n  busy_timeout: '4321'\n\
             readOnlyByDefault: true\ndefaultTransactionIsolation: read-uncommitted\n",
        )
        .await;
    assert_eq!(scalar(&db, "PRAGMA cache_size").await, -1234);
    assert_eq!(scalar(&db, "PRAGMA busy_timeout").await, 4321);
    assert_eq!(scalar(&db, "PRAGMA query_only").await, 1);
    assert_eq!(scalar(&db, "PRAGMA read_uncommitted").await, 1);
    let mut c = db.acquire().await.unwrap();
    let e = db
        .timed(
            "insert",
            sqlx::query("INSERT INTO gate VALUES (1)").execute(&mut *c),
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("readonly"), "{e}");
    drop(c);
    Managed::stop(&db).await.unwrap();

    let (_env, db) = f.start("").await;
    assert_eq!(scalar(&db, "PRAGMA query_only").await, 0);
    assert_eq!(scalar(&db, "PRAGMA read_uncommitted").await, 0);
    assert_ne!(scalar(&db, "PRAGMA busy_timeout").await, 4321);
    Managed::stop(&db).await.unwrap();
}

/// Catches: a database that cannot be opened at start not stopping the start, or stopping it
/// although ignoreExceptionOnPreLoad says to start anyway.
#[tokio::test]
async fn ignore_exception_on_pre_load_starts_without_the_database_and_reports_it() {
    let yaml = "url: sqlite:/nonexistent/folder/t.db\nmaxWaitForConnection: 200ms\n";
    let mut env = Environment::default();
    let db = section(yaml).build::<Sqlite>("t", &mut env).unwrap();
    let e = Managed::start(&db).await.unwrap_err().to_string();
    assert!(
        e.contains("cannot connect to sqlite:/nonexistent/folder/t.db"),
        "{e}"
    );

    let mut env = Environment::default();
    let db = section(&format!("{yaml}ignoreExceptionOnPreLoad: true\n"))
        .build::<Sqlite>("t", &mut env)
        .unwrap();
    Managed::start(&db).await.unwrap();
    assert!(!db.check().await.is_healthy());
    Managed::stop(&db).await.unwrap();
}

/// Catches: a section for one engine built for another's driver.
#[tokio::test]
async fn a_url_for_another_engine_than_the_codes_is_refused() {
    let mut env = Environment::default();
    let e = section("url: postgres://localhost/orders\n")
        .build::<Sqlite>("t", &mut env)
        .err()
        .unwrap();
    assert_eq!(
        e.to_string(),
        "url names PostgreSQL, but the application uses SQLite: change url, or the code's driver"
    );
}

/// Catches: logValidationErrors not logging a failed validation, or logging it when off.
#[test]
fn log_validation_errors_logs_each_failed_validation() {
    for (on, logged) in [(true, true), (false, false)] {
        let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::<u8>::new()));
        let writer = {
            let lines = lines.clone();
            move || Capture(lines.clone())
        };
        let subscriber = tracing_subscriber::fmt()
            .with_writer(writer)
            .with_ansi(false)
            .finish();
        let _guard = tracing::subscriber::set_default(subscriber);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let f = Fixture::new();
            let (_env, db) = f
                .start(&format!(
                    "checkConnectionOnConnect: false\ncheckConnectionOnBorrow: true\n\
                     logValidationErrors: {on}\n"
                ))
                .await;
            f.gate(false).await;
            assert_eq!(scalar(&db, "SELECT 1").await, 1);
            Managed::stop(&db).await.unwrap();
        });
        let text = String::from_utf8(lines.lock().unwrap().clone()).unwrap();
        assert_eq!(
            text.contains("connection failed its validation: closed")
                && text.contains("no such table: gate"),
            logged,
            "logValidationErrors {on}: {text}"
        );
    }
}

struct Capture(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Capture {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Catches: two databases of one service sharing a pool, their settings or their metrics.
#[tokio::test]
async fn two_named_databases_live_side_by_side() {
    let (a, b) = (Fixture::new(), Fixture::new());
    a.gate(true).await;
    b.gate(true).await;
    let mut env = Environment::default();
    let primary = section(&a.yaml("initialSize: 2\n"))
        .build::<Sqlite>("primary", &mut env)
        .unwrap();
    let replica = section(&b.yaml("readOnlyByDefault: true\n"))
        .build::<Sqlite>("replica", &mut env)
        .unwrap();
    Managed::start(&primary).await.unwrap();
    Managed::start(&replica).await.unwrap();
    let size = |name: &str| {
        env.metrics()
            .gauge(
                "ferrowizard.db.connections",
                &[("database", name), ("state", "size")],
                || -1.0,
            )
            .unwrap()
            .value()
    };
    assert_eq!((size("primary"), size("replica")), (2.0, 1.0));
    let write = |db: Database<Sqlite>| async move {
        let mut c = db.acquire().await.unwrap();
        db.timed(
            "write",
            sqlx::query("INSERT INTO gate VALUES (1)").execute(&mut *c),
        )
        .await
        .is_ok()
    };
    assert!(write(primary.clone()).await);
    assert!(!write(replica.clone()).await);
    b.gate(false).await;
    assert!(primary.check().await.is_healthy());
    assert!(!replica.check().await.is_healthy());
    Managed::stop(&replica).await.unwrap();
    Managed::stop(&primary).await.unwrap();
}
