//! The Prometheus text, fed to a strict parser (`openmetrics-parser`'s pest grammar): it must
//! parse, carry the values and labels we put in, and the parser must reject broken text (so a
//! pass means something).

use std::collections::HashMap;
use std::time::Duration;

use ferrowizard_metrics::MetricRegistry;
use openmetrics_parser::prometheus::parse_prometheus;
use openmetrics_parser::{MetricNumber, PrometheusType, PrometheusValue};

fn populated() -> MetricRegistry {
    let r = MetricRegistry::new();
    r.counter("ferrowizard.requests.active").unwrap().add(3);
    r.describe(
        "ferrowizard.requests.active",
        "Requests in flight \\ now\nsecond line",
    );
    r.gauge("jvm.like.threads", &[], || 12.5).unwrap();
    r.settable_gauge_with("queue.depth", &[("queue", "say \"hi\"\\\nbye")])
        .unwrap()
        .set(4.0);
    let h = r.histogram("response.size").unwrap();
    for v in [100, 200, 300] {
        h.update(v);
    }
    r.meter_with("ferrowizard.responses", &[("status", "2xx")])
        .unwrap()
        .mark_n(7);
    r.meter_with("ferrowizard.responses", &[("status", "5xx")])
        .unwrap()
        .mark_n(1);
    let get = r
        .timer_with(
            "ferrowizard.requests",
            &[("method", "GET"), ("route", "/quotes/{symbol}")],
        )
        .unwrap();
    get.update(Duration::from_millis(250));
    get.update(Duration::from_millis(250));
    r.timer_with(
        "ferrowizard.requests",
        &[("method", "POST"), ("route", "/events")],
    )
    .unwrap()
    .update(Duration::from_millis(40));
    r.describe("ferrowizard.requests", "Requests by route template");
    r
}

fn as_f64(n: &MetricNumber) -> f64 {
    n.as_f64()
}

#[test]
fn the_text_parses_strictly() {
    let text = populated().render_prometheus();
    let parsed = parse_prometheus(&text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    let mut names: Vec<&String> = parsed.families.keys().collect();
    names.sort();
    assert_eq!(
        names,
        [
            "ferrowizard_requests_active_total",
            "ferrowizard_requests_seconds",
            "ferrowizard_responses_total",
            "jvm_like_threads",
            "queue_depth",
            "response_size",
        ]
    );
    // One TYPE per family, and every family's lines together (the parser refuses a family
    // that comes back after another one started).
    assert_eq!(text.matches("# TYPE ").count(), 6);
}

#[test]
fn types_and_values_are_carried() {
    let parsed = parse_prometheus(&populated().render_prometheus()).unwrap();
    let f = &parsed.families;

    let active = &f["ferrowizard_requests_active_total"];
    assert_eq!(active.family_type, PrometheusType::Counter);
    assert_eq!(active.help, "Requests in flight \\ now\nsecond line");
    match &active.iter_samples().next().unwrap().value {
        PrometheusValue::Counter(c) => assert_eq!(as_f64(&c.value), 3.0),
        other => panic!("{other:?}"),
    }

    let threads = &f["jvm_like_threads"];
    assert_eq!(threads.family_type, PrometheusType::Gauge);
    match &threads.iter_samples().next().unwrap().value {
        PrometheusValue::Gauge(g) => assert_eq!(as_f64(g), 12.5),
        other => panic!("{other:?}"),
    }

    let responses = &f["ferrowizard_responses_total"];
    assert_eq!(responses.family_type, PrometheusType::Counter);
    let by_status: HashMap<String, f64> = responses
        .iter_samples()
        .map(|s| {
            let status = s
                .get_labelset()
                .unwrap()
                .get_label_value("status")
                .unwrap()
                .to_owned();
            match &s.value {
                PrometheusValue::Counter(c) => (status, as_f64(&c.value)),
                other => panic!("{other:?}"),
            }
        })
        .collect();
    assert_eq!(by_status["2xx"], 7.0);
    assert_eq!(by_status["5xx"], 1.0);

    let sizes = &f["response_size"];
    assert_eq!(sizes.family_type, PrometheusType::Summary);
    match &sizes.iter_samples().next().unwrap().value {
        PrometheusValue::Summary(s) => {
            assert_eq!(s.count, Some(3));
            assert_eq!(s.sum.as_ref().map(as_f64), Some(600.0));
            let quantiles: Vec<f64> = s.quantiles.iter().map(|q| q.quantile).collect();
            assert_eq!(quantiles, [0.5, 0.75, 0.95, 0.98, 0.99, 0.999]);
            assert_eq!(as_f64(&s.quantiles[0].value), 200.0);
            assert_eq!(as_f64(&s.quantiles[5].value), 300.0);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn timers_are_summaries_in_seconds() {
    let parsed = parse_prometheus(&populated().render_prometheus()).unwrap();
    let requests = &parsed.families["ferrowizard_requests_seconds"];
    assert_eq!(requests.family_type, PrometheusType::Summary);
    assert_eq!(requests.help, "Requests by route template");
    let get = requests
        .iter_samples()
        .find(|s| s.get_labelset().unwrap().get_label_value("method") == Some("GET"))
        .unwrap();
    assert_eq!(
        get.get_labelset().unwrap().get_label_value("route"),
        Some("/quotes/{symbol}")
    );
    match &get.value {
        PrometheusValue::Summary(s) => {
            assert_eq!(s.count, Some(2));
            assert_eq!(s.sum.as_ref().map(as_f64), Some(0.5));
            assert!(s.quantiles.iter().all(|q| as_f64(&q.value) == 0.25));
        }
        other => panic!("{other:?}"),
    }
    let text = populated().render_prometheus();
    assert!(
        text.contains("ferrowizard_requests_seconds_sum{method=\"POST\",route=\"/events\"} 0.04\n")
    );
    assert!(
        text.contains("ferrowizard_requests_seconds_count{method=\"POST\",route=\"/events\"} 1\n")
    );
}

#[test]
fn label_values_are_escaped_and_read_back_unchanged() {
    let text = populated().render_prometheus();
    assert!(
        text.contains(r#"queue_depth{queue="say \"hi\"\\\nbye"} 4"#),
        "{text}"
    );
    let parsed = parse_prometheus(&text).unwrap();
    let sample = parsed.families["queue_depth"]
        .iter_samples()
        .next()
        .unwrap();
    assert_eq!(
        sample.get_labelset().unwrap().get_label_value("queue"),
        Some("say \"hi\"\\\nbye")
    );
}

#[test]
fn help_is_escaped_and_comes_before_type() {
    let text = populated().render_prometheus();
    let help = text
        .find(
            "# HELP ferrowizard_requests_active_total Requests in flight \\\\ now\\nsecond line\n",
        )
        .expect(&text);
    let type_line = text
        .find("# TYPE ferrowizard_requests_active_total counter\n")
        .unwrap();
    assert!(help < type_line);
}

#[test]
fn names_are_sanitized() {
    let r = MetricRegistry::new();
    r.counter("9 lives/of-a.cat").unwrap().inc();
    r.settable_gauge_with("g", &[("label.with-dots", "v"), ("2nd", "w")])
        .unwrap()
        .set(1.0);
    let text = r.render_prometheus();
    assert!(text.contains("_9_lives_of_a_cat_total 1\n"), "{text}");
    assert!(
        text.contains(r#"g{label_with_dots="v",_2nd="w"} 1"#),
        "{text}"
    );
    parse_prometheus(&text).unwrap();
}

#[test]
fn the_parser_rejects_broken_text() {
    // Without this, a parser that accepted anything would make the tests above pass.
    let good = populated().render_prometheus();
    assert!(parse_prometheus(&good).is_ok());

    let unterminated = good.replacen("status=\"2xx\"", "status=\"2xx", 1);
    assert!(parse_prometheus(&unterminated).is_err());

    let raw_newline_in_label = good.replacen(r"\nbye", "\nbye", 1);
    assert!(parse_prometheus(&raw_newline_in_label).is_err());

    let dotted_name = good.replacen("jvm_like_threads 12.5", "jvm.like.threads 12.5", 1);
    assert!(parse_prometheus(&dotted_name).is_err());

    let split_family = format!("{good}# TYPE queue_depth gauge\nqueue_depth 1\n");
    assert!(parse_prometheus(&split_family).is_err());

    let garbage_line = format!("{good}this is not a sample\n");
    assert!(parse_prometheus(&garbage_line).is_err());
}

#[test]
fn an_empty_registry_renders_nothing() {
    assert_eq!(MetricRegistry::new().render_prometheus(), "");
}
