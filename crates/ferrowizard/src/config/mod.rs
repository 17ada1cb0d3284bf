//! The configuration model: the sections every ferrowizard application has (`server`,
//! `logging`, `metrics`, `admin`), and the way an application adds its own.
//!
//! An application declares its configuration as a struct with `#[derive(Config)]` and a
//! [`FrameworkConfiguration`] field marked `#[config(framework)]`, the Rust form of
//! subclassing DropWizard's `Configuration`: the framework's sections sit beside the
//! application's own.

pub(crate) mod health;
mod legacy;
pub(crate) mod opentelemetry;
mod refused;
pub(crate) mod server;

use std::path::Path;

use ferrowizard_config::{Config, validated_by};
pub use ferrowizard_config::{Duration, Invalid, Level, Loader, Report, Size, positive_duration};
pub use ferrowizard_logging::config::LoggingFactory;
pub use health::{CheckType, HealthCheckConfig, HealthFactory, ResponderFactory, Schedule};
pub use opentelemetry::{OpenTelemetryFactory, OtlpProtocol};
use serde::Serialize;
use serde::de::DeserializeOwned;
pub use server::{
    ConnectorCommon, ConnectorFactory, DefaultServerFactory, GzipFactory, HttpConnectorFactory,
    HttpsConnectorFactory, RequestIdFactory, RequestLogFactory, ServerCommon, ServerFactory,
    SimpleServerFactory, TlsProtocol, TraceContextFactory,
};

/// `metrics:`: the reporters that write the registry out on a schedule (besides the admin
/// side's `/metrics`, which is read on request).
#[derive(Clone, Debug, PartialEq, Config)]
pub struct MetricsFactory {
    /// How often each reporter reports, unless it sets its own `frequency`.
    #[config(default = Duration::minutes(1), custom(positive_duration))]
    pub frequency: Duration,
    /// Every reporter reports once more as the service stops, after the last request.
    pub report_on_stop: bool,
    /// Where reports go: `{type: log}` and `{type: csv, file: DIR}`, as DropWizard's.
    pub reporters: Vec<ReporterFactory>,
}

/// `metrics.reporters:` entries, chosen by `type`.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(rename_all = "lowercase")]
pub enum ReporterFactory {
    /// `type: log`: one line per metric to a logger, as DropWizard's `Slf4jReporter`.
    Log(LogReporterFactory),
    /// `type: csv`: one CSV file per metric in a directory, as DropWizard's `CsvReporter`.
    Csv(CsvReporterFactory),
}

/// The keys every reporter has, beside its own.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct ReporterCommon {
    /// This reporter's interval, in place of `metrics.frequency`.
    #[config(inner(custom(positive_duration)))]
    pub frequency: Option<Duration>,
    /// Only the metrics of these names (DropWizard JSON keys, e.g.
    /// `ferrowizard.requests`); empty: every metric.
    pub includes: Vec<String>,
    /// Never the metrics of these names.
    pub excludes: Vec<String>,
}

/// `type: log`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct LogReporterFactory {
    /// The keys every reporter has.
    #[config(inline)]
    pub common: ReporterCommon,
    /// The logger the lines go to, at INFO (its level and appenders are `logging:`'s). The
    /// lines are `log` records: with `logging.type: external`, the application's
    /// subscriber sees them only if it bridges `log` (tracing-log's `LogTracer`).
    #[config(default = "metrics".to_owned(), length(min = 1))]
    pub logger: String,
}

/// `type: csv`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct CsvReporterFactory {
    /// The keys every reporter has.
    #[config(inline)]
    pub common: ReporterCommon,
    /// The directory the files go to (made if missing). Required.
    #[config(custom(required_directory))]
    pub file: Option<String>,
}

fn required_directory(path: &Option<String>, _: &()) -> garde::Result {
    match path {
        Some(p) if !p.trim().is_empty() => Ok(()),
        _ => Err(garde::Error::new(
            "is required for a csv reporter (a directory)",
        )),
    }
}

/// `admin:`: the admin interface's health checks, tasks, endpoints and who may use them.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct AdminFactory {
    /// Health checks.
    pub health_checks: HealthChecksFactory,
    /// Tasks.
    pub tasks: TasksFactory,
    /// Which endpoints are served (DropWizard serves them all, always).
    pub endpoints: EndpointsFactory,
    /// Credentials every admin request must carry; none by default (the admin connector
    /// binds 127.0.0.1 unless `bindHost` says otherwise).
    pub auth: Option<AdminAuth>,
}

/// `admin.endpoints:`: switch admin endpoints off (`/healthcheck` is
/// `admin.healthChecks.servletEnabled`).
#[derive(Clone, Debug, PartialEq, Config)]
pub struct EndpointsFactory {
    /// `/ping`.
    #[config(default = true)]
    pub ping: bool,
    /// `/metrics` and `/metrics/prometheus`.
    #[config(default = true)]
    pub metrics: bool,
    /// `/threads`.
    #[config(default = true)]
    pub threads: bool,
    /// `/tasks` and `/tasks/{name}`.
    #[config(default = true)]
    pub tasks: bool,
}

/// `admin.auth:`: `{bearer: TOKEN}` or `{basic: {username, password}}`; take the secrets from
/// the environment (`${ADMIN_TOKEN}`) rather than writing them in the file.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum AdminAuth {
    /// `Authorization: Bearer TOKEN`.
    Bearer(Secret),
    /// `Authorization: Basic base64(username:password)`.
    Basic(BasicCredentials),
}

impl AdminAuth {
    /// Refuses an empty token, user name or password.
    fn credentials_given(&self) -> Result<(), &'static str> {
        let empty = match self {
            AdminAuth::Bearer(token) => token.0.is_empty(),
            AdminAuth::Basic(b) => b.username.is_empty() || b.password.0.is_empty(),
        };
        if empty {
            Err("credentials must not be empty (an unset ${VAR}?)")
        } else {
            Ok(())
        }
    }
}

validated_by!(AdminAuth, credentials_given);

/// `admin.auth.basic:`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct BasicCredentials {
    /// The user name.
    pub username: String,
    /// The password.
    pub password: Secret,
}

/// A credential: written to YAML as it is (so that `check --dump` loads back), but never
/// shown by `Debug`, so that it stays out of logs.
#[derive(Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// A password or key read as written and never shown: `***` in `check --dump`, in `Debug`
/// and so in messages (unlike [`Secret`], which `check --dump` writes so that the dump loads
/// back). Take it from the environment (`${DB_PASSWORD}`).
///
/// ```
/// use ferrowizard::config::Password;
///
/// let password = Password::new("s3cret");
/// assert_eq!(password.expose(), "s3cret");
/// assert_eq!(format!("{password:?}"), "***");
/// assert_eq!(serde_json::to_string(&password).unwrap(), "\"***\"");
/// ```
#[derive(Clone, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(transparent)]
pub struct Password(String);

impl Password {
    /// The password `text`.
    pub fn new(text: impl Into<String>) -> Password {
        Password(text.into())
    }

    /// The password itself, for what needs it (a connection, a key): never to print.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Password {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl Serialize for Password {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str("***")
    }
}

/// `admin.healthChecks:`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct HealthChecksFactory {
    /// Serve `/healthcheck`.
    #[config(default = true)]
    pub servlet_enabled: bool,
    /// A check that has not answered within this time is unhealthy.
    #[config(default = Duration::seconds(5), custom(positive_duration))]
    pub timeout: Duration,
}

/// `admin.tasks:`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct TasksFactory {
    /// Include the error's chain of causes in a failed task's reply.
    pub print_stack_trace_on_error: bool,
    /// The largest request body a task accepts (larger: 413).
    #[config(default = Size::kibibytes(64))]
    pub max_body_size: Size,
}

/// ferrowizard's sections, which every application's configuration has: the Rust form of
/// DropWizard's `Configuration` base class. An application's configuration holds them in a
/// field marked `#[config(framework)]`, whose keys are then written at the top of the file
/// beside the application's own.
///
/// ```
/// use ferrowizard::Config;
/// use ferrowizard::config::{Duration, FrameworkConfiguration};
///
/// /// `quotes:`: the quote feed.
/// #[derive(Clone, Debug, PartialEq, Config)]
/// pub struct QuotesConfig {
///     /// The symbols quoted.
///     #[config(default = vec!["ACME".to_owned()], length(min = 1))]
///     pub symbols: Vec<String>,
///     /// How often prices move.
///     #[config(default = Duration::milliseconds(100))]
///     pub tick_interval: Duration,
/// }
///
/// /// The service's configuration.
/// #[derive(Clone, Debug, Config)]
/// pub struct MyConfig {
///     /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
///     #[config(framework)]
///     pub framework: FrameworkConfiguration,
///     /// The quote feed.
///     pub quotes: QuotesConfig,
/// }
///
/// let load = |yaml| ferrowizard::config::load_str::<MyConfig>("config.yaml", yaml, &[]);
/// let config = load("quotes:\n  symbols: [XYZ]\nlogging:\n  level: WARN\n").unwrap();
/// assert_eq!(config.quotes.symbols, ["XYZ"]);
/// assert_eq!(config.quotes.tick_interval, Duration::milliseconds(100));
/// assert_eq!(config.framework.logging.level, ferrowizard::config::Level::Warn);
/// assert!(load("quotes:\n  symbols: []\n").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Config)]
pub struct FrameworkConfiguration {
    /// `server:`: connectors, limits, request log.
    pub server: ServerFactory,
    /// `logging:`: levels and appenders.
    pub logging: LoggingFactory,
    /// `metrics:`.
    pub metrics: MetricsFactory,
    /// `admin:`: health checks and tasks.
    pub admin: AdminFactory,
    /// `health:`: scheduled health checks and readiness (absent: none).
    pub health: Option<HealthFactory>,
    /// `opentelemetry:`: spans and log events exported over OTLP.
    pub opentelemetry: OpenTelemetryFactory,
}

/// What ferrowizard needs from an application's configuration: its sections. Implemented by
/// `#[derive(Config)]` for a struct with a `#[config(framework)]` field.
pub trait Configuration: Serialize + DeserializeOwned + garde::Validate<Context = ()> {
    /// ferrowizard's sections.
    fn framework(&self) -> &FrameworkConfiguration;
    /// `server:`.
    fn server(&self) -> &ServerFactory {
        &self.framework().server
    }
    /// `logging:`.
    fn logging(&self) -> &LoggingFactory {
        &self.framework().logging
    }
    /// `metrics:`.
    fn metrics(&self) -> &MetricsFactory {
        &self.framework().metrics
    }
    /// `admin:`.
    fn admin(&self) -> &AdminFactory {
        &self.framework().admin
    }
    /// `health:`, when present.
    fn health(&self) -> Option<&HealthFactory> {
        self.framework().health.as_ref()
    }
    /// `opentelemetry:`.
    fn opentelemetry(&self) -> &OpenTelemetryFactory {
        &self.framework().opentelemetry
    }
}

impl Configuration for FrameworkConfiguration {
    fn framework(&self) -> &FrameworkConfiguration {
        self
    }
}

/// A loader with ferrowizard's tree transforms (the DropWizard 0.6 layout, `server.type`
/// defaulting to `default`) and the given `--set` overrides.
pub fn loader(overrides: &[String]) -> Loader<'static> {
    Loader::new()
        .overrides(overrides.to_vec())
        .transform(legacy::normalize)
        .transform(refused::external_logging)
        .refuse(refused::REFUSED)
        .refuse(ferrowizard_logging::config::REFUSED)
}

/// Loads and validates an application's configuration file.
pub fn load<C: Configuration>(path: impl AsRef<Path>, overrides: &[String]) -> Result<C, Report> {
    loader(overrides).load_file(path)
}

/// Loads and validates configuration text; `source` names it in errors.
pub fn load_str<C: Configuration>(
    source: &str,
    text: &str,
    overrides: &[String],
) -> Result<C, Report> {
    loader(overrides).load_str(source, text)
}

/// Why the configuration could not be printed.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// To a value tree.
    #[error(transparent)]
    Value(#[from] serde_json::Error),
    /// To YAML.
    #[error(transparent)]
    Yaml(#[from] serde_saphyr::SerializeError),
}

/// The effective configuration as YAML, every default filled in. Loading the text again
/// gives the same configuration: a `${` inside a value is written `$${`, so that
/// environment substitution leaves it as it is.
pub fn dump<C: Configuration>(config: &C) -> Result<String, DumpError> {
    fn escape(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) if s.contains("${") => *s = s.replace("${", "$${"),
            serde_json::Value::Array(items) => items.iter_mut().for_each(escape),
            serde_json::Value::Object(map) => map.values_mut().for_each(escape),
            _ => {}
        }
    }
    let mut value = serde_json::to_value(config)?;
    // A key one section shares with another that refuses it (a request-log appender's
    // `threshold`) is left out, so that the dump loads back.
    ferrowizard_config::prune_refused(&mut value, refused::REFUSED);
    ferrowizard_config::prune_refused(&mut value, ferrowizard_logging::config::REFUSED);
    escape(&mut value);
    Ok(serde_saphyr::to_string(&value)?)
}
