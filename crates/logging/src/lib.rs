#![doc = include_str!("../README.md")]
//!
//! DropWizard's `logging:` section for Rust services, on `tracing`.
//!
//! The path of an event, one file each:
//! 1. the `tracing` macro, filtered by level per logger ([`levels`], a reloadable `Targets`);
//! 2. [`layer`] routes it to its appenders;
//! 3. [`appender`] decides its drop policy and claims a slot in the appender's queue (its
//!    `ring`), where the calling thread captures it into the slot's [`record::Record`];
//! 4. the appender's writer thread (its `worker`) formats batches in place with a [`layout`]
//!    and hands them to a [`sink`] (console, file with [`sink::rolling`], syslog, tcp, udp).
//!
//! ```no_run
//! use ferrowizard_logging::LoggingFactory;
//! let (logging, subscriber) = LoggingFactory::default().build("my-service").unwrap();
//! let guard = logging.install(subscriber, std::time::Duration::from_secs(1)).unwrap();
//! tracing::info!(user = 42, "signed in");
//! drop(guard); // everything queued is written
//! ```
// `unsafe` only in the queue (`appender/ring.rs`), which says why.
#![deny(unsafe_code)]
#![deny(missing_docs)]

pub mod appender;
mod build;
mod bytes;
mod clock;
pub mod config;
pub mod context;
mod json_escape;
pub mod layer;
pub mod layout;
pub mod levels;
pub mod names;
pub mod record;
pub mod sink;

pub use appender::labels::AppenderLabels;
pub use appender::stats::{AppenderStats, LevelCounts};
pub use build::{
    BuildError, InstallError, Logging, LoggingGuard, start_appender, start_raw_appender,
};
pub use config::{AppenderFactory, LayoutFactory, LoggerConfig, LoggingFactory};
pub use layer::AppenderLayer;
pub use levels::Levels;
