//! The names the logging pipeline's metrics carry, as an operator reads them: a short name
//! and `appender`, `type` and `target` labels in Prometheus's text, clean dotted keys in
//! DropWizard's JSON, one series per appender even when two write the same kind of file.

mod common;

use std::collections::BTreeSet;

use common::{connect, request, start, write_config};

/// Two file appenders with the same file name (in two directories) and a request log that
/// writes a file too.
const CONFIG: &str = "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
    requestLog:\n    appenders:\n      - {type: file, currentLogFilename: DIR/access.log, archive: false}\n\
    logging:\n  level: INFO\n  appenders:\n    \
    - {type: file, currentLogFilename: DIR/a/app.log, archive: false}\n    \
    - {type: file, currentLogFilename: DIR/b/app.log, archive: false}\n";

fn admin(service: &common::Service, path: &str) -> String {
    let mut conn = connect(service.admin);
    let response = request(&mut conn, "GET", path, &[], b"").unwrap();
    assert_eq!(response.status, 200, "{}", response.body);
    response.body
}

#[test]
fn appenders_are_labelled_not_named_by_their_configuration_path() {
    let dir = tempfile::tempdir().unwrap();
    for sub in ["a", "b"] {
        std::fs::create_dir(dir.path().join(sub)).unwrap();
    }
    let service = start(&write_config(dir.path(), CONFIG));

    // Prometheus: a real parser accepts the text, and each appender is one labelled series.
    let text = admin(&service, "/metrics/prometheus");
    let parsed = openmetrics_parser::prometheus::parse_prometheus(&text)
        .unwrap_or_else(|e| panic!("{e:?}:\n{text}"));
    // The parser keeps label names sorted: appender, target, type.
    let capacity = &parsed.families["ferrowizard_logging_queue_capacity"];
    assert_eq!(capacity.get_label_names(), ["appender", "target", "type"]);
    for appender in [
        ["0", "app.log", "file"],
        ["1", "app.log", "file"],
        ["requestLog.0", "access.log", "file"],
    ] {
        let values = appender.map(str::to_owned);
        assert!(
            capacity.get_sample_by_label_values(&values).is_some(),
            "no {appender:?} in:\n{text}"
        );
    }
    let written = &parsed.families["ferrowizard_logging_written_total"];
    assert_eq!(
        written.get_label_names(),
        ["appender", "level", "target", "type"]
    );
    assert!(
        text.contains(
            "ferrowizard_logging_written_total{appender=\"1\",type=\"file\",target=\"app.log\",level=\"INFO\"} "
        ),
        "{text}"
    );
    assert!(!text.contains("appenders["), "{text}");

    // DropWizard's JSON: keys of `[A-Za-z0-9._-]` only, one per appender.
    let body = admin(&service, "/metrics");
    let json: serde_json::Value = serde_json::from_str(&body).unwrap();
    let mut keys = BTreeSet::new();
    for section in ["gauges", "counters"] {
        for key in json[section].as_object().unwrap().keys() {
            if key.starts_with("ferrowizard.logging.") {
                assert!(
                    key.chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')),
                    "{key}"
                );
                keys.insert(key.clone());
            }
        }
    }
    for key in [
        "ferrowizard.logging.queue.capacity.0.file.app.log",
        "ferrowizard.logging.queue.capacity.1.file.app.log",
        "ferrowizard.logging.queue.capacity.requestLog.0.file.access.log",
        "ferrowizard.logging.emitted.1.file.app.log.INFO",
    ] {
        assert!(keys.contains(key), "no {key} in {keys:#?}");
    }
    // 3 appenders: 5 gauges and counters each, and 3 counters for each of 5 levels.
    assert_eq!(keys.len(), 3 * (5 + 3 * 5), "{keys:#?}");
}
