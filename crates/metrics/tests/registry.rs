//! The registry: get-or-create, its refusals as error values, and recording from threads.

use std::sync::Arc;
use std::thread;

use ferrowizard_metrics::{MetricKind, MetricRegistry, RegistryError};

#[test]
fn the_same_name_and_labels_give_the_same_metric() {
    let r = MetricRegistry::new();
    r.counter("a").unwrap().inc();
    r.counter("a").unwrap().inc();
    assert_eq!(r.counter("a").unwrap().count(), 2);

    let labelled = r
        .timer_with("t", &[("method", "GET"), ("route", "/x")])
        .unwrap();
    labelled.update(std::time::Duration::from_millis(1));
    // Label order does not make another series.
    let again = r
        .timer_with("t", &[("route", "/x"), ("method", "GET")])
        .unwrap();
    assert_eq!(again.count(), 1);
    let other = r
        .timer_with("t", &[("method", "POST"), ("route", "/x")])
        .unwrap();
    assert_eq!(other.count(), 0);
}

#[test]
fn a_name_asked_for_as_another_type_is_an_error() {
    let r = MetricRegistry::new();
    r.counter("requests").unwrap();
    assert_eq!(
        r.meter("requests").unwrap_err(),
        RegistryError::TypeConflict {
            name: "requests".into(),
            existing: MetricKind::Counter,
            requested: MetricKind::Meter,
        }
    );
    assert!(matches!(
        r.histogram_with("requests", &[("a", "b")]),
        Err(RegistryError::TypeConflict { .. })
    ));
    assert!(matches!(
        r.gauge("requests", &[], || 1.0),
        Err(RegistryError::TypeConflict { .. })
    ));
    assert!(matches!(
        r.timer("requests"),
        Err(RegistryError::TypeConflict { .. })
    ));
    assert_eq!(
        r.meter("requests").unwrap_err().to_string(),
        "metric \"requests\" is a counter, not a meter"
    );
}

#[test]
fn a_function_gauge_cannot_be_set() {
    let r = MetricRegistry::new();
    r.gauge("pool.free", &[], || 3.0).unwrap();
    assert_eq!(
        r.settable_gauge("pool.free").unwrap_err(),
        RegistryError::NotSettable {
            name: "pool.free".into()
        }
    );
    // A settable gauge can be read as a gauge, and asking again keeps the first function.
    let g = r.gauge("pool.free", &[], || 99.0).unwrap();
    assert_eq!(g.value(), 3.0);
    let s = r.settable_gauge("depth").unwrap();
    s.set(2.0);
    assert_eq!(r.gauge("depth", &[], || 0.0).unwrap().value(), 2.0);
}

#[test]
fn series_of_a_family_share_their_label_names() {
    let r = MetricRegistry::new();
    r.counter_with("c", &[("method", "GET")]).unwrap();
    assert!(matches!(
        r.counter_with("c", &[("verb", "GET")]),
        Err(RegistryError::LabelMismatch { .. })
    ));
    assert!(matches!(
        r.counter("c"),
        Err(RegistryError::LabelMismatch { .. })
    ));
}

#[test]
fn bad_names_and_labels_are_errors() {
    let r = MetricRegistry::new();
    assert_eq!(r.counter("").unwrap_err(), RegistryError::EmptyName);
    assert!(matches!(
        r.counter_with("c", &[("", "x")]),
        Err(RegistryError::InvalidLabels { .. })
    ));
    assert!(matches!(
        r.counter_with("c", &[("a", "x"), ("a", "y")]),
        Err(RegistryError::InvalidLabels { .. })
    ));
    // Written the same way once sanitized.
    assert!(matches!(
        r.counter_with("c", &[("a.b", "x"), ("a_b", "y")]),
        Err(RegistryError::InvalidLabels { .. })
    ));
    // A summary's own label.
    assert!(matches!(
        r.timer_with("t", &[("quantile", "x")]),
        Err(RegistryError::InvalidLabels { .. })
    ));
    r.counter_with("fine", &[("quantile", "x")]).unwrap();
}

#[test]
fn names_that_would_render_alike_are_refused() {
    let r = MetricRegistry::new();
    r.counter("http.requests").unwrap();
    // Both would be `http_requests_total` in Prometheus.
    assert_eq!(
        r.counter("http_requests").unwrap_err(),
        RegistryError::NameCollision {
            name: "http_requests".into(),
            other: "http.requests".into(),
            rendered: "http_requests_total".into(),
        }
    );
    assert!(matches!(
        r.meter("http-requests_total"),
        Err(RegistryError::NameCollision { .. })
    ));
    // A summary's `_count` sample against a gauge of that name.
    r.histogram("size").unwrap();
    assert!(matches!(
        r.settable_gauge("size_count"),
        Err(RegistryError::NameCollision { .. })
    ));
    // Two series with one DropWizard JSON key.
    r.settable_gauge_with("q", &[("name", "a")]).unwrap();
    assert!(matches!(
        r.settable_gauge("q.a"),
        Err(RegistryError::NameCollision { .. })
    ));
}

#[test]
fn removed_series_are_no_longer_rendered() {
    let r = MetricRegistry::new();
    r.gauge("pool.free", &[], || 3.0).unwrap();
    assert!(r.render_prometheus().contains("pool_free 3"));
    assert!(r.remove("pool.free", &[]));
    assert!(!r.remove("pool.free", &[]));
    assert!(!r.render_prometheus().contains("pool_free"));
    // The name is free again, for another function or another type.
    r.gauge("pool.free", &[], || 4.0).unwrap();
    assert!(r.render_prometheus().contains("pool_free 4"));
    assert!(r.remove("pool.free", &[]));
    r.counter("pool.free").unwrap();
}

#[test]
fn a_gauge_may_look_up_metrics_while_rendered() {
    // Renderers call gauge functions with the registry unlocked.
    let r = MetricRegistry::new();
    let inner = r.clone();
    r.gauge("reentrant", &[], move || {
        inner
            .counter("looked.up")
            .map(|c| c.count() as f64)
            .unwrap_or(-1.0)
    })
    .unwrap();
    assert!(r.render_prometheus().contains("reentrant 0"));
    assert!(
        r.render_json(false)
            .contains("\"reentrant\":{\"value\":0.0}")
    );
}

#[test]
fn four_threads_count_every_increment() {
    let r = MetricRegistry::new();
    let counter = r.counter("concurrent").unwrap();
    let meter = r.meter("concurrent.meter").unwrap();
    let histogram = r.histogram("concurrent.histogram").unwrap();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let (counter, meter, histogram) = (counter.clone(), meter.clone(), histogram.clone());
            let registry = r.clone();
            thread::spawn(move || {
                // Also races get-or-create from every thread.
                let looked_up = registry.counter("concurrent").unwrap();
                for i in 0..100_000 {
                    if i % 2 == 0 {
                        counter.inc()
                    } else {
                        looked_up.inc()
                    }
                    meter.mark();
                    if i % 100 == 0 {
                        histogram.update(t * 1_000_000 + i);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(counter.count(), 400_000);
    assert_eq!(meter.count(), 400_000);
    assert_eq!(histogram.count(), 4_000);
    assert_eq!(r.counter("concurrent").unwrap().count(), 400_000);
}

#[test]
fn registries_are_independent_and_handles_are_shared() {
    let a = MetricRegistry::new();
    let b = MetricRegistry::new();
    a.counter("x").unwrap().inc();
    assert_eq!(b.counter("x").unwrap().count(), 0);
    let a2 = a.clone();
    assert_eq!(a2.counter("x").unwrap().count(), 1);
    let shared = Arc::new(a);
    assert!(shared.render_json(false).contains("\"x\":{\"count\":1}"));
}
