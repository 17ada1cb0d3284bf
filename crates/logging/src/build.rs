//! From the `logging:` section to a running subscriber: each section builds its part, as in
//! DropWizard (the appender section opens its file, the logging section wires the layers).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::tz::TimeZone;
use tracing::Subscriber;
use tracing_subscriber::Registry;
use tracing_subscriber::layer::SubscriberExt;

use crate::appender::labels::AppenderLabels;
use crate::appender::stats::AppenderStats;
use crate::appender::{Appender, QueuePolicy};
use crate::config::{AppenderFactory, LayoutFactory, LoggingFactory, TcpTarget};
use crate::layer::{AppenderLayer, LoggerRoute};
use crate::layout::Layout;
use crate::layout::json::JsonLayout;
use crate::layout::pattern::PatternLayout;
use crate::layout::time::time_zone;
use crate::levels::{Levels, filter};
use crate::names;
use crate::sink::Sink;
use crate::sink::console::Console;
use crate::sink::file::FileSink;
use crate::sink::net::{DatagramSink, Framing, SyslogHeader, TcpSink, syslog_sink};
use crate::sink::rolling::{ArchivePattern, RollingPolicy};

/// Why the logging section could not be started.
#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    /// A pattern, time zone or archive pattern that does not parse (the configuration's
    /// validation reports these first, with positions).
    #[error("{appender}: {message}")]
    Invalid {
        /// Which appender.
        appender: String,
        /// What is wrong.
        message: String,
    },
    /// A file or socket that cannot be opened.
    #[error("{appender}: cannot open {what}: {source}")]
    Io {
        /// Which appender.
        appender: String,
        /// What could not be opened.
        what: String,
        /// The error.
        source: std::io::Error,
    },
}

/// The running logging pipeline: its appenders, counters and level controls.
#[derive(Debug)]
pub struct Logging {
    appenders: Vec<Arc<Appender>>,
    levels: Arc<Levels>,
}

/// A layout the appender section describes.
fn layout(
    name: &str,
    log_format: Option<&str>,
    layout: Option<&LayoutFactory>,
    zone: &TimeZone,
) -> Result<Layout, BuildError> {
    let invalid = |message: String| BuildError::Invalid {
        appender: name.to_owned(),
        message,
    };
    match layout {
        Some(LayoutFactory::Json(j)) => {
            Ok(Layout::Json(JsonLayout::new(j, zone).map_err(invalid)?))
        }
        Some(LayoutFactory::AccessJson(_)) => {
            Err(invalid("access-json is the request log's layout".into()))
        }
        None => {
            let pattern = log_format.unwrap_or(crate::config::DEFAULT_LOG_FORMAT);
            Ok(Layout::Pattern(
                PatternLayout::new(pattern, zone).map_err(|e| invalid(e.to_string()))?,
            ))
        }
    }
}

/// Starts the appender a section describes; `None` for a threshold of OFF.
pub fn start_appender(
    name: &str,
    factory: &AppenderFactory,
    app_name: &str,
) -> Result<Option<Appender>, BuildError> {
    start(name, factory, app_name, false)
}

/// Starts an appender for lines formatted by the caller (the request log's): records are
/// written as they are, one per line (syslog still adds its header).
pub fn start_raw_appender(
    name: &str,
    factory: &AppenderFactory,
    app_name: &str,
) -> Result<Option<Appender>, BuildError> {
    start(name, factory, app_name, true)
}

fn start(
    name: &str,
    factory: &AppenderFactory,
    app_name: &str,
    raw: bool,
) -> Result<Option<Appender>, BuildError> {
    let invalid = |message: String| BuildError::Invalid {
        appender: name.to_owned(),
        message,
    };
    let io = |what: String| {
        move |source| BuildError::Io {
            appender: name.to_owned(),
            what,
            source,
        }
    };
    let common = factory.common();
    let zone = time_zone(&common.time_zone).map_err(invalid)?;
    let mut layout = if raw {
        match &common.layout {
            Some(LayoutFactory::AccessJson(l)) if !l.append_line_separator => Layout::RawJoined,
            _ => Layout::Raw,
        }
    } else {
        layout(
            name,
            common.log_format.as_deref(),
            common.layout.as_ref(),
            &zone,
        )?
    };
    let policy = QueuePolicy::new(
        common.queue_size,
        common.discarding_threshold,
        common.never_block,
    );
    let rate = common.message_rate.map(|d| d.get());
    let sink: Box<dyn Sink> = match factory {
        AppenderFactory::Console(a) => Box::new(Console(a.target)),
        AppenderFactory::File(a) => {
            let path = a
                .current_log_filename
                .clone()
                .ok_or_else(|| invalid("currentLogFilename is required".into()))?;
            let rolling = match (&a.archived_log_filename_pattern, a.archive) {
                (Some(pattern), true) => Some(RollingPolicy {
                    pattern: ArchivePattern::new(pattern, &zone).map_err(invalid)?,
                    max_file_size: a.max_file_size.map(|s| s.to_bytes()),
                    archived_file_count: a.archived_file_count,
                    total_size_cap: a.total_size_cap.map(|s| s.to_bytes()),
                }),
                _ => None,
            };
            let buffer = usize::try_from(a.buffer_size.to_bytes()).unwrap_or(usize::MAX);
            let sink = FileSink::open(&path, buffer, a.immediate_flush, rolling)
                .map_err(io(path.clone()))?;
            Box::new(sink)
        }
        AppenderFactory::Syslog(a) => {
            layout = Layout::Syslog(SyslogHeader::new(a.facility, app_name), Box::new(layout));
            syslog_sink(a.protocol, &a.host, a.port, &a.socket_path)
        }
        AppenderFactory::Tcp(a) => Box::new(tcp_sink(&a.target)),
        AppenderFactory::Tls(a) => {
            let config = crate::sink::tls::client_config(&crate::sink::tls::TlsSettings {
                ca_file: a.ca_file.as_deref(),
                validate_certs: a.validate_certs,
                validate_server_hostname: a.validate_server_hostname,
                tls12: a
                    .supported_protocols
                    .contains(&crate::config::TlsVersion::TlsV12),
                tls13: a
                    .supported_protocols
                    .contains(&crate::config::TlsVersion::TlsV13),
            })
            .map_err(invalid)?;
            Box::new(tcp_sink(&a.target).tls(config))
        }
        AppenderFactory::Udp(a) => Box::new(DatagramSink::udp(&a.host, a.port)),
    };
    let Some(threshold) = filter(common.threshold).into_level() else {
        return Ok(None);
    };
    let appender = Appender::start(
        format!("{name} ({})", sink.describe()),
        threshold,
        common.include_caller_data,
        policy,
        layout,
        sink,
    )
    .map_err(io("a writer thread".into()))?;
    let appender = appender.with_labels(AppenderLabels::of(name, factory));
    let appender = match rate {
        Some(period) => appender.with_message_rate(period),
        None => appender,
    };
    Ok(Some(appender))
}

/// The `tcp` and `tls` appenders' connection to `target`, lines framed by newlines.
fn tcp_sink(target: &TcpTarget) -> TcpSink {
    TcpSink::new(
        &target.host,
        target.port,
        target.connection_timeout.get(),
        Framing::Lines,
    )
    .send_buffer(usize::try_from(target.send_buffer_size.to_bytes()).unwrap_or(usize::MAX))
}

fn start_all(
    path: &str,
    factories: &[AppenderFactory],
    app_name: &str,
) -> Result<Vec<Arc<Appender>>, BuildError> {
    let mut started = Vec::new();
    for (i, f) in factories.iter().enumerate() {
        if let Some(a) = start_appender(&format!("{path}[{i}]"), f, app_name)? {
            started.push(Arc::new(a));
        }
    }
    Ok(started)
}

impl LoggingFactory {
    /// Starts every appender and returns the pipeline and the subscriber to install.
    /// `app_name` names the service in syslog messages.
    pub fn build(
        &self,
        app_name: &str,
    ) -> Result<(Logging, impl Subscriber + Send + Sync + use<>), BuildError> {
        let (logging, layer) = self.build_layer(app_name)?;
        Ok((logging, Registry::default().with(layer)))
    }

    /// Starts every appender and returns the pipeline and its [`AppenderLayer`], to compose
    /// in a `tracing_subscriber::Registry` beside layers of the application's own (an
    /// OpenTelemetry layer, a test writer). The layer's levels (`logging.level`,
    /// `logging.loggers`) decide for the whole subscriber, as logback's do for every
    /// appender: an event they turn away reaches no layer.
    ///
    /// ```
    /// use tracing_subscriber::layer::SubscriberExt;
    ///
    /// let factory = ferrowizard_logging::LoggingFactory::default();
    /// let (logging, layer) = factory.build_layer("my-service").unwrap();
    /// let subscriber = tracing_subscriber::Registry::default()
    ///     .with(layer)
    ///     .with(tracing_subscriber::fmt::layer().with_test_writer());
    /// tracing::subscriber::with_default(subscriber, || tracing::info!("to both layers"));
    /// logging.shutdown(std::time::Duration::from_secs(1));
    /// ```
    pub fn build_layer(&self, app_name: &str) -> Result<(Logging, AppenderLayer), BuildError> {
        let root = start_all("logging.appenders", &self.appenders, app_name)?;
        let mut appenders = root.clone();
        let mut routes = Vec::new();
        let mut levels = BTreeMap::new();
        for (name, logger) in &self.loggers {
            levels.insert(name.clone(), filter(logger.level));
            if !logger.appenders.is_empty() || !logger.additive {
                let own = start_all(
                    &format!("logging.loggers.{name}.appenders"),
                    &logger.appenders,
                    app_name,
                )?;
                appenders.extend(own.iter().cloned());
                routes.push(LoggerRoute {
                    targets: names::targets(name),
                    appenders: own,
                    additive: logger.additive,
                });
            }
        }
        let (levels, level_filter) = Levels::new(filter(self.level), levels);
        let mdc = self
            .appenders
            .iter()
            .chain(self.loggers.values().flat_map(|l| &l.appenders))
            .any(AppenderFactory::shows_mdc);
        let layer = AppenderLayer::new(root, routes, level_filter, mdc);
        Ok((Logging { appenders, levels }, layer))
    }
}

impl Logging {
    /// Level controls.
    pub fn levels(&self) -> &Arc<Levels> {
        &self.levels
    }

    /// Every appender's counters now.
    pub fn stats(&self) -> Vec<AppenderStats> {
        self.appenders.iter().map(|a| a.stats()).collect()
    }

    /// Writes every queued event, waiting at most `timeout` in all. Returns whether
    /// everything was written in time.
    pub fn flush(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        self.appenders
            .iter()
            .all(|a| a.flush(deadline.saturating_duration_since(std::time::Instant::now())))
    }

    /// Flushes and stops every appender (waiting at most `timeout`), then reports on stderr
    /// anything that was dropped or could not be written. Returns the final counters.
    pub fn shutdown(&self, timeout: Duration) -> Vec<AppenderStats> {
        let deadline = std::time::Instant::now() + timeout;
        for a in &self.appenders {
            if !a.stop(deadline.saturating_duration_since(std::time::Instant::now())) {
                eprintln!(
                    "ferrowizard-logging: {} did not finish writing within {timeout:?}",
                    a.name()
                );
            }
        }
        let stats = self.stats();
        for s in &stats {
            let total = s.total();
            let unwritten = total.emitted.saturating_sub(total.written + total.dropped);
            if total.dropped > 0 || unwritten > 0 {
                let per_level: Vec<String> = crate::appender::stats::LEVELS
                    .iter()
                    .zip(s.levels.iter())
                    .filter(|(_, c)| c.dropped > 0)
                    .map(|(l, c)| format!("{l} {}", c.dropped))
                    .collect();
                eprintln!(
                    "ferrowizard-logging: {}: {} of {} events dropped ({}), {} not written at exit, {} write errors",
                    s.name,
                    total.dropped,
                    total.emitted,
                    per_level.join(", "),
                    unwritten,
                    s.write_errors
                );
            }
        }
        stats
    }

    /// Installs `subscriber` as the global default, bridges the `log` crate to it, and
    /// returns a guard that shuts the pipeline down (waiting up to `flush_timeout`) when
    /// dropped.
    pub fn install(
        self,
        subscriber: impl Subscriber + Send + Sync + 'static,
        flush_timeout: Duration,
    ) -> Result<LoggingGuard, InstallError> {
        tracing::subscriber::set_global_default(subscriber).map_err(|_| InstallError)?;
        // `log` records become tracing events; an earlier logger is an error we ignore
        // (tests install several pipelines).
        let _ = tracing_log::LogTracer::init();
        self.levels.refresh_log_max_level();
        Ok(LoggingGuard {
            logging: Arc::new(self),
            timeout: flush_timeout,
        })
    }
}

/// A global subscriber was already installed.
#[derive(Debug, thiserror::Error)]
#[error("a global tracing subscriber is already installed")]
pub struct InstallError;

/// Shuts the logging pipeline down when dropped: every queued event is written (within the
/// timeout) and losses are reported on stderr.
#[derive(Debug)]
pub struct LoggingGuard {
    logging: Arc<Logging>,
    timeout: Duration,
}

impl LoggingGuard {
    /// The pipeline.
    pub fn logging(&self) -> &Arc<Logging> {
        &self.logging
    }
}

impl Drop for LoggingGuard {
    fn drop(&mut self) {
        self.logging.shutdown(self.timeout);
    }
}
