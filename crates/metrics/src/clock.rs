//! Where metrics read the time: the monotonic system clock, or a hand-moved one.
//!
//! DropWizard passes a `Clock` to meters, timers and reservoirs so that rates and decay can be
//! tested without sleeping; [`ManualClock`] is that clock here. It is a real clock whose time
//! moves only when told to, not a stand-in: a meter or reservoir built on it computes exactly
//! what it would compute had that much wall time passed.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A source of monotonic time.
///
/// Read on the paths that need time (ticking a meter, reading a rate, recording into a decaying
/// reservoir, timing a call), never on `Counter::inc` or `Meter::mark`.
pub trait Clock: Send + Sync + fmt::Debug {
    /// The current instant; never earlier than an instant this clock returned before.
    fn now(&self) -> Instant;
}

/// The process's monotonic clock ([`Instant::now`]).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Instant {
        Instant::now()
    }
}

/// The clock every metric uses unless given another.
pub(crate) fn system() -> Arc<dyn Clock> {
    Arc::new(SystemClock)
}

/// A clock that stands still until [`advance`](ManualClock::advance)d.
///
/// For tests of rates and decay (DropWizard's tests use the same device): build the metric
/// with `with_clock(clock.clone())`, record, advance, read.
#[derive(Debug, Clone)]
pub struct ManualClock {
    origin: Instant,
    offset_nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock reading "now" until advanced.
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
            offset_nanos: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Moves the clock forward by `by` (saturating at about 584 years).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        // `fetch_update` cannot fail with a closure that always returns `Some`.
        let _ = self
            .offset_nanos
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |now| {
                Some(now.saturating_add(by))
            });
    }

    /// How far the clock has been advanced since it was made.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.offset_nanos.load(Ordering::Acquire))
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Instant {
        // `Instant` cannot overflow in practice for offsets of centuries; if it ever would,
        // stay at the origin rather than panic.
        self.origin
            .checked_add(self.elapsed())
            .unwrap_or(self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_only_when_advanced() {
        let clock = ManualClock::new();
        let t0 = clock.now();
        assert_eq!(clock.now(), t0);
        clock.advance(Duration::from_secs(5));
        assert_eq!(clock.now() - t0, Duration::from_secs(5));
        let shared = clock.clone();
        shared.advance(Duration::from_millis(1));
        assert_eq!(clock.elapsed(), Duration::from_millis(5001));
    }
}
