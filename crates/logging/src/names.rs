//! The Java logger names DropWizard users carry over, and the Rust targets that play
//! their role.
//!
//! A DropWizard config quiets `org.eclipse.jetty` (the HTTP server's internals),
//! `org.apache.http` (the outgoing HTTP client) and `com.yammer.metrics` (the metrics
//! layer). In a Rust service those roles are played by crates with other names; a logger
//! with one of these names sets the level of each of its Rust targets.

/// (Java logger, Rust targets, what it is).
pub const JAVA_LOGGERS: &[(&str, &[&str], &str)] = &[
    (
        "org.eclipse.jetty",
        &[
            "hyper",
            "hyper_util::server",
            "h2",
            "tower_http",
            "ferrowizard::server",
        ],
        "the HTTP server's internals",
    ),
    (
        "org.apache.http",
        &["reqwest", "hyper_util::client", "ureq"],
        "the outgoing HTTP client",
    ),
    (
        "com.yammer.metrics",
        &["ferrowizard_metrics", "ferrowizard::metrics", "metrics"],
        "the metrics layer",
    ),
];

/// The Rust targets a configured logger name stands for: the mapped targets for a known
/// Java name (or a name under it, e.g. `org.eclipse.jetty.server`), the name itself
/// otherwise.
pub fn targets(logger: &str) -> Vec<String> {
    for (java, rust, _) in JAVA_LOGGERS {
        if logger == *java
            || logger
                .strip_prefix(java)
                .is_some_and(|r| r.starts_with('.'))
        {
            return rust.iter().map(|t| (*t).to_owned()).collect();
        }
    }
    vec![logger.to_owned()]
}

/// One line per Java name used in `loggers`, saying what it was mapped to.
pub fn describe_mappings<'a>(loggers: impl IntoIterator<Item = &'a String>) -> Vec<String> {
    loggers
        .into_iter()
        .filter_map(|name| {
            JAVA_LOGGERS
                .iter()
                .find(|(java, _, _)| name == java || name.starts_with(&format!("{java}.")))
                .map(|(java, rust, what)| {
                    format!(
                        "logger {name} ({what}, {java} in Java) sets the level of: {}",
                        rust.join(", ")
                    )
                })
        })
        .collect()
}

/// Whether `target` is `logger` or below it (`a::b` is below `a`; `ab` is not).
pub fn is_under(target: &str, logger: &str) -> bool {
    target == logger
        || target
            .strip_prefix(logger)
            .is_some_and(|r| r.starts_with("::") || r.starts_with('.'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_java_names() {
        assert!(targets("org.eclipse.jetty").contains(&"hyper".to_owned()));
        assert!(
            targets("org.eclipse.jetty.server.Server").contains(&"ferrowizard::server".to_owned())
        );
        assert_eq!(targets("org.eclipse.jettyx"), ["org.eclipse.jettyx"]);
        assert_eq!(targets("realtime::quotes"), ["realtime::quotes"]);
        assert!(is_under("realtime::quotes::feed", "realtime::quotes"));
        assert!(!is_under("realtime_x", "realtime"));
    }
}
