#![doc = include_str!("../README.md")]
//!
//! DropWizard's metrics for Rust services: what `com.codahale.metrics` (Dropwizard Metrics 4.x)
//! is to a DropWizard service.
//!
//! - Metric types, each a cheap cloneable handle: [`Counter`] (up and down), [`Meter`] (count,
//!   mean and 1/5/15-minute rates, DropWizard's EWMAs), [`Histogram`] (DropWizard's default
//!   exponentially decaying reservoir), [`Timer`] (a meter plus a histogram of durations),
//!   [`Gauge`] and [`SettableGauge`]; [`Snapshot`] computes quantiles, mean and standard
//!   deviation over weighted samples as DropWizard's `WeightedSnapshot` does.
//! - [`MetricRegistry`]: get-or-create by dotted name and labels; a name asked for as another
//!   type is a [`RegistryError`], not a panic.
//! - Renderers: [`MetricRegistry::render_json`] writes DropWizard's `/metrics` JSON,
//!   [`MetricRegistry::render_prometheus`] the Prometheus text format 0.0.4.
//! - The `metrics` crate's facade: [`install_recorder`] makes a registry the process's recorder,
//!   so `metrics::counter!`, `gauge!` and `histogram!` land in it too.
//!
//! ```
//! use ferrowizard_metrics::MetricRegistry;
//!
//! let registry = MetricRegistry::new();
//! let active = registry.counter("ferrowizard.requests.active")?;
//! let requests = registry.timer_with("ferrowizard.requests", &[("method", "GET"), ("route", "/quotes/{symbol}")])?;
//! active.inc();
//! requests.time(|| { /* serve */ });
//! active.dec();
//!
//! let json: serde_json::Value = serde_json::from_str(&registry.render_json(false)).unwrap();
//! assert_eq!(json["timers"]["ferrowizard.requests.GET./quotes/{symbol}"]["count"], 1);
//! assert!(registry.render_prometheus().contains("# TYPE ferrowizard_requests_seconds summary"));
//! # Ok::<(), ferrowizard_metrics::RegistryError>(())
//! ```
//!
//! Recording costs: a counter increment and a meter mark are one relaxed atomic add each; a
//! histogram or timer update takes an uncontended lock and reads the clock (`benches/record.rs`).
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod adder;
mod clock;
mod counter;
pub mod ewma;
mod facade;
mod gauge;
mod histogram;
mod kind;
mod meter;
pub mod names;
mod registry;
pub mod render;
mod snapshot;
mod ticker;
mod timer;

pub use adder::Adder;
pub use clock::{Clock, ManualClock, SystemClock};
pub use counter::Counter;
pub use ewma::Ewma;
pub use facade::{FIXED_POINT_DIVISOR, FacadeRecorder, InstallError, REJECTED, install_recorder};
pub use gauge::{Gauge, SettableGauge};
pub use histogram::{Histogram, RESERVOIR_ALPHA, RESERVOIR_SIZE};
pub use kind::MetricKind;
pub use meter::Meter;
pub use registry::{MetricRegistry, RegistryError};
pub use snapshot::{InvalidQuantile, Snapshot};
pub use timer::{Timer, TimerContext};
