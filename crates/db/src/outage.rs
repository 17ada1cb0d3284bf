//! The log of a database that cannot be reached: at most one line a second, with the calls
//! that failed since the last, and one line once calls have succeeded for a second again.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often a failing database is logged at most, and how long calls must succeed before it
/// is said to be back.
const EVERY: Duration = Duration::from_secs(1);

pub(crate) struct Outage {
    /// Set while the database is down: the one thing a call that succeeds reads, when it is
    /// not.
    down: AtomicBool,
    /// Calls failed since the last line.
    failed: AtomicU64,
    /// When the last call failed, in milliseconds after `origin`.
    last_failure: AtomicU64,
    origin: Instant,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    since: Option<Instant>,
    last_line: Option<Instant>,
    total: u64,
}

impl Default for Outage {
    fn default() -> Self {
        Outage {
            down: AtomicBool::new(false),
            failed: AtomicU64::new(0),
            last_failure: AtomicU64::new(0),
            origin: Instant::now(),
            state: Mutex::default(),
        }
    }
}

impl Outage {
    fn millis(&self, at: Instant) -> u64 {
        at.duration_since(self.origin).as_millis() as u64
    }

    /// A call to `database` failed for `reason`.
    pub(crate) fn failed(&self, database: &str, reason: &str) {
        let now = Instant::now();
        // Under the lock, so that a recovery decided at the same time sees this failure.
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        self.failed.fetch_add(1, Ordering::Relaxed);
        self.last_failure.store(self.millis(now), Ordering::Relaxed);
        self.down.store(true, Ordering::Relaxed);
        let since = *state.since.get_or_insert(now);
        if state
            .last_line
            .is_some_and(|t| now.duration_since(t) < EVERY)
        {
            return;
        }
        state.last_line = Some(now);
        let failed = self.failed.swap(0, Ordering::Relaxed);
        state.total += failed;
        tracing::error!(
            target: "ferrowizard::db",
            database,
            failed,
            down_for_ms = now.duration_since(since).as_millis() as u64,
            "database {database} is unavailable ({failed} calls failed since the last line): {reason}"
        );
    }

    /// A call succeeded: once calls have succeeded for a second after the last failure, logs
    /// the recovery.
    #[inline]
    pub(crate) fn succeeded(&self, database: &str) {
        if self.down.load(Ordering::Relaxed) {
            self.maybe_recovered(database);
        }
    }

    #[cold]
    fn maybe_recovered(&self, database: &str) {
        let now = Instant::now();
        let last = self.last_failure.load(Ordering::Relaxed);
        if self.millis(now).saturating_sub(last) < EVERY.as_millis() as u64 {
            return;
        }
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        // Again under the lock: a failure may have come since the look above.
        let last = self.last_failure.load(Ordering::Relaxed);
        if self.millis(now).saturating_sub(last) < EVERY.as_millis() as u64
            || !self.down.swap(false, Ordering::Relaxed)
        {
            return;
        }
        let total = state.total + self.failed.swap(0, Ordering::Relaxed);
        let down_for = state
            .since
            .map_or(Duration::ZERO, |t| now.duration_since(t));
        state.since = None;
        state.total = 0;
        state.last_line = Some(now);
        tracing::info!(
            target: "ferrowizard::db",
            database,
            failed = total,
            down_for_ms = down_for.as_millis() as u64,
            "database {database} is available again after {:.1}s ({total} calls failed)",
            down_for.as_secs_f64()
        );
    }
}
