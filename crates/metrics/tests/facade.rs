//! The `metrics` facade: a recorder installed for this whole test binary (the facade takes one
//! per process), macros recorded through, and the result in both renderers.

use std::sync::OnceLock;
use std::time::Duration;

use ferrowizard_metrics::{MetricRegistry, REJECTED, install_recorder};
use openmetrics_parser::prometheus::parse_prometheus;
use serde_json::Value;

/// The registry installed as this process's recorder.
fn registry() -> &'static MetricRegistry {
    static REGISTRY: OnceLock<MetricRegistry> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        let registry = MetricRegistry::new();
        install_recorder(&registry).expect("first install");
        registry
    })
}

#[test]
fn macros_land_in_both_renderers() {
    let r = registry();
    metrics::describe_counter!("facade.requests", "Requests seen through the facade");
    metrics::counter!("facade.requests", "method" => "GET").increment(2);
    metrics::counter!("facade.requests", "method" => "GET").increment(1);
    metrics::counter!("facade.requests", "method" => "POST").absolute(10);
    metrics::counter!("facade.requests", "method" => "POST").absolute(4); // never backwards
    metrics::gauge!("facade.pool.size").set(8.0);
    metrics::gauge!("facade.pool.size").increment(2.0);
    metrics::gauge!("facade.pool.size").decrement(0.5);
    metrics::histogram!("facade.latency").record(Duration::from_micros(1500));
    metrics::histogram!("facade.latency").record(0.0025);

    let json: Value = serde_json::from_str(&r.render_json(false)).unwrap();
    assert_eq!(json["counters"]["facade.requests.GET"]["count"], 3);
    assert_eq!(json["counters"]["facade.requests.POST"]["count"], 10);
    assert_eq!(json["gauges"]["facade.pool.size"]["value"], 9.5);
    let h = &json["histograms"]["facade.latency"];
    assert_eq!(h["count"], 2);
    // Seconds, in fixed point to the microsecond: not truncated to 0.
    assert_eq!(h["min"], 0.0015);
    assert_eq!(h["max"], 0.0025);

    let text = r.render_prometheus();
    assert!(text.contains("# HELP facade_requests_total Requests seen through the facade\n"));
    assert!(
        text.contains("facade_requests_total{method=\"GET\"} 3\n"),
        "{text}"
    );
    assert!(text.contains("facade_pool_size 9.5\n"));
    assert!(text.contains("facade_latency_sum 0.004\n"), "{text}");
    assert!(text.contains("facade_latency_count 2\n"));
    parse_prometheus(&text).unwrap();
}

#[test]
fn facade_and_registry_share_metrics() {
    let r = registry();
    let native = r.counter("facade.shared").unwrap();
    native.add(5);
    metrics::counter!("facade.shared").increment(1);
    assert_eq!(native.count(), 6);
}

#[test]
fn refusals_record_nothing_and_are_counted() {
    let r = registry();
    r.timer("facade.taken").unwrap();
    let before = r.counter(REJECTED).unwrap().count();
    metrics::counter!("facade.taken").increment(1);
    metrics::counter!("facade.taken").increment(1); // the same refusal, counted once
    metrics::gauge!("facade.taken", "k" => "v").set(1.0);
    assert_eq!(r.counter(REJECTED).unwrap().count(), before + 2);
    assert_eq!(r.timer("facade.taken").unwrap().count(), 0);
}

#[test]
fn a_second_install_is_an_error() {
    let _ = registry();
    assert!(install_recorder(&MetricRegistry::new()).is_err());
}
