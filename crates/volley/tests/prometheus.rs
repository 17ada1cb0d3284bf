//! `volley run --prometheus ADDR` scraped by a real Prometheus (Debian's `prometheus`, which
//! `.ci/run` installs): the target is up, and a query for the request counter gives the
//! requests the run sent.

mod support;

use support::Killed;
use support::prometheus::{self, Prometheus};

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::Command;

use bytes::Bytes;
use http_body_util::Full;
use hyper::Response;

/// Catches: the endpoint missing or not in Prometheus' format (the scrape fails: `up` is 0),
/// counters that lag or miscount (the query differs from results.json's count), a name or
/// label that Prometheus refuses.
#[test]
fn a_real_prometheus_scrapes_the_running_test() {
    prometheus::require_installed();
    let target = support::serve(|_| async { Response::new(Full::new(Bytes::from("ok"))) });
    let dir = tempfile::tempdir().unwrap();
    let metrics: SocketAddr = format!("127.0.0.1:{}", prometheus::free_port())
        .parse()
        .unwrap();
    let prometheus = Prometheus::scraping(dir.path(), "volley", metrics, "/metrics");
    // 60 users send 3 requests each in the first second, then stay 6 s (a pause), so that
    // Prometheus scrapes the final counts several times while the run is still going.
    let scenario = support::scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{target}\nscenarios:\n  - name: live\n    injection: [{{rampUsers: 60, during: 1s}}]\n    steps:\n      \
             - repeat: {{times: 3, steps: [{{request: {{name: quote, path: /quote}}}}]}}\n      \
             - pause: 6s\n"
        ),
    );
    let metrics_arg = metrics.to_string();
    let mut volley = Killed(support::spawn_run(
        dir.path(),
        &scenario,
        &[Path::new("--prometheus"), Path::new(&metrics_arg)],
    ));
    let stdout = volley.0.stdout.take().unwrap();
    let lines: Vec<String> = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .collect();
    let status = volley.0.wait().unwrap();
    assert!(status.success(), "{lines:#?}");
    assert!(
        lines
            .iter()
            .any(|l| l == &format!("Prometheus metrics: http://{metrics}/metrics")),
        "{lines:#?}"
    );
    let results = support::results(dir.path());
    let sent = results["global"]["total"]["count"].as_f64().unwrap();
    assert_eq!(sent, 180.0);
    // What Prometheus stored while the run went on (its series go stale once the target is
    // gone, hence max_over_time over the last minute).
    let up = prometheus.wait_for(r#"max_over_time(up{job="volley"}[1m])"#, 1.0);
    assert_eq!(up, Some(1.0), "Prometheus never scraped volley");
    let counted = prometheus.wait_for(
        r#"sum(max_over_time(volley_requests_total{job="volley"}[1m]))"#,
        sent,
    );
    assert_eq!(counted, Some(sent), "the request counter Prometheus stored");
    let users =
        prometheus.query(r#"max_over_time(volley_users_started_total{scenario="live"}[1m])"#);
    assert_eq!(users, Some(60.0));
    let p99 = prometheus.query(
        r#"max_over_time(volley_response_time_seconds{request="quote",quantile="0.99"}[1m])"#,
    );
    assert!(p99.is_some_and(|v| v > 0.0 && v < 5.0), "{p99:?}");
}

/// A port already taken is exit 1 naming it, before any request is sent.
#[test]
fn a_taken_prometheus_address_is_an_error_before_the_run() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let scenario = support::scenario(
        dir.path(),
        "baseUrl: http://127.0.0.1:1\nscenarios:\n  - name: s\n    injection: [{atOnceUsers: 1}]\n    steps: [{request: {name: r, path: /}}]\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_volley"))
        .arg("run")
        .arg(&scenario)
        .arg("--out")
        .arg(dir.path().join("out"))
        .arg("--prometheus")
        .arg(addr.to_string())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("--prometheus {addr}")) && err.contains("in use"),
        "{err}"
    );
    assert!(!dir.path().join("out/results.json").exists());
}
