//! DropWizard's `logging:` section for Rust services.
//!
//! This crate holds the section's configuration model ([`LoggingFactory`] and the
//! appenders); building the `tracing` subscriber from it comes with the logging pipeline.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod config;

pub use config::{AppenderFactory, LayoutFactory, LoggerConfig, LoggingFactory};
