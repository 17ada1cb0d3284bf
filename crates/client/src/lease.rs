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

/// The client's leases: one semaphore for every route, one per route (`http` and `https`
/// apart, by the URL's authority) when `maxConnectionsPerRoute` is below `maxConnections`.
pub(crate) struct Leases {
    total: Arc<Semaphore>,
    routes: [RwLock<HashMap<String, Arc<Semaphore>>>; 2],
    /// `None`: a route may use every connection, so only the total is counted.
    per_route: Option<usize>,
    wait: Duration,
    stats: Arc<Stats>,
}

/// A call's right to a connection; given back when dropped.
pub(crate) struct Lease {
    _total: OwnedSemaphorePermit,
    _route: Option<OwnedSemaphorePermit>,
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
            routes: Default::default(),
            per_route: (per_route < total).then_some(per_route as usize),
            wait,
            stats,
        }
    }

    /// The semaphore of the route to `authority` over `https` or not.
    fn route(&self, https: bool, authority: &str, per_route: usize) -> Arc<Semaphore> {
        let routes = &self.routes[usize::from(https)];
        if let Some(found) = routes
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(authority)
        {
            return found.clone();
        }
        routes
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .entry(authority.to_owned())
            .or_insert_with(|| Arc::new(Semaphore::new(per_route)))
            .clone()
    }

    /// A lease for a call to `authority` over `https` or not, at once when one is free, else
    /// within `connectionRequestTimeout` (`None`: it ran out).
    pub(crate) async fn lease(&self, https: bool, authority: &str) -> Option<Lease> {
        let semaphore = self
            .per_route
            .map(|per_route| self.route(https, authority, per_route));
        let free = (
            self.total.clone().try_acquire_owned(),
            semaphore.as_ref().map(|s| s.clone().try_acquire_owned()),
        );
        let (total, route) = match free {
            (Ok(total), None) => (total, None),
            (Ok(total), Some(Ok(route))) => (total, Some(route)),
            (total, route) => {
                self.stats.pending.fetch_add(1, Ordering::Relaxed);
                let _pending = Pending(&self.stats);
                let both = async {
                    let route = match (route, &semaphore) {
                        (Some(Ok(permit)), _) => Some(permit),
                        (_, Some(semaphore)) => Some(semaphore.clone().acquire_owned().await.ok()?),
                        (_, None) => None,
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
