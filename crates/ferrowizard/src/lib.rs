//! ferrowizard: DropWizard-style production HTTP services in Rust.
//!
//! One YAML file configures the server, logging, metrics and the admin interface; every
//! application gets the `check` command (and, with the server, `server`) for free.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod admin;
pub mod app;
#[cfg(feature = "bench")]
pub mod bench;
pub mod cli;
mod command;
pub mod config;
pub mod errors;
pub mod extract;
mod health;
mod lifecycle;
#[cfg(feature = "otlp")]
mod otlp;
mod reporters;
mod running;
pub mod server;
pub mod testing;
pub mod trace;

pub use admin::tasks::{Task, TaskError, TaskParams, TaskResult};
pub use app::{Application, Environment, HealthCheck};
/// The axum ferrowizard is built on: routers, extractors and responses of this version fit
/// [`Environment::routes`] and [`Environment::layer`].
pub use axum;
pub use cli::run;
pub use command::Command;
pub use errors::RunError;
pub use ferrowizard_metrics as metrics;
pub use lifecycle::Managed;

// `::ferrowizard::...` paths, which the macros below hand to serde's derive (it takes its
// crate's path as a string, where `$crate` cannot be written), work inside this crate too.
extern crate self as ferrowizard;

#[doc(hidden)]
pub mod __private {
    pub use ferrowizard_config::__private::serde;
    pub use ferrowizard_config::section;
}

/// Declares a section of an application's configuration, for a field of its
/// [`configuration!`]: a struct whose YAML keys are its fields' names in camelCase, whose
/// absent keys take the default written beside each field, and which refuses unknown keys.
///
/// The section implements `Serialize` (for `check --dump`), `Deserialize` and
/// `garde::Validate` (a field is validated when it carries a `#[garde(...)]` rule; the
/// configuration's field holding the section needs `#[garde(dive)]`). The application's
/// `Cargo.toml` needs neither `serde` nor `garde` for them: the rules a field may carry are
/// `dive`, `skip`, `custom(f)`, `ascii`, `length(min = .., max = ..)`,
/// `range(min = .., max = ..)` and `inner(...)` (see `ferrowizard_config::section!`). The
/// macro expects this crate under its own name, `ferrowizard`.
///
/// ```
/// use ferrowizard::config::Duration;
///
/// ferrowizard::section! {
///     /// `quotes:`: the quote feed.
///     pub struct QuotesConfig {
///         /// The symbols quoted.
///         #[garde(length(min = 1))]
///         symbols: Vec<String> = vec!["ACME".to_owned()],
///         /// How often prices move.
///         tick_interval: Duration = Duration::milliseconds(100),
///     }
/// }
///
/// ferrowizard::configuration! {
///     /// The service's configuration.
///     pub struct MyConfig {
///         /// The quote feed.
///         #[garde(dive)]
///         quotes: QuotesConfig = QuotesConfig::default(),
///     }
/// }
///
/// let load = |yaml| ferrowizard::config::load_str::<MyConfig>("config.yaml", yaml, &[]);
/// let config = load("quotes:\n  symbols: [XYZ]\n").unwrap();
/// assert_eq!(config.quotes.symbols, ["XYZ"]);
/// assert_eq!(config.quotes.tick_interval, Duration::milliseconds(100));
/// assert!(load("quotes:\n  symbols: []\n").is_err());
/// ```
#[macro_export]
macro_rules! section {
    ($($body:tt)*) => {
        $crate::__private::section! { @serde "::ferrowizard::__private::serde" $($body)* }
    };
}
