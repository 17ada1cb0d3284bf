//! The admin port's `/metrics/prometheus` scraped by a real Prometheus (Debian's
//! `prometheus`, which `.ci/run` installs): the target is up, and a query for the request
//! counter gives the requests the test sent.

mod common;
#[path = "../../../crates/volley/tests/support/prometheus.rs"]
mod prometheus;

use common::{connect, get, start, write_config};
use prometheus::Prometheus;

const CONFIG: &str = "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
    adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  requestLog: {appenders: []}\n\
    logging: {level: WARN, appenders: []}\n";

/// Catches: text Prometheus refuses (the scrape fails: `up` is 0, or the series is missing),
/// a request counter that misses requests or counts the admin port's scrapes.
#[test]
fn a_real_prometheus_scrapes_the_admin_port() {
    prometheus::require_installed();
    let dir = tempfile::tempdir().unwrap();
    let service = start(&write_config(dir.path(), CONFIG));
    let mut conn = connect(service.app);
    let sent = 37;
    for _ in 0..sent {
        assert_eq!(get(&mut conn, "/realtime/quotes/ACME").unwrap(), 200);
    }
    let prometheus =
        Prometheus::scraping(dir.path(), "realtime", service.admin, "/metrics/prometheus");
    assert_eq!(
        prometheus.wait_for(r#"up{job="realtime"}"#, 1.0),
        Some(1.0),
        "Prometheus never scraped the admin port"
    );
    assert_eq!(
        prometheus.wait_for(
            r#"ferrowizard_requests_seconds_count{job="realtime"}"#,
            f64::from(sent)
        ),
        Some(f64::from(sent)),
        "the request counter Prometheus stored"
    );
    // The request timer's quantiles are stored as well.
    let p99 = prometheus.query(r#"ferrowizard_requests_seconds{job="realtime",quantile="0.99"}"#);
    assert!(p99.is_some_and(|v| v > 0.0 && v < 1.0), "{p99:?}");
}
