//! The orders service in this process, on SQLite and on a real PostgreSQL: its API, its
//! health check and metrics, and its volley scenario run against it.

#[path = "../../../crates/db/tests/support/postgres.rs"]
mod postgres;

use std::path::Path;

use ferrowizard::testing::TestService;
use orders::Orders;
use serde_json::{Value, json};

/// Migrates the database `database` (a YAML mapping's body) names, with `orders db migrate`
/// run in this process; the configuration text.
fn migrated(dir: &Path, database: &str) -> String {
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    let yaml = format!(
        "logging: {{level: WARN, appenders: []}}\ndatabase:\n{database}  migrations: {}\n",
        migrations.display()
    );
    let config = dir.join("config.yaml");
    std::fs::write(&config, &yaml).unwrap();
    let code = ferrowizard::run_from(
        Orders,
        ["orders", "db", "migrate", config.to_str().unwrap()],
    );
    assert_eq!(code, std::process::ExitCode::SUCCESS);
    yaml
}

/// The API's answers, its health check and its query timers.
async fn api(service: &TestService) {
    let created = service
        .post_json("/accounts", &json!({"name": "Ada"}))
        .await
        .unwrap();
    assert_eq!(created.status, 201, "{}", created.text());
    let account: Value = created.json().unwrap();
    let id = account["id"].as_str().unwrap();
    assert_eq!(account["name"], "Ada");

    let got = service.get(&format!("/accounts/{id}")).await.unwrap();
    assert_eq!(got.json::<Value>().unwrap(), account);

    let placed = service
        .post_json(
            &format!("/accounts/{id}/orders"),
            &json!({"item": "widget", "quantity": 3}),
        )
        .await
        .unwrap();
    assert_eq!(placed.status, 201, "{}", placed.text());
    let order: Value = placed.json().unwrap();
    assert_eq!(order["accountId"], id);
    assert_eq!(order["quantity"], 3);
    let oid = order["id"].as_str().unwrap();
    let read = service.get(&format!("/orders/{oid}")).await.unwrap();
    assert_eq!(read.json::<Value>().unwrap(), order);
    let listed = service
        .get(&format!("/accounts/{id}/orders"))
        .await
        .unwrap();
    assert_eq!(listed.json::<Value>().unwrap(), json!([order]));

    // No such order: 404; an order for no account, or of no quantity: 409.
    assert_eq!(service.get("/orders/nope").await.unwrap().status, 404);
    let orphan = service
        .post_json(
            "/accounts/nope/orders",
            &json!({"item": "x", "quantity": 1}),
        )
        .await
        .unwrap();
    assert_eq!(orphan.status, 409, "{}", orphan.text());
    let none = service
        .post_json(
            &format!("/accounts/{id}/orders"),
            &json!({"item": "x", "quantity": 0}),
        )
        .await
        .unwrap();
    assert_eq!(none.status, 409, "{}", none.text());

    let health: Value = service
        .admin_get("/healthcheck")
        .await
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(health["orders"]["healthy"], true, "{health}");
    let metrics = service
        .admin_get("/metrics/prometheus")
        .await
        .unwrap()
        .text();
    for line in [
        "ferrowizard_db_queries_seconds_count{database=\"orders\",query=\"orders.by_id\"} 2",
        "ferrowizard_db_connections{database=\"orders\",state=\"active\"} ",
    ] {
        assert!(metrics.contains(line), "{line} not in:\n{metrics}");
    }
    // Each connection goes back to the pool once its request is answered (a moment after
    // the response).
    let active = "ferrowizard_db_connections{database=\"orders\",state=\"active\"} 0\n";
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    loop {
        let metrics = service
            .admin_get("/metrics/prometheus")
            .await
            .unwrap()
            .text();
        if metrics.contains(active) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "connections still held:\n{metrics}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Runs the example's volley scenario for `seconds` against `base`; (requests, KOs).
fn volley(dir: &Path, base: &str, seconds: u32) -> (u64, u64) {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("load/orders.yaml"))
            .unwrap()
            .replace("http://127.0.0.1:8090", base)
            .replace("during: 20s", &format!("during: {seconds}s"));
    let simulation = volley::scenario::load_str("orders.yaml", &text).unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stats = runtime.block_on(async {
        let run = volley::engine::prepare(&simulation, dir).unwrap();
        assert!(
            volley::engine::execute(run.clone(), &simulation).await,
            "cut at maxDuration"
        );
        run.snapshot()
    });
    (stats.global.requests, stats.global.kos)
}

/// Catches: a route, an error's status, the health check or a query timer wrong on SQLite, or
/// the scenario failing against it.
#[test]
fn orders_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let database = format!(
        "  url: sqlite:{}\n  properties: {{journal_mode: WAL}}\n",
        dir.path().join("o.db").display()
    );
    let yaml = migrated(dir.path(), &database);
    let service = TestService::start(Orders, &yaml).unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(api(&service));
    let (requests, kos) = volley(dir.path(), service.application_url(), 2);
    assert!(requests >= 300, "{requests}");
    assert_eq!(kos, 0);
}

/// The same on a real PostgreSQL, by one line of configuration (the url; the password beside
/// it).
#[test]
fn orders_on_postgres() {
    let pg = postgres::Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let database = format!(
        "  url: {}\n  password: {}\n",
        pg.url("orders"),
        postgres::PASSWORD
    );
    let yaml = migrated(dir.path(), &database);
    let service = TestService::start(Orders, &yaml).unwrap();
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(api(&service));
    let (requests, kos) = volley(dir.path(), service.application_url(), 2);
    assert!(requests >= 300, "{requests}");
    assert_eq!(kos, 0);
    let kept = pg.sql("orders", "SELECT count(*) FROM orders");
    assert!(kept.parse::<u64>().unwrap() >= 75, "{kept}");
}
