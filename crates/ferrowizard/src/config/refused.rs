//! The DropWizard keys ferrowizard leaves out of its model on purpose, each refused with why
//! it has no meaning here and what to use instead: a key accepted and then ignored would be a
//! silent surprise.

use ferrowizard_config::{ConfigError, ErrorKind, Node, Refusal, Value};

/// Every refused key, by its path in the 4.x layout (the 0.6 layout's keys are moved there
/// first, and named as written).
pub(crate) const REFUSED: &[Refusal] = &[
    Refusal {
        path: "server.minThreads",
        why: "minThreads has no meaning here: requests run as tasks on a fixed pool of async \
              workers, so no thread is kept ready or started on demand; maxThreads bounds the \
              requests handled at once",
    },
    Refusal {
        path: "server.idleThreadTimeout",
        why: "idleThreadTimeout has no meaning here: the async workers are a fixed pool that \
              never shrinks; idle connections close after a connector's idleTimeout",
    },
    Refusal {
        path: "server.adminMinThreads",
        why: "adminMinThreads has no meaning here: the admin side is served by one async \
              worker of its own; adminMaxThreads bounds the admin requests handled at once",
    },
    Refusal {
        path: "server.requestLog.appenders[].threshold",
        why: "threshold has no meaning for the request log: its lines have no level \
              (DropWizard ignores it there too); appenders: [] turns the request log off",
    },
    Refusal {
        path: "server.requestLog.appenders[].includeCallerData",
        why: "includeCallerData has no meaning for the request log: a request has no caller \
              (file and line)",
    },
    Refusal {
        path: "server.gzip.bufferSize",
        why: "bufferSize has no meaning here: each chunk a handler writes is compressed and \
              sent as it comes (tower-http's compression), with no buffer to size; \
              minimumEntitySize decides which responses are compressed",
    },
];

/// With `logging.type: external` the application configures logging itself: the section's
/// other keys would be ignored, so each is an error.
pub(crate) fn external_logging(root: &mut Node, errors: &mut Vec<ConfigError>) {
    let Some(logging) = root.get_mut("logging") else {
        return;
    };
    let external = logging
        .get("type")
        .is_some_and(|t| matches!(&t.value, Value::Str(s) if s.eq_ignore_ascii_case("external")));
    if !external {
        return;
    }
    if let Value::Map(entries) = &mut logging.value {
        entries.retain(|(k, v)| {
            let key = k.key_text();
            if key == "type" {
                return true;
            }
            let at = v
                .written_at
                .clone()
                .unwrap_or_else(|| format!("logging.{key}"));
            errors.push(ConfigError::new(
                k.origin.clone(),
                at,
                ErrorKind::Invalid(format!(
                    "{key} has no meaning with logging.type: external (the application's own \
                     tracing subscriber decides levels and appenders); remove it"
                )),
            ));
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{FrameworkConfiguration, dump, load_str};
    use ferrowizard_config::ErrorKind;

    /// `a.b.c` as nested YAML mappings ending in `value`.
    fn yaml(path: &str, value: &str) -> String {
        let mut out = String::new();
        let keys: Vec<&str> = path.split('.').collect();
        for (depth, key) in keys.iter().enumerate() {
            out.push_str(&"  ".repeat(depth));
            out.push_str(key);
            out.push(':');
            out.push(if depth + 1 == keys.len() { ' ' } else { '\n' });
        }
        out.push_str(value);
        out.push('\n');
        out
    }

    #[test]
    fn each_refused_key_is_reported_with_its_reason_where_it_is_written() {
        let model = dump(&FrameworkConfiguration::default()).unwrap();
        for r in REFUSED {
            let key = r.path.rsplit('.').next().unwrap_or(r.path);
            assert!(r.why.starts_with(key) && r.why.contains("has no meaning"));
            if r.path.contains("[]") {
                continue;
            }
            assert!(
                !model.contains(&format!(" {key}:")),
                "{key} is still in the model"
            );
            let text = yaml(r.path, "4");
            let report = load_str::<FrameworkConfiguration>("config.yaml", &text, &[]).unwrap_err();
            assert_eq!(report.errors.len(), 1, "{report}");
            let error = &report.errors[0];
            assert_eq!(error.path, r.path);
            assert_eq!(error.kind, ErrorKind::Refused(r.why.to_owned()));
            let line = r.path.split('.').count();
            assert!(
                report.to_string().contains(&format!("config.yaml:{line}:")),
                "{report}"
            );
        }
    }

    #[test]
    fn a_refused_key_inside_a_list_is_named_with_its_index() {
        let text = "server:\n  requestLog:\n    appenders:\n      - type: console\n      - type: console\n        threshold: WARN\n        includeCallerData: true\n";
        let report = load_str::<FrameworkConfiguration>("config.yaml", text, &[]).unwrap_err();
        let paths: Vec<&str> = report.errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "server.requestLog.appenders[1].threshold",
                "server.requestLog.appenders[1].includeCallerData"
            ],
            "{report}"
        );
        // The application's appenders keep both keys.
        let text = "logging:\n  appenders:\n    - type: console\n      threshold: WARN\n      logFormat: '%m'\n";
        load_str::<FrameworkConfiguration>("config.yaml", text, &[]).unwrap();
    }

    #[test]
    fn external_logging_takes_no_other_key() {
        let config: FrameworkConfiguration =
            load_str("config.yaml", "logging:\n  type: external\n", &[]).unwrap();
        assert_eq!(
            config.logging.kind,
            ferrowizard_logging::config::LoggingType::External
        );
        let report = load_str::<FrameworkConfiguration>(
            "config.yaml",
            "logging:\n  type: external\n  level: DEBUG\n",
            &[],
        )
        .unwrap_err();
        assert_eq!(report.errors.len(), 1, "{report}");
        assert_eq!(report.errors[0].path, "logging.level");
        assert!(report.to_string().contains("config.yaml:3:3:"), "{report}");
    }

    #[test]
    fn a_refused_key_of_the_0_6_layout_is_named_as_written() {
        let report =
            load_str::<FrameworkConfiguration>("config.yaml", "http:\n  minThreads: 4\n", &[])
                .unwrap_err();
        assert_eq!(report.errors.len(), 1, "{report}");
        assert_eq!(report.errors[0].path, "http.minThreads");
        assert!(matches!(report.errors[0].kind, ErrorKind::Refused(_)));
    }
}
