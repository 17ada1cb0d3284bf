//! The `logging:` section, with DropWizard 4's fields and defaults.

use std::collections::BTreeMap;
use std::fmt;

use ferrowizard_config::{Config, Duration, Invalid, Level, Refusal, Size};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// The appender keys DropWizard has and this model leaves out on purpose, each refused with
/// why (for [`Loader::refuse`](ferrowizard_config::Loader::refuse)), wherever an appender is.
pub const REFUSED: &[Refusal] = &[
    Refusal {
        path: "**.appenders[type=syslog].stackTracePrefix",
        why: "stackTracePrefix has no meaning here: an event's error and its causes are \
              written in the event's own message, with no stack trace lines to prefix",
    },
    Refusal {
        path: "**.appenders[type=tcp].immediateFlush",
        why: "immediateFlush has no meaning for tcp: each batch of lines is written to the \
              socket as the writer takes it from the queue",
    },
    Refusal {
        path: "**.appenders[type=tls].immediateFlush",
        why: "immediateFlush has no meaning for tls: each batch of lines is written to the \
              socket as the writer takes it from the queue",
    },
    Refusal {
        path: "**.appenders[type=tls].trustStorePath",
        why: "trustStorePath has no meaning here: Java key stores are not read; give the CA \
              certificates to trust as a PEM file in caFile (unset: the system's roots)",
    },
    Refusal {
        path: "**.appenders[type=tls].trustStorePassword",
        why: "trustStorePassword has no meaning here: caFile is a PEM file, with no password",
    },
    Refusal {
        path: "**.appenders[type=tls].trustStoreType",
        why: "trustStoreType has no meaning here: caFile is a PEM file",
    },
    Refusal {
        path: "**.appenders[type=tls].trustStoreProvider",
        why: "trustStoreProvider has no meaning here: caFile is a PEM file read by rustls",
    },
    Refusal {
        path: "**.appenders[type=tls].keyStorePath",
        why: "keyStorePath has no meaning here: the tls appender sends no client \
              certificate; authenticate the receiver with caFile",
    },
    Refusal {
        path: "**.appenders[type=tls].keyStorePassword",
        why: "keyStorePassword has no meaning here: the tls appender sends no client \
              certificate",
    },
    Refusal {
        path: "**.appenders[type=tls].keyStoreType",
        why: "keyStoreType has no meaning here: the tls appender sends no client certificate",
    },
    Refusal {
        path: "**.appenders[type=tls].keyStoreProvider",
        why: "keyStoreProvider has no meaning here: the tls appender sends no client \
              certificate",
    },
    Refusal {
        path: "**.appenders[type=tls].jceProvider",
        why: "jceProvider has no meaning here: TLS is rustls with the ring provider",
    },
    Refusal {
        path: "**.appenders[type=tls].validatePeers",
        why: "validatePeers has no meaning here: use validateCerts (the chain) and \
              validateServerHostname (the name), both on by default",
    },
    Refusal {
        path: "**.appenders[type=tls].excludedProtocols",
        why: "excludedProtocols has no meaning here: list the versions to speak in \
              supportedProtocols (TLSv1.2, TLSv1.3)",
    },
    Refusal {
        path: "**.appenders[type=tls].supportedCipherSuites",
        why: "supportedCipherSuites has no meaning here: rustls offers only its modern suites, \
              none of them weak",
    },
    Refusal {
        path: "**.appenders[type=tls].excludedCipherSuites",
        why: "excludedCipherSuites has no meaning here: rustls offers only its modern suites, \
              none of them weak",
    },
];

/// DropWizard's default line layout.
pub const DEFAULT_LOG_FORMAT: &str = "%-5p [%d{ISO8601,UTC}] %c: %m%n";

/// `logging.type`: who configures logging.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Config)]
#[config(rename_all = "lowercase")]
pub enum LoggingType {
    /// This section: levels and appenders as written.
    #[default]
    Default,
    /// The application, with a `tracing` subscriber of its own installed before ferrowizard
    /// starts: ferrowizard installs none, and this section's other keys have no meaning.
    External,
}

/// `logging:`: the root level, per-logger levels and where lines go.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct LoggingFactory {
    /// `default`, or `external` (DropWizard's `ExternalLoggingFactory`): the application
    /// configures logging itself.
    #[config(default = LoggingType::Default, rename = "type")]
    pub kind: LoggingType,
    /// The root logger's level.
    #[config(default = Level::Info)]
    pub level: Level,
    /// Per-logger settings, by logger name (a Rust target such as `realtime::quotes`, or
    /// a Java name DropWizard users carry over, such as `org.eclipse.jetty`).
    pub loggers: BTreeMap<String, LoggerConfig>,
    /// Where lines go. `[]` means nowhere.
    #[config(
        default = vec![AppenderFactory::Console(ConsoleAppenderFactory::default())],
        custom(application_layouts),
    )]
    pub appenders: Vec<AppenderFactory>,
}

/// One logger's settings: a bare level (`org.eclipse.jetty: WARN`) or the full form.
#[derive(Clone, Debug, PartialEq, garde::Validate)]
pub struct LoggerConfig {
    /// The logger's level.
    #[garde(skip)]
    pub level: Level,
    /// Whether events also go to the root's appenders (DropWizard's default: true).
    #[garde(skip)]
    pub additive: bool,
    /// Appenders of this logger alone.
    #[garde(dive, custom(application_layouts))]
    pub appenders: Vec<AppenderFactory>,
}

impl LoggerConfig {
    /// A logger that only sets a level.
    pub fn level(level: Level) -> Self {
        LoggerConfig {
            level,
            additive: true,
            appenders: Vec::new(),
        }
    }
}

/// The full form of a logger's settings.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct LoggerSettings {
    /// The logger's level.
    #[config(default = Level::Info)]
    pub level: Level,
    /// Whether events also go to the root's appenders.
    #[config(default = true)]
    pub additive: bool,
    /// Appenders of this logger alone.
    pub appenders: Vec<AppenderFactory>,
}

impl<'de> Deserialize<'de> for LoggerConfig {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LoggerConfig;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a level (one of TRACE, DEBUG, INFO, WARN, ERROR, OFF, ALL) or {level, additive, appenders}")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<LoggerConfig, E> {
                Level::deserialize(de::value::BoolDeserializer::new(b)).map(LoggerConfig::level)
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<LoggerConfig, E> {
                Level::deserialize(de::value::StrDeserializer::new(s)).map(LoggerConfig::level)
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<LoggerConfig, A::Error> {
                let s = LoggerSettings::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(LoggerConfig {
                    level: s.level,
                    additive: s.additive,
                    appenders: s.appenders,
                })
            }
        }
        d.deserialize_any(V)
    }
}

impl Serialize for LoggerConfig {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.additive && self.appenders.is_empty() {
            self.level.serialize(s)
        } else {
            LoggerSettings {
                level: self.level,
                additive: self.additive,
                appenders: self.appenders.clone(),
            }
            .serialize(s)
        }
    }
}

/// The settings every appender type has, whatever its `type`: one field of each
/// appender section ([`ConsoleAppenderFactory::common`], ...), reached from an
/// [`AppenderFactory`] through [`AppenderFactory::common`].
///
/// In YAML they are not a section of their own: they are written beside the appender's
/// own keys, as DropWizard has them.
///
/// ```
/// use ferrowizard_config::Level;
/// use ferrowizard_logging::config::{AppenderCommon, FileAppenderFactory};
///
/// let file = FileAppenderFactory {
///     current_log_filename: Some("app.log".into()),
///     common: AppenderCommon {
///         threshold: Level::Warn,
///         queue_size: 1024,
///         ..AppenderCommon::default()
///     },
///     ..FileAppenderFactory::default()
/// };
/// assert_eq!(file.common.time_zone, "UTC");
/// ```
#[derive(Clone, Debug, PartialEq, Config)]
pub struct AppenderCommon {
    /// Events below this level are not written by this appender.
    #[config(default = Level::All)]
    pub threshold: Level,
    /// The line pattern (logback's pattern language); DropWizard's default when unset.
    #[config(custom(valid_log_format))]
    pub log_format: Option<String>,
    /// A structured layout instead of a pattern.
    pub layout: Option<LayoutFactory>,
    /// The time zone of `%d` timestamps.
    #[config(default = "UTC".to_owned(), custom(valid_time_zone))]
    pub time_zone: String,
    /// Slots in the queue between request threads and the writer (DropWizard's is 256).
    ///
    /// The writer naps while producers fill the queue instead of waking for each event, and
    /// a nap lets at most a quarter of the queue fill: the bigger the queue, the fewer
    /// wake-ups, each a context switch on the cores serving requests (BENCHMARKS.md,
    /// "Logging hot path"). A bigger queue also rides out longer stalls of the disk or the
    /// network before INFO is dropped (by `discardingThreshold`) or a request thread waits.
    /// Each slot holds a whole record, on cache lines of its own.
    #[config(default = 4096, range(min = 1, max = 1_048_576))]
    pub queue_size: usize,
    /// When fewer slots than this are free, TRACE/DEBUG/INFO are dropped; -1
    /// means queueSize/5, 0 never drops by level.
    #[config(default = -1, range(min = -1))]
    pub discarding_threshold: i64,
    /// Drop events of every level instead of waiting when the queue is full.
    pub never_block: bool,
    /// At most one event per this period, at most a minute (unset: no
    /// throttle); the events meanwhile are dropped and counted, whatever their
    /// level, as DropWizard's `messageRate` drops them.
    #[config(inner(custom(valid_message_rate)))]
    pub message_rate: Option<Duration>,
    /// Record the file and line of each event.
    pub include_caller_data: bool,
}

/// `type: console`: lines to the process's stdout or stderr.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct ConsoleAppenderFactory {
    /// The settings every appender has; in YAML, keys beside this appender's own.
    #[config(inline)]
    pub common: AppenderCommon,
    /// `stdout` or `stderr`.
    #[config(default = ConsoleTarget::Stdout)]
    pub target: ConsoleTarget,
}

/// The stream a console appender writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Config)]
#[config(rename_all = "lowercase")]
pub enum ConsoleTarget {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// `type: file`: lines to a file, rotated into archives.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = FileAppenderFactory::archive_pattern)]
pub struct FileAppenderFactory {
    /// The settings every appender has; in YAML, keys beside this appender's own.
    #[config(inline)]
    pub common: AppenderCommon,
    /// The file written now. Required.
    #[config(custom(required_file_name))]
    pub current_log_filename: Option<String>,
    /// Whether rotated files are kept.
    #[config(default = true)]
    pub archive: bool,
    /// Names of rotated files: `%d` a date, `%i` an index, `.gz` compresses.
    pub archived_log_filename_pattern: Option<String>,
    /// How many archives are kept; 0 keeps all.
    #[config(default = 5)]
    pub archived_file_count: usize,
    /// Rotate when the file reaches this size.
    pub max_file_size: Option<Size>,
    /// Delete the oldest archives past this total.
    pub total_size_cap: Option<Size>,
    /// The write buffer.
    #[config(default = Size::kibibytes(8))]
    pub buffer_size: Size,
    /// Flush after every batch of lines.
    #[config(default = true)]
    pub immediate_flush: bool,
}

/// A pattern's syntax and words; which words apply depends on the log it writes (an
/// event's or a request's), which the lists' validators check ([`application_layouts`] here,
/// ferrowizard's for the request log).
fn valid_log_format(format: &Option<String>, _: &()) -> garde::Result {
    match format {
        Some(f) => crate::layout::pattern::check_words(f)
            .map(|_| ())
            .map_err(|e| garde::Error::new(e.to_string())),
        None => Ok(()),
    }
}

/// Application appenders' layouts: a pattern of logback's words, or `json`.
fn application_layouts(appenders: &[AppenderFactory], _: &()) -> garde::Result {
    if let Some(i) = appenders
        .iter()
        .position(|a| matches!(a.common().layout, Some(LayoutFactory::AccessJson(_))))
    {
        return Err(garde::Error::new(format!(
            "[{i}]: access-json is the request log's layout (server.requestLog); an \
             application appender's is json"
        )));
    }
    for (i, a) in appenders.iter().enumerate() {
        // A pattern that fails `check_words` is reported where it is written.
        if let Some(f) = &a.common().log_format
            && crate::layout::pattern::check_words(f).is_ok()
        {
            crate::layout::pattern::PatternLayout::new(f, &jiff::tz::TimeZone::UTC)
                .map_err(|e| garde::Error::new(format!("[{i}].logFormat: {e}")))?;
        }
    }
    Ok(())
}

fn header_name(name: &str, _: &()) -> garde::Result {
    let token = !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
    if token {
        Ok(())
    } else {
        Err(garde::Error::new(format!("{name:?} is not a header name")))
    }
}

fn valid_timestamp_format(pattern: &str, _: &()) -> garde::Result {
    crate::layout::time::DateFormat::new(pattern, jiff::tz::TimeZone::UTC)
        .map(|_| ())
        .map_err(garde::Error::new)
}

fn recorded_access_field(field: &AccessField, _: &()) -> garde::Result {
    match field {
        AccessField::LocalPort => Err(garde::Error::new(
            "localPort is not recorded here: a line does not say which connector took the \
             request (give each connector's request log its own additionalFields instead)",
        )),
        _ => Ok(()),
    }
}

fn valid_message_rate(rate: &Duration, _: &()) -> garde::Result {
    let d = rate.get();
    if d.is_zero() || d > std::time::Duration::from_secs(60) {
        Err(garde::Error::new(
            "must be longer than 0 and at most 1 minute",
        ))
    } else {
        Ok(())
    }
}

fn valid_time_zone(zone: &str, _: &()) -> garde::Result {
    crate::layout::time::time_zone(zone)
        .map(|_| ())
        .map_err(garde::Error::new)
}

fn required_file_name(name: &Option<String>, _: &()) -> garde::Result {
    match name {
        Some(n) if !n.trim().is_empty() => Ok(()),
        _ => Err(garde::Error::new("is required for a file appender")),
    }
}

impl FileAppenderFactory {
    /// `archivedLogFilenamePattern`'s rules, which depend on `archive` and `maxFileSize`.
    fn archive_pattern(&self) -> Result<(), Invalid> {
        let invalid = |message: String| Err(Invalid::at("archivedLogFilenamePattern", message));
        if let Some(p) = &self.archived_log_filename_pattern
            && let Err(e) = crate::sink::rolling::ArchivePattern::new(p, &jiff::tz::TimeZone::UTC)
        {
            return invalid(e);
        }
        let problem = match (self.archive, &self.archived_log_filename_pattern) {
            (true, None) => Some("is required when archive is true"),
            (true, Some(p)) if self.max_file_size.is_some() && !p.contains("%i") => {
                Some("must contain %i when maxFileSize is set")
            }
            (true, Some(p)) if !p.contains("%d") && !p.contains("%i") => {
                Some("must contain %d or %i, or every archive would have the same name")
            }
            _ => None,
        };
        problem.map_or(Ok(()), |p| invalid(p.to_owned()))
    }
}

/// `type: syslog`: RFC 5424 messages to a syslog daemon.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct SyslogAppenderFactory {
    /// The settings every appender has; in YAML, keys beside this appender's own.
    #[config(inline)]
    pub common: AppenderCommon,
    /// The daemon's host.
    #[config(default = "localhost".to_owned())]
    pub host: String,
    /// The daemon's port.
    #[config(default = 514)]
    pub port: u16,
    /// The syslog facility.
    #[config(default = Facility::Local0)]
    pub facility: Facility,
    /// `udp`, `tcp` or `unix`.
    #[config(default = SyslogProtocol::Udp)]
    pub protocol: SyslogProtocol,
    /// The socket for `protocol: unix`.
    #[config(default = "/dev/log".to_owned())]
    pub socket_path: String,
}

/// How syslog messages travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Config)]
#[config(rename_all = "lowercase")]
pub enum SyslogProtocol {
    /// One datagram per message.
    Udp,
    /// Octet-counted frames on a stream.
    Tcp,
    /// A unix datagram socket such as `/dev/log`.
    Unix,
}

/// Syslog facilities (RFC 5424 §6.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Config)]
#[config(rename_all = "lowercase")]
#[allow(missing_docs)]
pub enum Facility {
    Kern,
    User,
    Mail,
    Daemon,
    Auth,
    Syslog,
    Lpr,
    News,
    Uucp,
    Cron,
    Authpriv,
    Ftp,
    Local0,
    Local1,
    Local2,
    Local3,
    Local4,
    Local5,
    Local6,
    Local7,
}

/// `type: tcp`: lines over a TCP connection.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct TcpAppenderFactory {
    /// The settings every appender has; in YAML, keys beside this appender's own.
    #[config(inline)]
    pub common: AppenderCommon,
    /// Where the lines go; in YAML, keys beside this appender's own.
    #[config(inline)]
    pub target: TcpTarget,
}

/// The receiver of the `tcp` and `tls` appenders, and the connection to it.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct TcpTarget {
    /// The receiver's host (for `tls`, also the name its certificate must carry).
    #[config(default = "localhost".to_owned())]
    pub host: String,
    /// The receiver's port.
    #[config(default = 4560)]
    pub port: u16,
    /// How long to wait for the connection.
    #[config(default = Duration::milliseconds(500))]
    pub connection_timeout: Duration,
    /// The socket's send buffer (`SO_SNDBUF`; the kernel may round it).
    #[config(default = Size::kibibytes(8))]
    pub send_buffer_size: Size,
}

/// `type: tls`: lines over a TLS connection (rustls), as DropWizard's `tls` appender,
/// with the CA certificates as a PEM file instead of a Java trust store.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct TlsAppenderFactory {
    /// The settings every appender has; in YAML, keys beside this appender's own.
    #[config(inline)]
    pub common: AppenderCommon,
    /// The receiver and the connection to it; in YAML, keys beside this appender's own.
    #[config(inline)]
    pub target: TcpTarget,
    /// The CA certificates to trust, PEM; unset: the system's roots.
    pub ca_file: Option<String>,
    /// Check the receiver's certificate chain (DropWizard's default is not to; this is
    /// a log of the service's secrets' neighbours: on by default).
    #[config(default = true)]
    pub validate_certs: bool,
    /// Check that the certificate names `host`.
    #[config(default = true)]
    pub validate_server_hostname: bool,
    /// Accepted TLS versions.
    #[config(default = vec![TlsVersion::TlsV12, TlsVersion::TlsV13], length(min = 1))]
    pub supported_protocols: Vec<TlsVersion>,
}

/// TLS protocol versions a `tls` appender may speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Config)]
pub enum TlsVersion {
    /// TLS 1.2.
    #[config(rename = "TLSv1.2")]
    TlsV12,
    /// TLS 1.3.
    #[config(rename = "TLSv1.3")]
    TlsV13,
}

/// `type: udp`: one datagram per line.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct UdpAppenderFactory {
    /// The settings every appender has; in YAML, keys beside this appender's own.
    #[config(inline)]
    pub common: AppenderCommon,
    /// The receiver's host.
    #[config(default = "localhost".to_owned())]
    pub host: String,
    /// The receiver's port.
    #[config(default = 514)]
    pub port: u16,
}

/// `appenders:` entries, chosen by `type`.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(rename_all = "lowercase")]
pub enum AppenderFactory {
    /// `type: console`.
    Console(ConsoleAppenderFactory),
    /// `type: file`.
    File(FileAppenderFactory),
    /// `type: syslog`.
    Syslog(SyslogAppenderFactory),
    /// `type: tcp`.
    Tcp(TcpAppenderFactory),
    /// `type: udp`.
    Udp(UdpAppenderFactory),
    /// `type: tls`.
    Tls(TlsAppenderFactory),
}

impl AppenderFactory {
    /// The settings every appender type has (`threshold`, `layout`, `queueSize`, ...),
    /// whatever this appender's type.
    ///
    /// ```
    /// use ferrowizard_logging::AppenderFactory;
    /// use ferrowizard_logging::config::ConsoleAppenderFactory;
    ///
    /// let console = AppenderFactory::Console(ConsoleAppenderFactory::default());
    /// assert_eq!(console.common().queue_size, 4096);
    /// assert_eq!(console.common().time_zone, "UTC");
    /// ```
    pub fn common(&self) -> &AppenderCommon {
        match self {
            AppenderFactory::Console(a) => &a.common,
            AppenderFactory::File(a) => &a.common,
            AppenderFactory::Syslog(a) => &a.common,
            AppenderFactory::Tcp(a) => &a.common,
            AppenderFactory::Udp(a) => &a.common,
            AppenderFactory::Tls(a) => &a.common,
        }
    }

    /// Whether this appender's lines show the MDC (the logging context and the fields of an
    /// event's spans): a pattern with `%X` or `%mdc`, or a JSON layout with its `mdc` field.
    /// When no appender does, the MDC is never gathered.
    ///
    /// ```
    /// use ferrowizard_logging::AppenderFactory;
    /// use ferrowizard_logging::config::ConsoleAppenderFactory;
    ///
    /// let mut console = AppenderFactory::Console(ConsoleAppenderFactory::default());
    /// assert!(!console.shows_mdc());
    /// console.common_mut().log_format = Some("%X{requestId} %m%n".into());
    /// assert!(console.shows_mdc());
    /// ```
    pub fn shows_mdc(&self) -> bool {
        let common = self.common();
        match &common.layout {
            Some(LayoutFactory::Json(json)) => json.includes.contains(&JsonField::Mdc),
            Some(LayoutFactory::AccessJson(_)) => false,
            None => common.log_format.as_deref().is_some_and(|f| {
                crate::layout::pattern::parse(f).is_ok_and(|pieces| {
                    pieces.iter().any(|p| {
                        matches!(p, crate::layout::pattern::Piece::Conversion { word, .. }
                            if word == "X" || word == "mdc")
                    })
                })
            }),
        }
    }

    /// The settings every appender type has, to change (the request log sets its lossless
    /// `discardingThreshold` default this way).
    ///
    /// ```
    /// use ferrowizard_logging::AppenderFactory;
    /// use ferrowizard_logging::config::UdpAppenderFactory;
    ///
    /// let mut udp = AppenderFactory::Udp(UdpAppenderFactory::default());
    /// udp.common_mut().discarding_threshold = 0;
    /// assert_eq!(udp.common().discarding_threshold, 0);
    /// ```
    pub fn common_mut(&mut self) -> &mut AppenderCommon {
        match self {
            AppenderFactory::Console(a) => &mut a.common,
            AppenderFactory::File(a) => &mut a.common,
            AppenderFactory::Syslog(a) => &mut a.common,
            AppenderFactory::Tcp(a) => &mut a.common,
            AppenderFactory::Udp(a) => &mut a.common,
            AppenderFactory::Tls(a) => &mut a.common,
        }
    }
}

/// `layout: {type: json}`: one JSON object per line with DropWizard's fields.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct JsonLayoutFactory {
    /// The timestamp format; unset means epoch milliseconds.
    pub timestamp_format: Option<String>,
    /// Indent the JSON (for humans; one object then spans lines).
    pub pretty_print: bool,
    /// End each object with a newline.
    #[config(default = true)]
    pub append_line_separator: bool,
    /// The fields written, among timestamp, level, thread, mdc, logger, message,
    /// exception, caller.
    #[config(
        default = vec![
            JsonField::Timestamp,
            JsonField::Level,
            JsonField::Thread,
            JsonField::Mdc,
            JsonField::Logger,
            JsonField::Message,
            JsonField::Exception,
        ],
    )]
    pub includes: Vec<JsonField>,
    /// Renames of fields, e.g. `{message: msg}`.
    pub custom_field_names: BTreeMap<String, String>,
    /// Constant fields added to every object.
    pub additional_fields: BTreeMap<String, String>,
    /// Span fields put at the top level instead of under `mdc`.
    pub flatten_mdc: bool,
}

/// The fields a JSON line can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Config)]
#[config(rename_all = "camelCase")]
#[allow(missing_docs)]
pub enum JsonField {
    Timestamp,
    Level,
    Thread,
    Mdc,
    Logger,
    Message,
    Exception,
    Caller,
}

/// `layout: {type: access-json}`: one JSON object per request-log line.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct AccessJsonLayoutFactory {
    /// The timestamp format (SimpleDateFormat's letters, in the appender's `timeZone`);
    /// unset means epoch milliseconds, a number.
    #[config(inner(custom(valid_timestamp_format)))]
    pub timestamp_format: Option<String>,
    /// End each object with a newline.
    #[config(default = true)]
    pub append_line_separator: bool,
    /// The fields written (DropWizard's default set; `remoteUser` is written for a request an
    /// authentication admitted).
    #[config(
        default = vec![
            AccessField::Timestamp,
            AccessField::RemoteAddress,
            AccessField::RemoteUser,
            AccessField::RequestTime,
            AccessField::RequestUri,
            AccessField::StatusCode,
            AccessField::Method,
            AccessField::Protocol,
            AccessField::ContentLength,
            AccessField::UserAgent,
        ],
        inner(custom(recorded_access_field)),
    )]
    pub includes: Vec<AccessField>,
    /// Request headers to include.
    #[config(inner(custom(header_name)))]
    pub request_headers: Vec<String>,
    /// Response headers to include.
    #[config(inner(custom(header_name)))]
    pub response_headers: Vec<String>,
    /// Renames of fields.
    pub custom_field_names: BTreeMap<String, String>,
    /// Constant fields added to every object.
    pub additional_fields: BTreeMap<String, String>,
}

/// The fields an access-log JSON line can carry (DropWizard's `AccessAttribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Config)]
#[config(rename_all = "camelCase")]
#[allow(missing_docs)]
pub enum AccessField {
    Timestamp,
    RemoteAddress,
    RemoteUser,
    RequestTime,
    RequestUri,
    RequestUrl,
    StatusCode,
    Method,
    Protocol,
    ContentLength,
    RequestContentLength,
    UserAgent,
    LocalPort,
    ServerName,
    /// The request's ID (ferrowizard's `server.requestId`), when it has one.
    RequestId,
    /// The request's trace id (ferrowizard's `server.traceContext`), when it has one.
    TraceId,
    /// The request's span id (ferrowizard's `server.traceContext`), when it has one.
    SpanId,
}

/// `layout:` entries, chosen by `type`.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(rename_all = "kebab-case")]
pub enum LayoutFactory {
    /// `type: json`.
    Json(JsonLayoutFactory),
    /// `type: access-json`.
    AccessJson(AccessJsonLayoutFactory),
}
