#![doc = include_str!("../README.md")]
//!
//! ferrowizard-client: the calls a service makes to other services, as `dropwizard-client`
//! gives them to a DropWizard service.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod body;
mod client;
mod config;
mod connect;
mod error;
mod lease;
mod metrics;
mod stats;
mod tls;

pub use body::Body;
pub use client::HttpClient;
pub use config::{HttpClientConfiguration, TlsConfiguration};
pub use error::{BuildError, ClientError};
pub use metrics::MetricNameStrategy;
