//! ferrowizard: DropWizard-style production HTTP services in Rust.
//!
//! One YAML file configures the server, logging, metrics and the admin interface; every
//! application gets the `check` command (and, with the server, `server`) for free.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod admin;
pub mod app;
pub mod cli;
pub mod config;
mod reporters;
pub mod server;

pub use admin::tasks::{Task, TaskError, TaskParams, TaskResult};
pub use app::{Application, Environment, HealthCheck};
pub use cli::run;
pub use ferrowizard_metrics as metrics;

#[doc(hidden)]
pub mod __private {
    pub use ferrowizard_config::section;
}
