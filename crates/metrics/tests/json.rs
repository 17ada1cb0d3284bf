//! DropWizard's `/metrics` JSON: parsed back with serde_json and checked for its shape, keys,
//! units and values.

use std::time::Duration;

use ferrowizard_metrics::MetricRegistry;
use serde_json::Value;

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect()
}

fn populated() -> MetricRegistry {
    let r = MetricRegistry::new();
    r.counter("ferrowizard.requests.active").unwrap().add(3);
    r.gauge("jvm.like.threads", &[], || 12.0).unwrap();
    r.gauge("broken.gauge", &[], || f64::NAN).unwrap();
    r.settable_gauge_with("queue.depth", &[("queue", "events")])
        .unwrap()
        .set(4.5);
    let h = r.histogram("response.size").unwrap();
    for v in [100, 200, 300] {
        h.update(v);
    }
    r.meter("ferrowizard.responses.2xx").unwrap().mark_n(7);
    let t = r
        .timer_with(
            "ferrowizard.requests",
            &[("method", "GET"), ("route", "/quotes/{symbol}")],
        )
        .unwrap();
    t.update(Duration::from_millis(250));
    r
}

#[test]
fn the_document_has_dropwizards_sections_in_order() {
    let json: Value = serde_json::from_str(&populated().render_json(false)).unwrap();
    assert_eq!(
        keys(&json),
        [
            "version",
            "gauges",
            "counters",
            "histograms",
            "meters",
            "timers"
        ]
    );
    assert_eq!(json["version"], "4.0.0");
}

#[test]
fn an_empty_registry_renders_empty_sections() {
    assert_eq!(
        MetricRegistry::new().render_json(false),
        r#"{"version":"4.0.0","gauges":{},"counters":{},"histograms":{},"meters":{},"timers":{}}"#
    );
}

#[test]
fn gauges_and_counters() {
    let json: Value = serde_json::from_str(&populated().render_json(false)).unwrap();
    assert_eq!(
        keys(&json["gauges"]),
        ["broken.gauge", "jvm.like.threads", "queue.depth.events"]
    );
    assert_eq!(
        json["gauges"]["jvm.like.threads"],
        serde_json::json!({"value": 12.0})
    );
    assert_eq!(json["gauges"]["queue.depth.events"]["value"], 4.5);
    assert!(json["gauges"]["broken.gauge"]["value"].is_null());
    assert_eq!(
        json["counters"]["ferrowizard.requests.active"],
        serde_json::json!({"count": 3})
    );
}

#[test]
fn histograms_have_dropwizards_fields_sorted() {
    let json: Value = serde_json::from_str(&populated().render_json(false)).unwrap();
    let h = &json["histograms"]["response.size"];
    assert_eq!(
        keys(h),
        [
            "count", "max", "mean", "min", "p50", "p75", "p95", "p98", "p99", "p999", "stddev"
        ]
    );
    assert_eq!(h["count"], 3);
    // DropWizard writes min and max as longs.
    assert!(h["max"].is_i64() && h["min"].is_i64());
    assert_eq!(h["max"], 300);
    assert_eq!(h["min"], 100);
    assert_eq!(h["p50"], 200.0);
    assert!((h["mean"].as_f64().unwrap() - 200.0).abs() < 1e-9);
}

#[test]
fn meters_have_rates_per_second() {
    let json: Value = serde_json::from_str(&populated().render_json(false)).unwrap();
    let m = &json["meters"]["ferrowizard.responses.2xx"];
    assert_eq!(
        keys(m),
        [
            "count",
            "m15_rate",
            "m1_rate",
            "m5_rate",
            "mean_rate",
            "units"
        ]
    );
    assert_eq!(m["count"], 7);
    assert_eq!(m["units"], "events/second");
    assert!(m["mean_rate"].as_f64().unwrap() > 0.0);
}

#[test]
fn timers_are_in_milliseconds_and_calls_per_second_keyed_by_label_values() {
    let json: Value = serde_json::from_str(&populated().render_json(false)).unwrap();
    assert_eq!(
        keys(&json["timers"]),
        ["ferrowizard.requests.GET./quotes/{symbol}"]
    );
    let t = &json["timers"]["ferrowizard.requests.GET./quotes/{symbol}"];
    assert_eq!(
        keys(t),
        [
            "count",
            "duration_units",
            "m15_rate",
            "m1_rate",
            "m5_rate",
            "max",
            "mean",
            "mean_rate",
            "min",
            "p50",
            "p75",
            "p95",
            "p98",
            "p99",
            "p999",
            "rate_units",
            "stddev"
        ]
    );
    assert_eq!(t["count"], 1);
    assert_eq!(t["duration_units"], "milliseconds");
    assert_eq!(t["rate_units"], "calls/second");
    for field in ["max", "mean", "min", "p50", "p99", "p999"] {
        assert_eq!(t[field], 250.0, "{field}");
    }
    assert_eq!(t["stddev"], 0.0);
}

#[test]
fn pretty_is_the_same_document_indented() {
    let r = populated();
    let pretty = r.render_json(true);
    assert!(pretty.contains("\n  \"gauges\": {"));
    let compact = r.render_json(false);
    assert!(!compact.contains('\n'));
    let a: Value = serde_json::from_str(&pretty).unwrap();
    let b: Value = serde_json::from_str(&compact).unwrap();
    // Rates move with time between the two renders; compare everything else.
    assert_eq!(a["counters"], b["counters"]);
    assert_eq!(a["histograms"], b["histograms"]);
    assert_eq!(keys(&a["timers"]), keys(&b["timers"]));
}
