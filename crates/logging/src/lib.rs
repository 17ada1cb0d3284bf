//! DropWizard's `logging:` section for Rust services, on `tracing`.
//!
//! The path of an event, one file each:
//! 1. the `tracing` macro, filtered by level per logger ([`levels`], a reloadable `Targets`);
//! 2. [`layer`] captures it into a recycled [`record::Record`] on the calling thread;
//! 3. [`appender`] queues it under the appender's drop policy, counting every event;
//! 4. the appender's writer thread ([`appender`]'s worker) formats batches with a
//!    [`layout`] and hands them to a [`sink`] (console, file with [`sink::rolling`], syslog,
//!    tcp, udp).
//!
//! ```no_run
//! use ferrowizard_logging::LoggingFactory;
//! let (logging, subscriber) = LoggingFactory::default().build("my-service").unwrap();
//! let guard = logging.install(subscriber, std::time::Duration::from_secs(1)).unwrap();
//! tracing::info!(user = 42, "signed in");
//! drop(guard); // everything queued is written
//! ```
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod appender;
mod build;
pub mod config;
pub mod layer;
pub mod layout;
pub mod levels;
pub mod names;
pub mod record;
pub mod sink;

pub use appender::stats::{AppenderStats, LevelCounts};
pub use build::{
    BuildError, InstallError, Logging, LoggingGuard, start_appender, start_raw_appender,
};
pub use config::{AppenderFactory, LayoutFactory, LoggerConfig, LoggingFactory};
pub use levels::Levels;
