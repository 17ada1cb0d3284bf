#![doc = include_str!("../README.md")]
//!
//! ferrowizard-db: a service's databases, as `dropwizard-db` and `dropwizard-migrations` give
//! them to a DropWizard service.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod config;
mod connect;
mod database;
mod driver;
mod error;
mod migrate;
mod outage;
mod pool;
mod secret;

pub use config::{DataSourceFactory, TransactionIsolation};
pub use database::Database;
pub use driver::Driver;
pub use error::{BuildError, DbError};
pub use migrate::{Databases, command};
pub use secret::{Backend, DatabaseUrl};
/// The sqlx this crate is built on: its queries run on [`Database`]'s connections.
pub use sqlx;
