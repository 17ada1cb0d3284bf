//! `maxConnections` and `maxConnectionsPerRoute`: a call holds a lease on one of each from
//! before it is sent until its response's body is read (or dropped), and waits for one at most
//! `connectionRequestTimeout`. hyper's pool opens a connection for a call only when none is
//! idle, so no more connections are in use than leases.
//!
//! The total is the count of leases itself (`Stats::leased`, which the gauge reads), taken by
//! compare-and-swap and given back with one subtraction; a call that finds it full waits on a
//! `Notify` that a lease given back wakes. A tokio semaphore does the same with a lock on
//! every release, which a call that never waits would pay for nothing. The per-route bound,
//! set only below the total, is a semaphore per route.

use std::collections::HashMap;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use crate::stats::Stats;

/// The client's leases: a count for every route, and a semaphore per route (`http` and
/// `https` apart, by the URL's authority) when `maxConnectionsPerRoute` is below
/// `maxConnections`.
pub(crate) struct Leases {
    max: i64,
    /// Calls waiting for a lease given back.
    given_back: Notify,
    waiting: AtomicUsize,
    routes: [RwLock<HashMap<String, Arc<Semaphore>>>; 2],
    /// `None`: a route may use every connection, so only the total is counted.
    per_route: Option<usize>,
    wait: Duration,
    stats: Arc<Stats>,
}

/// A call's right to a connection; given back when dropped.
pub(crate) struct Lease {
    leases: Arc<Leases>,
    _route: Option<OwnedSemaphorePermit>,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let leases = &self.leases;
        leases.stats.leased.fetch_sub(1, Ordering::AcqRel);
        if leases.waiting.load(Ordering::Acquire) > 0 {
            leases.given_back.notify_one();
        }
    }
}

/// Counts a call waiting for a lease given back, until it has one or gives up.
struct Waiting<'a>(&'a Leases);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiting.fetch_sub(1, Ordering::AcqRel);
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
            max: i64::from(total),
            given_back: Notify::new(),
            waiting: AtomicUsize::new(0),
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

    /// Takes one of the total's leases if one is free.
    fn take(&self) -> bool {
        let leased = &self.stats.leased;
        let mut n = leased.load(Ordering::Acquire);
        while n < self.max {
            match leased.compare_exchange_weak(n, n + 1, Ordering::AcqRel, Ordering::Acquire) {
                Ok(_) => return true,
                Err(now) => n = now,
            }
        }
        false
    }

    /// One of the total's leases, waiting for one given back when none is free.
    async fn take_or_wait(&self) {
        if self.take() {
            return;
        }
        self.waiting.fetch_add(1, Ordering::AcqRel);
        let _waiting = Waiting(self);
        loop {
            // Registered before the check, so that a lease given back in between wakes it.
            let mut given_back = pin!(self.given_back.notified());
            given_back.as_mut().enable();
            if self.take() {
                return;
            }
            given_back.await;
        }
    }

    /// A lease for a call to `authority` over `https` or not, at once when one is free, else
    /// within `connectionRequestTimeout` (`None`: it ran out).
    pub(crate) async fn lease(self: &Arc<Self>, https: bool, authority: &str) -> Option<Lease> {
        // One wait in all, for the route's lease and the total's: set when a wait begins.
        let mut deadline = None;
        let mut until = || *deadline.get_or_insert_with(|| tokio::time::Instant::now() + self.wait);
        let route = match self.per_route {
            None => None,
            Some(per_route) => {
                let semaphore = self.route(https, authority, per_route);
                match semaphore.clone().try_acquire_owned() {
                    Ok(permit) => Some(permit),
                    Err(_) => {
                        self.stats.pending.fetch_add(1, Ordering::Relaxed);
                        let _pending = Pending(&self.stats);
                        let permit = tokio::time::timeout_at(until(), semaphore.acquire_owned());
                        Some(permit.await.ok()?.ok()?)
                    }
                }
            }
        };
        if !self.take() {
            self.stats.pending.fetch_add(1, Ordering::Relaxed);
            let _pending = Pending(&self.stats);
            tokio::time::timeout_at(until(), self.take_or_wait())
                .await
                .ok()?;
        }
        Some(Lease {
            leases: self.clone(),
            _route: route,
        })
    }
}
