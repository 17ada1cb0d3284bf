#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod de;
mod env;
mod error;
mod loader;
mod node;
mod overrides;
mod refuse;
mod section;
mod suggest;
mod support;
mod validate;
mod values;

pub use de::DeError;
pub use env::Lookup;
pub use error::{ConfigError, ErrorKind, Report};
pub use loader::{Loader, Transform};
pub use node::{Node, Origin, Value};
pub use refuse::{Refusal, prune_refused};
pub use section::{Invalid, positive_duration, serialize_tagged};
pub use suggest::did_you_mean;
/// The names [`Level`] accepts, for listing in messages.
pub use values::level::LEVEL_NAMES;
pub use values::{Duration, Level, Size};

/// Re-exported so that configuration types can derive `Validate` without a direct dependency.
pub use garde;

// The derive names this crate `::ferrowizard_config`, here as in every crate using it.
extern crate self as ferrowizard_config;

/// A configuration section as a plain struct, or a choice as a plain enum.
///
/// For a struct, each field is a key of the section, named in camelCase (`max_threads` is
/// `maxThreads`). It implements `Default` (each field's `default`, else its type's),
/// `Deserialize` (absent keys keep their defaults; an unknown key is an error naming the
/// nearest known ones), `Serialize` (every key, for `check --dump`) and `garde::Validate`.
/// A crate using it needs neither serde nor garde as a dependency.
///
/// Field attributes, in `#[config(...)]`:
/// - `default = expr`: the value when the key is absent;
/// - `rename = "key"`: the key, in place of the camelCase name;
/// - `inline`: the field is a section whose keys are written beside this one's (the keys
///   every appender has, beside each appender's own), with their positions kept;
/// - `skip`: the field is not validated;
/// - garde's rules, with garde's messages: `range(min = .., max = .., equal = ..)`,
///   `length(min = .., max = .., equal = ..)`, `ascii`, `custom(f)` (`f(&value, &())` returns
///   `garde::Result`) and `inner(...)` (rules for each item of a list or the value of an
///   `Option`).
///
/// A field whose type is validated (a section, a list, map or `Option` of sections) is always
/// validated; there is nothing to switch on.
///
/// On the struct, `#[config(check = f)]` adds a rule over several keys:
/// `f(&self) -> Result<(), Invalid>` (see [`Invalid`]); `#[config(refuse(key = "why"))]`
/// refuses a key other tools accept, with why it has no meaning here and what to use instead.
///
/// ```
/// use ferrowizard_config::{Config, Duration, Loader};
///
/// /// `quotes:`: the quote feed.
/// #[derive(Clone, Debug, PartialEq, Config)]
/// pub struct Quotes {
///     /// The symbols quoted.
///     #[config(default = vec!["ACME".to_owned()], length(min = 1))]
///     pub symbols: Vec<String>,
///     /// How often prices move.
///     #[config(default = Duration::milliseconds(100))]
///     pub tick_interval: Duration,
///     /// Where quotes go.
///     pub feed: Feed,
/// }
///
/// /// `quotes.feed:`.
/// #[derive(Clone, Debug, PartialEq, Config)]
/// pub struct Feed {
///     /// The port.
///     #[config(default = 9000, range(min = 1024))]
///     pub port: u16,
/// }
///
/// let load = |yaml| Loader::new().load_str::<Quotes>("config.yaml", yaml);
/// let quotes = load("symbols: [XYZ]\n").unwrap();
/// assert_eq!(quotes.symbols, ["XYZ"]);
/// assert_eq!(quotes.tick_interval, Duration::milliseconds(100));
/// assert_eq!(quotes.feed.port, 9000);
///
/// let report = load("symbols: []\nfeed:\n  port: 80\ntickIntervall: 1s\n").unwrap_err();
/// assert_eq!(
///     report.to_string().trim_end(),
///     "config.yaml has the following errors:
///   * config.yaml:1:10: Invalid value at: symbols; length is lower than 1
///   * config.yaml:3:9: Invalid value at: feed.port; lower than 1024
///   * config.yaml:4:1: Unrecognized field at: tickIntervall
///     Did you mean?:
///       - tickInterval"
/// );
/// ```
///
/// For an enum, each variant is a name (`stdout`), or carries a section (`File(FileAppender)`)
/// written with a `type` key beside the section's own: `{type: file, currentLogFilename: ..}`.
/// Names are camelCase (`TlsV12` is `tlsV12`) unless the enum says
/// `#[config(rename_all = "lowercase")]` or `"kebab-case"`, or the variant
/// `#[config(rename = "TLSv1.2")]`.
///
/// ```
/// use ferrowizard_config::{Config, Loader};
///
/// /// `sink:`, chosen by `type`.
/// #[derive(Clone, Debug, PartialEq, Config)]
/// #[config(rename_all = "lowercase")]
/// pub enum Sink {
///     /// `type: file`.
///     File(FileSink),
///     /// `type: console`.
///     Console(ConsoleSink),
/// }
///
/// /// `type: file`.
/// #[derive(Clone, Debug, PartialEq, Config)]
/// pub struct FileSink {
///     /// The file.
///     #[config(length(min = 1))]
///     pub path: String,
/// }
///
/// /// `type: console`.
/// #[derive(Clone, Debug, PartialEq, Config)]
/// pub struct ConsoleSink {
///     /// `stdout` or `stderr`.
///     pub target: Target,
/// }
///
/// /// A stream.
/// #[derive(Clone, Copy, Debug, Default, PartialEq, Config)]
/// pub enum Target {
///     /// Standard output.
///     #[default]
///     Stdout,
///     /// Standard error.
///     Stderr,
/// }
///
/// let load = |yaml| Loader::new().load_str::<Sink>("sink.yaml", yaml);
/// assert_eq!(
///     load("type: console\ntarget: stderr\n").unwrap(),
///     Sink::Console(ConsoleSink { target: Target::Stderr })
/// );
/// let report = load("type: file\npath: ''\n").unwrap_err();
/// assert!(report.to_string().contains("sink.yaml:2:7: Invalid value at: path"), "{report}");
/// ```
pub use ferrowizard_config_derive::Config;

#[doc(hidden)]
pub mod __private {
    pub use crate::support::{
        Dive, DiveInto, DiveNone, Section, VariantSeed, deserialize_section, serialize_section,
    };
    pub use garde;
    pub use serde;
}
