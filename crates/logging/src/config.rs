//! The `logging:` section, with DropWizard 4's fields and defaults.

use std::collections::BTreeMap;
use std::fmt;

use ferrowizard_config::{Duration, Level, Size, section, serialize_tagged};
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};

/// DropWizard's default line layout.
pub const DEFAULT_LOG_FORMAT: &str = "%-5p [%d{ISO8601,UTC}] %c: %m%n";

section! {
    /// `logging:`: the root level, per-logger levels and where lines go.
    pub struct LoggingFactory {
        /// The root logger's level.
        level: Level = Level::Info,
        /// Per-logger settings, by logger name (a Rust target such as `realtime::quotes`, or
        /// a Java name DropWizard users carry over, such as `org.eclipse.jetty`).
        #[garde(dive)]
        loggers: BTreeMap<String, LoggerConfig> = BTreeMap::new(),
        /// Where lines go. `[]` means nowhere.
        #[garde(dive)]
        appenders: Vec<AppenderFactory> = vec![AppenderFactory::Console(ConsoleAppenderFactory::default())],
    }
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
    #[garde(dive)]
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

section! {
    /// The full form of a logger's settings.
    pub struct LoggerSettings {
        /// The logger's level.
        level: Level = Level::Info,
        /// Whether events also go to the root's appenders.
        additive: bool = true,
        /// Appenders of this logger alone.
        appenders: Vec<AppenderFactory> = Vec::new(),
    }
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

/// Declares an appender section: the fields every appender has, then its own.
macro_rules! appender {
    (@fields $section:path; [$($meta:tt)*] $name:ident [$($fields:tt)*]) => {
        ferrowizard_config::section!(@emit [$($meta)*] $name [
            [
                /// Events below this level are not written by this appender.
                threshold: Level = Level::All
            ]
            [
                /// The line pattern (logback's pattern language); DropWizard's default when unset.
                #[garde(custom(valid_log_format))]
                log_format: Option<String> = None
            ]
            [
                /// A structured layout instead of a pattern.
                #[garde(dive)]
                layout: Option<LayoutFactory> = None
            ]
            [
                /// The time zone of `%d` timestamps.
                #[garde(custom(valid_time_zone))]
                time_zone: String = "UTC".to_owned()
            ]
            [
                /// Slots in the queue between request threads and the writer.
                ///
                /// 4096, where DropWizard (logback's AsyncAppender) has 256: the writer naps
                /// while producers fill the queue (it is not woken per event, see
                /// `appender/worker.rs`), and a nap may let at most three eighths of the queue
                /// fill. With 256 slots a server logging 80,000 lines a second woke its writer
                /// 700 times a second, and a DEBUG-chatty one 1,800 times, each wake a context
                /// switch on the cores serving requests; with 4096 both wake ~230 times a
                /// second (the longest nap, 4 ms), and the writer's CPU a request halves
                /// (BENCHMARKS.md, "Server under load"). A bigger queue also
                /// rides out longer stalls of the disk or the network before INFO is dropped
                /// (by `discardingThreshold`) or a request thread waits. It costs ~2.6 MB an
                /// appender (each slot holds a whole record, 640 bytes on cache lines of its own).
                #[garde(range(min = 1, max = 1_048_576))]
                queue_size: usize = 4096
            ]
            [
                /// When fewer slots than this are free, TRACE/DEBUG/INFO are dropped; -1
                /// means queueSize/5, 0 never drops by level.
                #[garde(range(min = -1))]
                discarding_threshold: i64 = -1
            ]
            [
                /// Drop events of every level instead of waiting when the queue is full.
                never_block: bool = false
            ]
            [
                /// At most one event per this period (unset: no throttle).
                message_rate: Option<Duration> = None
            ]
            [
                /// Record the file and line of each event.
                include_caller_data: bool = false
            ]
            $($fields)*
        ]);
    };
}

section! {
    /// `type: console`: lines to the process's stdout or stderr.
    pub struct ConsoleAppenderFactory {
        /// `stdout` or `stderr`.
        target: ConsoleTarget = ConsoleTarget::Stdout,
    }
    with appender
}

/// The stream a console appender writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ConsoleTarget {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

section! {
    /// `type: file`: lines to a file, rotated into archives.
    pub struct FileAppenderFactory {
        /// The file written now. Required.
        #[garde(custom(required_file_name))]
        current_log_filename: Option<String> = None,
        /// Whether rotated files are kept.
        archive: bool = true,
        /// Names of rotated files: `%d` a date, `%i` an index, `.gz` compresses.
        archived_log_filename_pattern: Option<String> = None,
        /// How many archives are kept; 0 keeps all.
        archived_file_count: usize = 5,
        /// Rotate when the file reaches this size.
        max_file_size: Option<Size> = None,
        /// Delete the oldest archives past this total.
        total_size_cap: Option<Size> = None,
        /// The write buffer.
        buffer_size: Size = Size::kibibytes(8),
        /// Flush after every batch of lines.
        immediate_flush: bool = true,
    }
    with appender
}

fn valid_log_format(format: &Option<String>, _: &()) -> garde::Result {
    match format {
        Some(f) => crate::layout::pattern::PatternLayout::new(f, &jiff::tz::TimeZone::UTC)
            .map(|_| ())
            .map_err(|e| garde::Error::new(e.to_string())),
        None => Ok(()),
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
    /// Rules between fields, which garde's per-field rules cannot express inside `section!`.
    fn cross_field_rules(&self) -> Option<String> {
        if let Some(p) = &self.archived_log_filename_pattern
            && let Err(e) = crate::sink::rolling::ArchivePattern::new(p, &jiff::tz::TimeZone::UTC)
        {
            return Some(e);
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
        problem.map(str::to_owned)
    }
}

section! {
    /// `type: syslog`: RFC 5424 messages to a syslog daemon.
    pub struct SyslogAppenderFactory {
        /// The daemon's host.
        host: String = "localhost".to_owned(),
        /// The daemon's port.
        port: u16 = 514,
        /// The syslog facility.
        facility: Facility = Facility::Local0,
        /// `udp`, `tcp` or `unix`.
        protocol: SyslogProtocol = SyslogProtocol::Udp,
        /// The socket for `protocol: unix`.
        socket_path: String = "/dev/log".to_owned(),
        /// Prefix of stack trace lines.
        stack_trace_prefix: String = "\t".to_owned(),
    }
    with appender
}

/// How syslog messages travel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SyslogProtocol {
    /// One datagram per message.
    Udp,
    /// Octet-counted frames on a stream.
    Tcp,
    /// A unix datagram socket such as `/dev/log`.
    Unix,
}

/// Syslog facilities (RFC 5424 §6.2.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

section! {
    /// `type: tcp`: lines over a TCP connection.
    pub struct TcpAppenderFactory {
        /// The receiver's host.
        host: String = "localhost".to_owned(),
        /// The receiver's port.
        port: u16 = 4560,
        /// How long to wait for the connection.
        connection_timeout: Duration = Duration::milliseconds(500),
        /// Flush after every batch of lines.
        immediate_flush: bool = true,
        /// The socket's send buffer.
        send_buffer_size: Size = Size::kibibytes(8),
    }
    with appender
}

section! {
    /// `type: udp`: one datagram per line.
    pub struct UdpAppenderFactory {
        /// The receiver's host.
        host: String = "localhost".to_owned(),
        /// The receiver's port.
        port: u16 = 514,
    }
    with appender
}

/// `appenders:` entries, chosen by `type`.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
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
}

impl garde::Validate for AppenderFactory {
    type Context = ();

    fn validate_into(
        &self,
        ctx: &(),
        parent: &mut dyn FnMut() -> garde::Path,
        report: &mut garde::Report,
    ) {
        match self {
            AppenderFactory::Console(a) => a.validate_into(ctx, parent, report),
            AppenderFactory::File(a) => {
                a.validate_into(ctx, parent, report);
                if let Some(message) = a.cross_field_rules() {
                    report.append(
                        parent().join("archived_log_filename_pattern"),
                        garde::Error::new(message),
                    );
                }
            }
            AppenderFactory::Syslog(a) => a.validate_into(ctx, parent, report),
            AppenderFactory::Tcp(a) => a.validate_into(ctx, parent, report),
            AppenderFactory::Udp(a) => a.validate_into(ctx, parent, report),
        }
    }
}

impl Serialize for AppenderFactory {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            AppenderFactory::Console(a) => serialize_tagged(s, "console", a),
            AppenderFactory::File(a) => serialize_tagged(s, "file", a),
            AppenderFactory::Syslog(a) => serialize_tagged(s, "syslog", a),
            AppenderFactory::Tcp(a) => serialize_tagged(s, "tcp", a),
            AppenderFactory::Udp(a) => serialize_tagged(s, "udp", a),
        }
    }
}

section! {
    /// `layout: {type: json}`: one JSON object per line with DropWizard's fields.
    pub struct JsonLayoutFactory {
        /// The timestamp format; unset means epoch milliseconds.
        timestamp_format: Option<String> = None,
        /// Indent the JSON (for humans; one object then spans lines).
        pretty_print: bool = false,
        /// End each object with a newline.
        append_line_separator: bool = true,
        /// The fields written, among timestamp, level, thread, mdc, logger, message,
        /// exception, caller.
        includes: Vec<JsonField> = vec![
            JsonField::Timestamp, JsonField::Level, JsonField::Thread, JsonField::Mdc,
            JsonField::Logger, JsonField::Message, JsonField::Exception,
        ],
        /// Renames of fields, e.g. `{message: msg}`.
        custom_field_names: BTreeMap<String, String> = BTreeMap::new(),
        /// Constant fields added to every object.
        additional_fields: BTreeMap<String, String> = BTreeMap::new(),
        /// Span fields put at the top level instead of under `mdc`.
        flatten_mdc: bool = false,
    }
}

/// The fields a JSON line can carry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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

section! {
    /// `layout: {type: access-json}`: one JSON object per request-log line.
    pub struct AccessJsonLayoutFactory {
        /// The timestamp format; unset means epoch milliseconds.
        timestamp_format: Option<String> = None,
        /// End each object with a newline.
        append_line_separator: bool = true,
        /// The fields written.
        includes: Vec<AccessField> = vec![
            AccessField::Timestamp, AccessField::RemoteAddress, AccessField::RequestTime,
            AccessField::RequestUri, AccessField::StatusCode, AccessField::Method,
            AccessField::Protocol, AccessField::ContentLength, AccessField::UserAgent,
        ],
        /// Request headers to include.
        request_headers: Vec<String> = Vec::new(),
        /// Response headers to include.
        response_headers: Vec<String> = Vec::new(),
        /// Renames of fields.
        custom_field_names: BTreeMap<String, String> = BTreeMap::new(),
        /// Constant fields added to every object.
        additional_fields: BTreeMap<String, String> = BTreeMap::new(),
    }
}

/// The fields an access-log JSON line can carry (DropWizard's `AccessAttribute`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
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
}

/// `layout:` entries, chosen by `type`.
#[derive(Clone, Debug, PartialEq, Deserialize, garde::Validate)]
#[serde(rename_all = "kebab-case")]
pub enum LayoutFactory {
    /// `type: json`.
    Json(#[garde(dive)] JsonLayoutFactory),
    /// `type: access-json`.
    AccessJson(#[garde(dive)] AccessJsonLayoutFactory),
}

impl Serialize for LayoutFactory {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            LayoutFactory::Json(l) => serialize_tagged(s, "json", l),
            LayoutFactory::AccessJson(l) => serialize_tagged(s, "access-json", l),
        }
    }
}
