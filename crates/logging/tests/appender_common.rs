//! The settings every appender has live in one `AppenderCommon` field in Rust, yet in YAML
//! they stay keys beside the appender's own: read, refused, placed in errors and dumped as
//! if the appender were one flat section.

use ferrowizard_config::{Level, Loader};
use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::AppenderFactory;

fn errors(yaml: &str) -> String {
    Loader::new()
        .load_str::<LoggingFactory>("logging.yaml", yaml)
        .expect_err("the file has errors")
        .to_string()
}

#[test]
fn common_and_own_keys_are_read_side_by_side() {
    let yaml =
        "appenders:\n  - type: tcp\n    threshold: WARN\n    port: 5000\n    queueSize: 64\n";
    let factory: LoggingFactory = Loader::new().load_str("logging.yaml", yaml).unwrap();
    let AppenderFactory::Tcp(tcp) = &factory.appenders[0] else {
        panic!("{:?}", factory.appenders[0]);
    };
    assert_eq!(tcp.target.port, 5000);
    assert_eq!(tcp.common.threshold, Level::Warn);
    assert_eq!(factory.appenders[0].common().queue_size, 64);
    assert_eq!(factory.appenders[0].common().time_zone, "UTC");
}

#[test]
fn a_misspelt_common_key_is_placed_and_corrected() {
    let report = errors(
        "appenders:\n  - type: file\n    currentLogFilename: a.log\n    archive: false\n    treshold: WARN\n",
    );
    assert!(
        report.contains("logging.yaml:5:5: Unrecognized field at: appenders[0].treshold"),
        "{report}"
    );
    assert!(report.contains("- threshold"), "{report}");
}

#[test]
fn a_misspelt_own_key_is_placed_and_corrected() {
    let report = errors("appenders:\n  - type: console\n    traget: stderr\n");
    assert!(
        report.contains("logging.yaml:3:5: Unrecognized field at: appenders[0].traget"),
        "{report}"
    );
    assert!(report.contains("- target"), "{report}");
}

#[test]
fn an_invalid_common_value_is_placed_at_its_key() {
    let report = errors("appenders:\n  - type: udp\n    port: 9\n    queueSize: 0\n");
    assert!(
        report
            .contains("logging.yaml:4:16: Invalid value at: appenders[0].queueSize; lower than 1"),
        "{report}"
    );
}

#[test]
fn the_dump_writes_common_keys_beside_the_appenders_own() {
    let yaml = "appenders:\n  - type: console\n    target: stderr\n    neverBlock: true\n";
    let factory: LoggingFactory = Loader::new().load_str("logging.yaml", yaml).unwrap();
    let dumped = serde_json::to_value(&factory).unwrap();
    let appender = dumped["appenders"][0].as_object().unwrap();
    assert_eq!(appender["type"], "console");
    assert_eq!(appender["target"], "stderr");
    assert_eq!(appender["neverBlock"], true);
    assert_eq!(appender["queueSize"], 4096);
    assert!(!appender.contains_key("common"), "{appender:?}");
    let text = dumped.to_string();
    let again: LoggingFactory = Loader::new().load_str("dump.json", &text).unwrap();
    assert_eq!(again, factory);
}
