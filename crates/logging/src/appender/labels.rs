//! What an appender is called in metrics: a few short labels an operator can read and a
//! dashboard can select on, instead of its configuration path and description
//! (`logging.appenders[0] (console stdout)`), which stays its name in messages.
//!
//! | label      | value                                                                     |
//! |------------|---------------------------------------------------------------------------|
//! | `appender` | its place: `0` for `logging.appenders[0]`, `com.example.1` for `logging.loggers.com.example.appenders[1]`, `requestLog.0` for `server.requestLog.appenders[0]` |
//! | `type`     | its `type` in the configuration: `console`, `file`, `syslog`, `tcp`, `tls`, `udp` |
//! | `target`   | where it writes: `stdout` or `stderr`, a file's name (`app.log`), `host-port` (`localhost-514`), a unix socket's name (`log` for `/dev/log`) |
//!
//! Every value uses only `[A-Za-z0-9._-]` (other characters become `-`), so that DropWizard's
//! JSON, which appends label values to the metric name as dotted segments, gets clean keys
//! such as `ferrowizard.logging.queue.capacity.0.console.stdout`. `appender` alone tells the
//! appenders apart; `type` and `target` say what each one is.

use crate::config::{AppenderFactory, ConsoleTarget, SyslogProtocol};

/// An appender's metric labels (see the [module](self)).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AppenderLabels {
    /// Its place in the configuration: `0`, `com.example.1`, `requestLog.0`.
    pub appender: String,
    /// Its `type`: `console`, `file`, `syslog`, `tcp`, `tls` or `udp`.
    pub kind: String,
    /// Where it writes: `stdout`, `app.log`, `localhost-514`.
    pub target: String,
}

impl AppenderLabels {
    /// The label names, in the order [`AppenderLabels::pairs`] gives them.
    pub const NAMES: [&'static str; 3] = ["appender", "type", "target"];

    /// The labels of the appender a section describes at the configuration path `path`
    /// (`logging.appenders[0]`, `logging.loggers.com.example.appenders[1]`,
    /// `server.requestLog.appenders[0]`; any other name becomes its own place).
    pub fn of(path: &str, factory: &AppenderFactory) -> AppenderLabels {
        let (kind, target) = match factory {
            AppenderFactory::Console(a) => (
                "console",
                match a.target {
                    ConsoleTarget::Stdout => "stdout".to_owned(),
                    ConsoleTarget::Stderr => "stderr".to_owned(),
                },
            ),
            AppenderFactory::File(a) => (
                "file",
                a.current_log_filename
                    .as_deref()
                    .map(file_name)
                    .unwrap_or_default(),
            ),
            AppenderFactory::Syslog(a) => (
                "syslog",
                match a.protocol {
                    SyslogProtocol::Unix => file_name(&a.socket_path),
                    _ => format!("{}-{}", a.host, a.port),
                },
            ),
            AppenderFactory::Tcp(a) => ("tcp", format!("{}-{}", a.target.host, a.target.port)),
            AppenderFactory::Tls(a) => ("tls", format!("{}-{}", a.target.host, a.target.port)),
            AppenderFactory::Udp(a) => ("udp", format!("{}-{}", a.host, a.port)),
        };
        AppenderLabels {
            appender: place(path),
            kind: kind.to_owned(),
            target: clean(&target),
        }
    }

    /// The labels of an appender started without a section (a test's, a benchmark's):
    /// its name, cleaned, as its place; no type or target.
    pub fn named(name: &str) -> AppenderLabels {
        AppenderLabels {
            appender: clean(name),
            ..AppenderLabels::default()
        }
    }

    /// `(name, value)` pairs in the order of [`AppenderLabels::NAMES`].
    pub fn pairs(&self) -> [(&'static str, &str); 3] {
        [
            ("appender", &self.appender),
            ("type", &self.kind),
            ("target", &self.target),
        ]
    }
}

/// The appender's place, from its configuration path: the index, after the logger's name for
/// a logger's own appenders and after `requestLog` for the request log's.
fn place(path: &str) -> String {
    let Some((list, index)) = path
        .strip_suffix(']')
        .and_then(|p| p.rsplit_once(".appenders["))
        .or_else(|| {
            path.strip_suffix(']')?
                .strip_prefix("appenders[")
                .map(|i| ("", i))
        })
    else {
        return clean(path);
    };
    let owner = match list {
        "" | "logging" => "",
        "server.requestLog" => "requestLog",
        other => other.strip_prefix("logging.loggers.").unwrap_or(other),
    };
    if owner.is_empty() {
        clean(index)
    } else {
        clean(&format!("{owner}.{index}"))
    }
}

/// The last segment of a path: a file's or socket's name.
fn file_name(path: &str) -> String {
    path.rsplit(['/', '\\']).next().unwrap_or(path).to_owned()
}

/// `value` with every character outside `[A-Za-z0-9._-]` turned into `-`; `::` (a Rust
/// module path in a logger's name) becomes `.`.
fn clean(value: &str) -> String {
    value
        .replace("::", ".")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ConsoleAppenderFactory, FileAppenderFactory, SyslogAppenderFactory};

    #[test]
    fn places_drop_the_configuration_path() {
        assert_eq!(place("logging.appenders[0]"), "0");
        assert_eq!(
            place("logging.loggers.com.example.appenders[1]"),
            "com.example.1"
        );
        assert_eq!(
            place("logging.loggers.my_crate::db.appenders[2]"),
            "my_crate.db.2"
        );
        assert_eq!(place("server.requestLog.appenders[0]"), "requestLog.0");
        assert_eq!(place("appenders[3]"), "3");
        assert_eq!(place("bench (null)"), "bench--null-");
    }

    #[test]
    fn labels_say_type_and_target_in_clean_words() {
        let console = ConsoleAppenderFactory {
            target: ConsoleTarget::Stderr,
            ..Default::default()
        };
        let l = AppenderLabels::of("logging.appenders[0]", &AppenderFactory::Console(console));
        assert_eq!(
            l.pairs(),
            [("appender", "0"), ("type", "console"), ("target", "stderr")]
        );

        let file = FileAppenderFactory {
            current_log_filename: Some("/var/log/my app.log".into()),
            ..Default::default()
        };
        let l = AppenderLabels::of(
            "server.requestLog.appenders[1]",
            &AppenderFactory::File(file),
        );
        assert_eq!(
            l.pairs(),
            [
                ("appender", "requestLog.1"),
                ("type", "file"),
                ("target", "my-app.log")
            ]
        );

        let syslog = SyslogAppenderFactory::default();
        let l = AppenderLabels::of("logging.appenders[2]", &AppenderFactory::Syslog(syslog));
        assert_eq!(l.target, "localhost-514");
        assert_eq!(
            AppenderLabels::NAMES.map(str::len),
            l.pairs().map(|p| p.0.len())
        );
    }
}
