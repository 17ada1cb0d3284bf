//! `maxConnections` and `maxConnectionsPerRoute`: a call holds a lease on one of each from
//! before it is sent until its response's body is read (or dropped), and waits for one at most
//! `connectionRequestTimeout`. hyper's pool opens a connection for a call only when none is
//! idle, so no more connections are in use than leases.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::stats::Stats;

/// The client's leases: one semaphore for every route, one per route.
pub(crate) struct Leases {
    total: Arc<Semaphore>,
    routes: RwLock<HashMap<String, Arc<Semaphore>>>,
    per_route: usize,
    wait: Duration,
    stats: Arc<Stats>,
}

/// A call's right to a connection; given back when dropped.
pub(crate) struct Lease {
    _total: OwnedSemaphorePermit,
    _route: OwnedSemaphorePermit,
    stats: Arc<Stats>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stats.leased.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Counts a waiting call until it has its lease or gives up.
struct Pending<'a>(&'a Stats);

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        self.0.pending.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Leases {
    pub(crate) fn new(total: u32, per_route: u32, wait: Duration, stats: Arc<Stats>) -> Leases {
        Leases {
            total: Arc::new(Semaphore::new(total as usize)),
            routes: RwLock::default(),
            per_route: per_route as usize,
            wait,
            stats,
        }
    }

    /// The semaphore of `route` (`scheme://host:port`).
    fn route(&self, route: &str) -> Arc<Semaphore> {
        if let Some(found) = self
            .routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(route)
        {
            return found.clone();
        }
        self.routes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(route.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(self.per_route)))
            .clone()
    }

    /// A lease for a call to `route`, at once when one is free, else within
    /// `connectionRequestTimeout` (`None`: it ran out).
    pub(crate) async fn lease(&self, route: &str) -> Option<Lease> {
        let semaphore = self.route(route);
        let free = (
            self.total.clone().try_acquire_owned(),
            semaphore.clone().try_acquire_owned(),
        );
        let (total, route) = match free {
            (Ok(total), Ok(route)) => (total, route),
            (total, route) => {
                self.stats.pending.fetch_add(1, Ordering::Relaxed);
                let _pending = Pending(&self.stats);
                let both = async {
                    let route = match route {
                        Ok(permit) => permit,
                        Err(_) => semaphore.acquire_owned().await.ok()?,
                    };
                    let total = match total {
                        Ok(permit) => permit,
                        Err(_) => self.total.clone().acquire_owned().await.ok()?,
                    };
                    Some((total, route))
                };
                tokio::time::timeout(self.wait, both).await.ok()??
            }
        };
        self.stats.leased.fetch_add(1, Ordering::Relaxed);
        Some(Lease {
            _total: total,
            _route: route,
            stats: self.stats.clone(),
        })
    }
}
