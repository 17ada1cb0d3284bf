#![doc = include_str!("../README.md")]
//!
//! ferrowizard: DropWizard-style production HTTP services in Rust.
//!
//! One YAML file configures the server, logging, metrics and the admin interface; every
//! application gets the `check` command (and, with the server, `server`) for free.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod admin;
mod app;
#[cfg(feature = "bench")]
pub mod bench;
mod cli;
mod command;
pub mod config;
mod errors;
mod export;
pub mod extract;
pub mod health;
mod lifecycle;
mod reporters;
pub mod server;
mod startup;
pub mod stream;
pub mod testing;
pub mod trace;

pub use admin::tasks::{Task, TaskError, TaskParams, TaskResult, Tasks};
pub use app::{Application, Environment};
/// The axum ferrowizard is built on: routers, extractors and responses of this version fit
/// [`Environment::routes`] and [`Environment::layer`].
pub use axum;
pub use cli::{run, run_from};
pub use command::Command;
pub use errors::{ErrorMessage, RunError};
pub use ferrowizard_metrics as metrics;
pub use lifecycle::Managed;

// `#[derive(Config)]` names this crate `::ferrowizard`, here as in every crate using it.
extern crate self as ferrowizard;

/// Derives a configuration section from a plain struct, or a choice from a plain enum: each
/// field a key in camelCase, its default and its rules in `#[config(...)]`, nested sections
/// always validated. An application's own configuration is a struct with a
/// [`FrameworkConfiguration`](config::FrameworkConfiguration) field marked
/// `#[config(framework)]` (an example is there); the attributes are listed below.
pub use ferrowizard_config::Config;

#[doc(hidden)]
pub mod __private {
    pub use ferrowizard_config as config;
}
