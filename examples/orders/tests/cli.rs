//! The orders binary's command line around its database: the password never printed, and a
//! database that cannot be reached at start one line and exit 1.

use assert_cmd::Command;

const SECRET: &str = "n0t-f0r-pr1nt1ng";

fn config(dir: &std::path::Path, url: &str) -> std::path::PathBuf {
    let path = dir.join("config.yaml");
    std::fs::write(
        &path,
        format!(
            "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
             adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n\
             logging: {{level: WARN, appenders: []}}\n\
             database:\n  url: {url}\n  user: orders\n  password: {SECRET}\n"
        ),
    )
    .unwrap();
    path
}

/// A port nothing listens on.
fn closed_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Catches: the password (the key's, or one inside the url) shown by `check --dump`.
#[test]
fn check_dump_shows_no_password() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("postgres://orders:{SECRET}@127.0.0.1:5432/orders");
    let out = Command::cargo_bin("orders")
        .unwrap()
        .args(["check", "--dump"])
        .arg(config(dir.path(), &url))
        .output()
        .unwrap();
    assert!(out.status.success());
    let dump = String::from_utf8_lossy(&out.stdout);
    assert!(!dump.contains(SECRET), "{dump}");
    assert!(dump.contains("  password: \"***\"\n"), "{dump}");
    assert!(
        dump.contains("postgres://orders:***@127.0.0.1:5432/orders"),
        "{dump}"
    );
}

/// Catches: a database down at start not stopping the service, or the line naming no host or
/// showing the password.
#[test]
fn a_database_down_at_start_is_one_line_and_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let port = closed_port();
    let url = format!("postgres://127.0.0.1:{port}/orders");
    let out = Command::cargo_bin("orders")
        .unwrap()
        .arg("server")
        .arg(config(dir.path(), &url))
        .timeout(std::time::Duration::from_secs(60))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "database orders did not start: cannot connect to postgres://orders@127.0.0.1:{port}/orders"
        )),
        "{err}"
    );
    assert!(!err.contains(SECRET), "{err}");
    assert!(!String::from_utf8_lossy(&out.stdout).contains("listening"));
}
