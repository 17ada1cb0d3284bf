//! What the client counts as it goes, read by its gauges.

use std::sync::atomic::{AtomicI64, AtomicU64};

/// A client's connections and calls.
#[derive(Debug, Default)]
pub(crate) struct Stats {
    /// Connections open now.
    pub(crate) open: AtomicI64,
    /// Connections opened since the client was built.
    pub(crate) opened: AtomicU64,
    /// Calls holding a lease (in flight, their response's body not yet read).
    pub(crate) leased: AtomicI64,
    /// Calls waiting for a lease.
    pub(crate) pending: AtomicI64,
    /// Connections not used again because they outlived `timeToLive`.
    pub(crate) retired: AtomicU64,
    /// Open connections that have lived `timeToLive` and are not retired yet: while there
    /// are some, each call watches which connection it gets, to retire it.
    pub(crate) expired_open: AtomicI64,
}
