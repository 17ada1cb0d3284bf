//! DropWizard's appender keys that this model leaves out: each refused with its reason, at
//! the line it is written on, wherever the appender is.

use ferrowizard_config::{ErrorKind, Loader};
use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::REFUSED;

#[test]
fn each_refused_appender_key_says_why_where_it_is_written() {
    for r in REFUSED {
        let (_, kind) = r.path.split_once("[type=").unwrap();
        let (kind, key) = kind.split_once("].").unwrap();
        assert!(
            r.why.starts_with(key) && r.why.contains("has no meaning"),
            "{}",
            r.path
        );
        // At the root's appenders and at a logger's.
        let text = format!(
            "appenders:\n  - type: {kind}\n    {key}: x\nloggers:\n  app:\n    level: INFO\n    appenders:\n      - type: {kind}\n        {key}: x\n"
        );
        let report = Loader::new()
            .refuse(REFUSED)
            .load_str::<LoggingFactory>("logging.yaml", &text)
            .unwrap_err();
        let found: Vec<(String, String)> = report
            .errors
            .iter()
            .map(|e| (e.path.clone(), format!("{:?}", e.kind)))
            .collect();
        let want = ErrorKind::Refused(r.why.to_owned());
        assert_eq!(
            found,
            [
                (format!("appenders[0].{key}"), format!("{want:?}")),
                (
                    format!("loggers.app.appenders[0].{key}"),
                    format!("{want:?}")
                ),
            ],
            "{report}"
        );
        assert!(report.to_string().contains("logging.yaml:3:5:"), "{report}");
    }
    // A file appender keeps its immediateFlush.
    Loader::new()
        .refuse(REFUSED)
        .load_str::<LoggingFactory>(
            "logging.yaml",
            "appenders:\n  - {type: file, currentLogFilename: a.log, archive: false, immediateFlush: false}\n",
        )
        .unwrap();
}
