//! The OpenTelemetry export (`opentelemetry:`), behind one set of types. With the `otlp`
//! feature they send the requests' spans and the log events to a collector; without it they
//! refuse `enabled: true` and do nothing, so that startup and the observe stage are the same
//! code in both builds.

mod error;
#[cfg(not(feature = "otlp"))]
mod off;
#[cfg(feature = "otlp")]
mod on;
#[cfg(feature = "otlp")]
mod otlp;
mod span;

pub(crate) use error::ExportError;
#[cfg(not(feature = "otlp"))]
pub(crate) use off::{Export, RequestSpan, decide, start};
#[cfg(feature = "otlp")]
pub(crate) use on::{Export, RequestSpan, decide, start};
pub(crate) use span::{Recording, ServerSpan};
