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
pub mod section;
mod suggest;
mod validate;
mod values;

pub use de::DeError;
pub use env::Lookup;
pub use error::{ConfigError, ErrorKind, Report};
pub use loader::{Loader, Transform};
pub use node::{Node, Origin, Value};
pub use refuse::{Refusal, prune_refused};
pub use section::{positive_duration, serialize_tagged};
pub use suggest::did_you_mean;
/// The names [`Level`] accepts, for listing in messages.
pub use values::level::LEVEL_NAMES;
pub use values::{Duration, Level, Size};

/// Re-exported so that configuration types can derive `Validate` without a direct dependency.
pub use garde;

#[doc(hidden)]
pub mod __private {
    pub use serde;
}
