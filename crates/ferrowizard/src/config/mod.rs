//! The configuration model: the sections every ferrowizard application has (`server`,
//! `logging`, `metrics`, `admin`), and the way an application adds its own.
//!
//! An application declares its configuration with [`configuration!`](crate::configuration),
//! the Rust form of subclassing DropWizard's `Configuration`: the framework's sections are
//! added to the application's own fields.

pub mod health;
mod legacy;
pub mod opentelemetry;
mod refused;
pub mod server;

use std::path::Path;

pub use ferrowizard_config::{Duration, Level, Loader, Report, Size};
use ferrowizard_config::{positive_duration, section, validated_by};
pub use ferrowizard_logging::config::LoggingFactory;
pub use health::HealthFactory;
pub use opentelemetry::OpenTelemetryFactory;
use serde::Serialize;
use serde::de::DeserializeOwned;
pub use server::ServerFactory;

section! {
    /// `metrics:`: the reporters that write the registry out on a schedule (besides the admin
    /// side's `/metrics`, which is read on request).
    pub struct MetricsFactory {
        /// How often each reporter reports, unless it sets its own `frequency`.
        #[garde(custom(positive_duration))]
        frequency: Duration = Duration::minutes(1),
        /// Every reporter reports once more as the service stops, after the last request.
        report_on_stop: bool = false,
        /// Where reports go: `{type: log}` and `{type: csv, file: DIR}`, as DropWizard's.
        #[garde(dive)]
        reporters: Vec<ReporterFactory> = Vec::new(),
    }
}

/// `metrics.reporters:` entries, chosen by `type`.
#[derive(Clone, Debug, PartialEq, serde::Deserialize, garde::Validate)]
#[serde(rename_all = "lowercase")]
pub enum ReporterFactory {
    /// `type: log`: one line per metric to a logger, as DropWizard's `Slf4jReporter`.
    Log(#[garde(dive)] LogReporterFactory),
    /// `type: csv`: one CSV file per metric in a directory, as DropWizard's `CsvReporter`.
    Csv(#[garde(dive)] CsvReporterFactory),
}

impl Serialize for ReporterFactory {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ReporterFactory::Log(r) => ferrowizard_config::serialize_tagged(s, "log", r),
            ReporterFactory::Csv(r) => ferrowizard_config::serialize_tagged(s, "csv", r),
        }
    }
}

/// Declares a reporter section: the fields every reporter has, then its own.
macro_rules! reporter {
    (@fields $section:path; [$($meta:tt)*] $name:ident [$($fields:tt)*]) => {
        ferrowizard_config::section!(@emit [$($meta)*] $name [
            [
                /// This reporter's interval, in place of `metrics.frequency`.
                #[garde(inner(custom(positive_duration)))]
                frequency: Option<Duration> = None
            ]
            [
                /// Only the metrics of these names (DropWizard JSON keys, e.g.
                /// `ferrowizard.requests`); empty: every metric.
                includes: Vec<String> = Vec::new()
            ]
            [
                /// Never the metrics of these names.
                excludes: Vec<String> = Vec::new()
            ]
            $($fields)*
        ]);
    };
}

section! {
    /// `type: log`.
    pub struct LogReporterFactory {
        /// The logger the lines go to, at INFO (its level and appenders are `logging:`'s). The
        /// lines are `log` records: with `logging.type: external`, the application's
        /// subscriber sees them only if it bridges `log` (tracing-log's `LogTracer`).
        #[garde(length(min = 1))]
        logger: String = "metrics".to_owned(),
    }
    with reporter
}

section! {
    /// `type: csv`.
    pub struct CsvReporterFactory {
        /// The directory the files go to (made if missing). Required.
        #[garde(custom(required_directory))]
        file: Option<String> = None,
    }
    with reporter
}

fn required_directory(path: &Option<String>, _: &()) -> garde::Result {
    match path {
        Some(p) if !p.trim().is_empty() => Ok(()),
        _ => Err(garde::Error::new(
            "is required for a csv reporter (a directory)",
        )),
    }
}

section! {
    /// `admin:`: the admin interface's health checks, tasks, endpoints and who may use them.
    pub struct AdminFactory {
        /// Health checks.
        #[garde(dive)]
        health_checks: HealthChecksFactory = HealthChecksFactory::default(),
        /// Tasks.
        tasks: TasksFactory = TasksFactory::default(),
        /// Which endpoints are served (DropWizard serves them all, always).
        endpoints: EndpointsFactory = EndpointsFactory::default(),
        /// Credentials every admin request must carry; none by default (the admin connector
        /// binds 127.0.0.1 unless `bindHost` says otherwise).
        #[garde(dive)]
        auth: Option<AdminAuth> = None,
    }
}

section! {
    /// `admin.endpoints:`: switch admin endpoints off (`/healthcheck` is
    /// `admin.healthChecks.servletEnabled`).
    pub struct EndpointsFactory {
        /// `/ping`.
        ping: bool = true,
        /// `/metrics` and `/metrics/prometheus`.
        metrics: bool = true,
        /// `/threads`.
        threads: bool = true,
        /// `/tasks` and `/tasks/{name}`.
        tasks: bool = true,
    }
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

section! {
    /// `admin.auth.basic:`.
    pub struct BasicCredentials {
        /// The user name.
        username: String = String::new(),
        /// The password.
        password: Secret = Secret::default(),
    }
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

section! {
    /// `admin.healthChecks:`.
    pub struct HealthChecksFactory {
        /// Serve `/healthcheck`.
        servlet_enabled: bool = true,
        /// A check that has not answered within this time is unhealthy.
        #[garde(custom(positive_duration))]
        timeout: Duration = Duration::seconds(5),
    }
}

section! {
    /// `admin.tasks:`.
    pub struct TasksFactory {
        /// Include the error's chain of causes in a failed task's reply.
        print_stack_trace_on_error: bool = false,
        /// The largest request body a task accepts (larger: 413).
        max_body_size: Size = Size::kibibytes(64),
    }
}

/// Declares the framework's fields, for [`configuration!`](crate::configuration).
#[doc(hidden)]
#[macro_export]
macro_rules! __framework_fields {
    (@fields $section:path; [$($meta:tt)*] $name:ident [$($fields:tt)*]) => {
        $crate::__private::section!(@emit serde = "::ferrowizard::__private::serde" [$($meta)*] $name [
            [
                /// `server:`: connectors, limits, request log.
                #[garde(dive)]
                server: $crate::config::ServerFactory = Default::default()
            ]
            [
                /// `logging:`: levels and appenders.
                #[garde(dive)]
                logging: $crate::config::LoggingFactory = Default::default()
            ]
            [
                /// `metrics:`.
                #[garde(dive)]
                metrics: $crate::config::MetricsFactory = Default::default()
            ]
            [
                /// `admin:`: health checks and tasks.
                #[garde(dive)]
                admin: $crate::config::AdminFactory = Default::default()
            ]
            [
                /// `health:`: scheduled health checks and readiness (absent: none).
                #[garde(dive)]
                health: Option<$crate::config::HealthFactory> = None
            ]
            [
                /// `opentelemetry:`: spans and log events exported over OTLP.
                #[garde(dive)]
                opentelemetry: $crate::config::OpenTelemetryFactory = Default::default()
            ]
            $($fields)*
        ]);
        impl $crate::config::Configuration for $name {
            fn server(&self) -> &$crate::config::ServerFactory { &self.server }
            fn logging(&self) -> &$crate::config::LoggingFactory { &self.logging }
            fn metrics(&self) -> &$crate::config::MetricsFactory { &self.metrics }
            fn admin(&self) -> &$crate::config::AdminFactory { &self.admin }
            fn health(&self) -> Option<&$crate::config::HealthFactory> { self.health.as_ref() }
            fn opentelemetry(&self) -> &$crate::config::OpenTelemetryFactory { &self.opentelemetry }
        }
    };
}

/// Declares an application's configuration: its own fields (each with its default) plus
/// ferrowizard's `server`, `logging`, `metrics` and `admin` sections.
///
/// A field may be a section of the application's own, declared with
/// [`section!`](crate::section). Like a section, the configuration implements serde's and
/// garde's traits, without the application's `Cargo.toml` naming `serde` or `garde`.
///
/// ```
/// ferrowizard::configuration! {
///     /// The service's configuration.
///     pub struct MyConfig {
///         /// Greeting sent by `/hello`.
///         greeting: String = "hello".to_owned(),
///     }
/// }
/// let config: MyConfig = ferrowizard::config::load_str("config.yaml", "greeting: hi\n", &[]).unwrap();
/// assert_eq!(config.greeting, "hi");
/// ```
#[macro_export]
macro_rules! configuration {
    ($($body:tt)*) => {
        $crate::__private::section! { $($body)* with $crate::__framework_fields }
    };
}

/// What ferrowizard needs from an application's configuration.
pub trait Configuration: Serialize + DeserializeOwned + garde::Validate<Context = ()> {
    /// `server:`.
    fn server(&self) -> &ServerFactory;
    /// `logging:`.
    fn logging(&self) -> &LoggingFactory;
    /// `metrics:`.
    fn metrics(&self) -> &MetricsFactory;
    /// `admin:`.
    fn admin(&self) -> &AdminFactory;
    /// `health:`, when present.
    fn health(&self) -> Option<&HealthFactory>;
    /// `opentelemetry:`.
    fn opentelemetry(&self) -> &OpenTelemetryFactory;
}

configuration! {
    /// A configuration with only ferrowizard's sections.
    pub struct FrameworkConfiguration {}
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
