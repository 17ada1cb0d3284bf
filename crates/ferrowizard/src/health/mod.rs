//! Health: the checks an application registers ([`HealthCheck`], finding a [`Health`]), the
//! admin side's `/healthcheck` that runs them all, and `health:`'s schedules, which decide
//! whether the application is alive and ready.

pub(crate) mod check;
pub(crate) mod endpoint;
pub(crate) mod schedule;

pub use check::{Health, HealthCheck, HealthChecks};
pub use endpoint::RUNTIME_BOUND;
