//! The database section on a real PostgreSQL, started by the test from the system's binaries:
//! credentials, driver properties, session settings, validation under its timeout, and a
//! database lost and found again.

mod support;

use std::time::{Duration, Instant};

use ferrowizard::health::HealthCheck;
use ferrowizard::{Environment, Managed};
use ferrowizard_db::sqlx::{self, Postgres};
use ferrowizard_db::{DataSourceFactory, Database, DbError};
use support::postgres::{PASSWORD, Postgres as Server};

fn section(yaml: &str) -> DataSourceFactory {
    ferrowizard::config::loader(&[])
        .load_str::<DataSourceFactory>("database.yaml", yaml)
        .unwrap_or_else(|r| panic!("{r}"))
}

fn base(pg: &Server) -> String {
    format!(
        "url: {}\npassword: {PASSWORD}\ninitialSize: 1\nminSize: 1\nmaxSize: 4\n",
        pg.url("orders")
    )
}

async fn started(yaml: &str) -> Result<(Environment, Database<Postgres>), String> {
    let mut env = Environment::default();
    let db = section(yaml)
        .build::<Postgres>("orders", &mut env)
        .map_err(|e| e.to_string())?;
    Managed::start(&db).await.map_err(|e| e.to_string())?;
    Ok((env, db))
}

async fn text(db: &Database<Postgres>, sql: &'static str) -> String {
    let mut c = db.acquire().await.unwrap();
    db.timed("probe", sqlx::query_scalar(sql).fetch_one(&mut *c))
        .await
        .unwrap()
}

/// Catches: user, password or properties not reaching the server, a password in a message,
/// or readOnlyByDefault, defaultTransactionIsolation or initializationQuery not set on each
/// connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_takes_the_credentials_properties_and_session_settings() {
    let pg = Server::start();
    pg.sql("orders", "CREATE SCHEMA shop; CREATE TABLE t (x int)");
    let wrong = format!(
        "url: postgres://127.0.0.1:{}/orders\nuser: postgres\npassword: not-the-{PASSWORD}\n",
        pg.port()
    );
    let e = started(&wrong).await.err().unwrap();
    assert!(
        e.contains(&format!(
            "cannot connect to postgres://postgres@127.0.0.1:{}/orders",
            pg.port()
        )) && e.contains("password authentication failed"),
        "{e}"
    );
    assert!(!e.contains(PASSWORD), "{e}");

    let yaml = format!(
        "{}properties:\n  application_name: orders-api\n  statement_timeout: 250ms\n\
         readOnlyByDefault: true\ndefaultTransactionIsolation: serializable\n\
         initializationQuery: SET search_path TO shop, public\n",
        base(&pg)
    );
    let (_env, db) = started(&yaml).await.unwrap();
    assert_eq!(text(&db, "SELECT current_user::text").await, "postgres");
    assert_eq!(text(&db, "SHOW application_name").await, "orders-api");
    assert_eq!(text(&db, "SHOW statement_timeout").await, "250ms");
    assert_eq!(text(&db, "SHOW default_transaction_read_only").await, "on");
    assert_eq!(
        text(&db, "SHOW default_transaction_isolation").await,
        "serializable"
    );
    assert_eq!(text(&db, "SHOW search_path").await, "shop, public");
    let mut c = db.acquire().await.unwrap();
    let e = db
        .timed(
            "insert",
            sqlx::query("INSERT INTO public.t VALUES (1)").execute(&mut *c),
        )
        .await
        .unwrap_err();
    assert!(e.to_string().contains("read-only transaction"), "{e}");
    drop(c);
    Managed::stop(&db).await.unwrap();

    let (_env, db) = started(&base(&pg)).await.unwrap();
    assert_eq!(text(&db, "SHOW default_transaction_read_only").await, "off");
    assert_eq!(
        text(&db, "SHOW default_transaction_isolation").await,
        "read committed"
    );
    assert_eq!(text(&db, "SHOW statement_timeout").await, "0");
    Managed::stop(&db).await.unwrap();
}

/// Catches: a health check waiting on a validation query past validationQueryTimeout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validation_query_timeout_bounds_the_health_check() {
    let pg = Server::start();
    let yaml = format!(
        "{}validationQuery: SELECT pg_sleep(5)\ncheckConnectionOnConnect: false\n\
         checkConnectionWhileIdle: false\nvalidationQueryTimeout: 200ms\n",
        base(&pg)
    );
    let (_env, db) = started(&yaml).await.unwrap();
    let t = Instant::now();
    let health = db.check().await;
    assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    assert_eq!(
        health.message(),
        Some(
            format!(
                "postgres://postgres@127.0.0.1:{}/orders: the validation query did not answer within 200ms",
                pg.port()
            )
            .as_str()
        )
    );
    Managed::stop(&db).await.unwrap();
}

/// Catches: a connection the server dropped lent anyway when checkConnectionOnBorrow is on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_connection_on_borrow_replaces_a_connection_the_server_dropped() {
    let pg = Server::start();
    for (on, survives) in [(true, true), (false, false)] {
        let yaml = format!(
            "{}checkConnectionOnBorrow: {on}\ncheckConnectionWhileIdle: false\n",
            base(&pg)
        );
        let (_env, db) = started(&yaml).await.unwrap();
        pg.sql(
            "orders",
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity \
             WHERE datname = 'orders' AND pid <> pg_backend_pid()",
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut c = db.acquire().await.unwrap();
        let outcome: Result<i32, DbError> = db
            .timed("probe", sqlx::query_scalar("SELECT 1").fetch_one(&mut *c))
            .await;
        assert_eq!(
            outcome.is_ok(),
            survives,
            "checkConnectionOnBorrow {on}: {outcome:?}"
        );
        if let Err(e) = outcome {
            assert!(e.is_unavailable(), "{e}");
        }
        drop(c);
        Managed::stop(&db).await.unwrap();
    }
}

/// Catches: a database lost at start not stopping the start (or stopping it although
/// ignoreExceptionOnPreLoad is on), calls hanging past maxWaitForConnection while it is
/// down, or no recovery once it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_database_answers_within_max_wait_and_is_recovered_from() {
    let mut pg = Server::start();
    let yaml = format!("{}maxWaitForConnection: 500ms\n", base(&pg));
    pg.stop();
    let e = started(&yaml).await.err().unwrap();
    assert!(e.contains(&format!("127.0.0.1:{}", pg.port())), "{e}");
    let (_env, db) = started(&format!("{yaml}ignoreExceptionOnPreLoad: true\n"))
        .await
        .unwrap();
    assert!(!db.check().await.is_healthy());
    pg.resume();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !db.check().await.is_healthy() {
        assert!(
            Instant::now() < deadline,
            "not healthy once the database is back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(text(&db, "SELECT 'back'::text").await, "back");

    pg.stop();
    for _ in 0..3 {
        let t = Instant::now();
        let e = match db.acquire().await {
            Ok(mut c) => db
                .timed(
                    "probe",
                    sqlx::query_scalar::<_, i32>("SELECT 1").fetch_one(&mut *c),
                )
                .await
                .err()
                .unwrap(),
            Err(e) => e,
        };
        assert!(e.is_unavailable(), "{e}");
        assert!(t.elapsed() < Duration::from_secs(2), "{:?}", t.elapsed());
    }
    assert!(!db.check().await.is_healthy());
    pg.resume();
    assert_eq!(text(&db, "SELECT 'again'::text").await, "again");
    assert!(db.pool().size() <= 4);
    Managed::stop(&db).await.unwrap();
}

/// Catches: a connection kept from the pool by a query whose caller went away (a request
/// cancelled by its client's disconnect drops its handler's future the same way).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_query_dropped_midway_gives_its_connection_back() {
    let pg = Server::start();
    let (env, db) = started(&base(&pg)).await.unwrap();
    let active = || {
        env.metrics()
            .gauge(
                "ferrowizard.db.connections",
                &[("database", "orders"), ("state", "active")],
                || -1.0,
            )
            .unwrap()
            .value()
    };
    let slow = tokio::spawn({
        let db = db.clone();
        async move {
            let mut c = db.acquire().await.unwrap();
            let _ = db
                .timed("slow", sqlx::query("SELECT pg_sleep(1)").execute(&mut *c))
                .await;
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(active(), 1.0);
    slow.abort();
    let deadline = Instant::now() + Duration::from_secs(5);
    while active() != 0.0 {
        assert!(
            Instant::now() < deadline,
            "the connection was not given back"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(db.pool().size() <= 4);
    assert_eq!(text(&db, "SELECT 'next'::text").await, "next");
    Managed::stop(&db).await.unwrap();
}
