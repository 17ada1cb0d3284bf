//! `orders db migrate|status|rollback`, the real binary, on SQLite in a temporary folder and
//! on a real PostgreSQL started by the test.

#[path = "../../../crates/db/tests/support/postgres.rs"]
mod postgres;

use std::path::{Path, PathBuf};

use assert_cmd::Command;

/// A copy of the example's migrations in `dir/migrations`.
fn migrations(dir: &Path) -> PathBuf {
    let to = dir.join("migrations");
    std::fs::create_dir_all(&to).unwrap();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
    to
}

/// `orders db ACTION CONFIG`: its status, stdout and stderr.
fn db(config: &Path, action: &[&str]) -> (i32, String, String) {
    let out = Command::cargo_bin("orders")
        .unwrap()
        .arg("db")
        .args(action)
        .arg(config)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The migrations' whole story on the database at `url`: pending, applied, a failing file
/// applying nothing, a file changed after it was applied refused, rolled back.
fn story(dir: &Path, url: &str, extra: &str, tables: impl Fn() -> String) {
    let folder = migrations(dir);
    let config = dir.join("config.yaml");
    std::fs::write(
        &config,
        format!(
            "logging: {{level: WARN, appenders: []}}\ndatabase:\n  url: {url}\n{extra}  migrations: {}\n",
            folder.display()
        ),
    )
    .unwrap();
    let (code, out, err) = db(&config, &["status"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "pending  1_create_accounts.up.sql\npending  2_create_orders.up.sql\n0 applied, 2 pending\n"
    );
    let (code, out, err) = db(&config, &["migrate"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "applied 1_create_accounts.up.sql\napplied 2_create_orders.up.sql\n2 migrations applied, 0 before\n"
    );
    assert!(tables().contains("orders"), "{}", tables());

    // A failing file: its table is not made, and the error names the file.
    std::fs::write(
        folder.join("3_bad.up.sql"),
        "CREATE TABLE half (x BIGINT);\nINSERT INTO nowhere VALUES (1);\n",
    )
    .unwrap();
    std::fs::write(folder.join("3_bad.down.sql"), "DROP TABLE half;\n").unwrap();
    let (code, out, err) = db(&config, &["migrate"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        err.starts_with("orders: db: database orders: 3_bad.up.sql: ") && err.contains("nowhere"),
        "{err}"
    );
    assert!(!tables().contains("half"), "{}", tables());
    std::fs::remove_file(folder.join("3_bad.up.sql")).unwrap();
    std::fs::remove_file(folder.join("3_bad.down.sql")).unwrap();

    // A file changed after it was applied.
    let file = folder.join("2_create_orders.up.sql");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(&file, format!("{text}-- edited\n")).unwrap();
    let (code, _, err) = db(&config, &["migrate"]);
    assert_eq!(code, 1);
    assert!(
        err.contains("2_create_orders.up.sql was changed after it was applied"),
        "{err}"
    );
    let (_, out, _) = db(&config, &["status"]);
    assert!(out.contains("changed  2_create_orders.up.sql"), "{out}");
    std::fs::write(&file, text).unwrap();

    let (code, out, err) = db(&config, &["rollback"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(out, "rolled back 2_create_orders.down.sql\n");
    assert!(!tables().contains("orders"), "{}", tables());
    let (_, out, _) = db(&config, &["status"]);
    assert!(out.ends_with("1 applied, 1 pending\n"), "{out}");

    // Several at once, the newest first.
    assert_eq!(db(&config, &["migrate"]).0, 0);
    let (code, out, err) = db(&config, &["rollback", "--count", "2"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        out,
        "rolled back 2_create_orders.down.sql\nrolled back 1_create_accounts.down.sql\n"
    );
    assert!(!tables().contains("accounts"), "{}", tables());
}

/// Catches: the `migrations` folder not the one the config names, a failing file partly
/// applied or not named, a changed file accepted, status or rollback wrong, on SQLite.
#[test]
fn migrate_status_and_rollback_work_the_folder_the_config_names() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("orders.db");
    let tables = || sqlite_tables(&file);
    story(
        dir.path(),
        &format!("sqlite:{}", file.display()),
        "",
        tables,
    );
}

/// The tables of the SQLite database at `file`, read with sqlx.
fn sqlite_tables(file: &Path) -> String {
    use sqlx::Connection;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let mut c = sqlx::SqliteConnection::connect(&format!("sqlite:{}", file.display()))
            .await
            .unwrap();
        let names: Vec<String> =
            sqlx::query_scalar("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                .fetch_all(&mut c)
                .await
                .unwrap();
        names.join(",")
    })
}

/// The same story on a real PostgreSQL, with a password.
#[test]
fn migrations_on_postgres() {
    let pg = postgres::Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let tables = || {
        pg.sql(
            "orders",
            "SELECT string_agg(tablename, ',' ORDER BY tablename) FROM pg_tables WHERE schemaname = 'public'",
        )
    };
    story(
        dir.path(),
        &pg.url("orders"),
        &format!("  password: {}\n", postgres::PASSWORD),
        tables,
    );
}
