//! [`Meter`]: an event count with mean and 1/5/15-minute moving-average rates (DropWizard's
//! `Meter`).
//!
//! # Why marking never reads the clock
//!
//! DropWizard's `Meter.mark` calls `tickIfNecessary` (a clock read and a compare) before
//! counting. Here `mark` is one relaxed atomic add and nothing else: the moving averages are
//! ticked by whoever needs them current, and by a background thread.
//!
//! - **Readers** (`one_minute_rate` and friends) call `tick_if_necessary` first, exactly as
//!   DropWizard's getters do: every 5-second interval that ended since the last tick is ticked,
//!   the first with the events counted since then and the rest with none.
//! - **The ticker** (`ticker.rs`) wakes every second and does the same for every live meter on
//!   the system clock, so a meter nobody reads for a minute still has its events folded into
//!   the interval they happened in (give or take the ticker's one second), not lumped into one
//!   tick when somebody finally reads it.
//!
//! The events of an interval are the difference between the count now and the count at the
//! previous tick, so the hot path touches one atomic, not four (DropWizard keeps a separate
//! `LongAdder` per average).

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use crate::adder::Adder;
use crate::clock::{self, Clock};
use crate::ewma::{Ewma, TICK_INTERVAL};
use crate::ticker;

/// A count of events with their rates, in events per second: the mean since the meter was
/// made, and moving averages over 1, 5 and 15 minutes.
///
/// A cheap handle: clones share one meter. Hot path ([`mark`](Meter::mark)): one relaxed
/// atomic add.
#[derive(Debug, Clone)]
pub struct Meter {
    core: Arc<MeterCore>,
}

/// The shared state of a meter; the ticker holds it weakly.
#[derive(Debug)]
pub(crate) struct MeterCore {
    /// Events marked (an [`Adder`]: marked from every worker thread).
    count: Adder,
    start: Instant,
    clock: Arc<dyn Clock>,
    averages: Mutex<Averages>,
}

/// Everything a tick changes, behind one lock that marks never take.
#[derive(Debug)]
struct Averages {
    /// Start of the current 5-second interval.
    last_tick: Instant,
    /// `count` as of the last tick: what the current interval's events are counted from.
    counted: u64,
    m1: Ewma,
    m5: Ewma,
    m15: Ewma,
}

impl Default for Meter {
    fn default() -> Self {
        Self::new()
    }
}

impl Meter {
    /// A meter on the system clock, ticked in the background.
    pub fn new() -> Self {
        let meter = Self::build(clock::system());
        let core: Arc<dyn ticker::Tick> = meter.core.clone();
        ticker::register(&core);
        meter
    }

    /// A meter on `clock`, ticked only when its rates are read.
    ///
    /// The background ticker follows wall time, so it is not used here: with a
    /// [`ManualClock`](crate::ManualClock) the test decides when time passes and when the rates
    /// are read, and gets DropWizard's figures deterministically.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self::build(clock)
    }

    fn build(clock: Arc<dyn Clock>) -> Self {
        let start = clock.now();
        Self {
            core: Arc::new(MeterCore {
                count: Adder::new(),
                start,
                clock,
                averages: Mutex::new(Averages {
                    last_tick: start,
                    counted: 0,
                    m1: Ewma::one_minute(),
                    m5: Ewma::five_minutes(),
                    m15: Ewma::fifteen_minutes(),
                }),
            }),
        }
    }

    /// Records one event.
    #[inline]
    pub fn mark(&self) {
        self.mark_n(1);
    }

    /// Records `n` events.
    #[inline]
    pub fn mark_n(&self, n: u64) {
        self.core.count.add(i64::try_from(n).unwrap_or(i64::MAX));
    }

    /// How many events were recorded.
    pub fn count(&self) -> u64 {
        u64::try_from(self.core.count.sum()).unwrap_or(0)
    }

    /// Events per second since the meter was made (0 before any time has passed).
    pub fn mean_rate(&self) -> f64 {
        let count = self.count();
        if count == 0 {
            return 0.0;
        }
        let elapsed = self
            .core
            .clock
            .now()
            .saturating_duration_since(self.core.start);
        if elapsed.is_zero() {
            0.0
        } else {
            count as f64 / elapsed.as_secs_f64()
        }
    }

    /// The one-minute moving average, in events per second.
    pub fn one_minute_rate(&self) -> f64 {
        self.core.read(|a| a.m1.rate_per_second())
    }

    /// The five-minute moving average, in events per second.
    pub fn five_minute_rate(&self) -> f64 {
        self.core.read(|a| a.m5.rate_per_second())
    }

    /// The fifteen-minute moving average, in events per second.
    pub fn fifteen_minute_rate(&self) -> f64 {
        self.core.read(|a| a.m15.rate_per_second())
    }

    /// The clock this meter reads (a timer times calls with it too).
    pub(crate) fn clock(&self) -> &Arc<dyn Clock> {
        &self.core.clock
    }
}

impl MeterCore {
    fn averages(&self) -> MutexGuard<'_, Averages> {
        // Nothing panics while holding this lock; if something ever did, the averages are
        // still numbers, so carry on with them.
        self.averages.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn read(&self, f: impl FnOnce(&Averages) -> f64) -> f64 {
        f(&self.ticked())
    }

    /// Ticks every 5-second interval that ended since the last tick (DropWizard's
    /// `tickIfNecessary`).
    pub(crate) fn tick_if_necessary(&self) {
        drop(self.ticked());
    }

    /// The averages, brought up to date.
    fn ticked(&self) -> MutexGuard<'_, Averages> {
        let now = self.clock.now();
        let mut averages = self.averages();
        averages.tick_if_necessary(now, u64::try_from(self.count.sum()).unwrap_or(0));
        averages
    }
}

impl ticker::Tick for MeterCore {
    fn tick_if_necessary(&self) {
        MeterCore::tick_if_necessary(self);
    }
}

impl Averages {
    fn tick_if_necessary(&mut self, now: Instant, count: u64) {
        let age = now.saturating_duration_since(self.last_tick);
        if age <= TICK_INTERVAL {
            return;
        }
        let interval = TICK_INTERVAL.as_nanos();
        let age_nanos = age.as_nanos();
        let required = age_nanos / interval;
        // The new interval starts at the last boundary before `now`, as DropWizard's
        // `newIntervalStartTick = newTick - age % TICK_INTERVAL`.
        let into_interval = u64::try_from(age_nanos % interval).unwrap_or(0);
        self.last_tick = now - std::time::Duration::from_nanos(into_interval);

        let events = count.wrapping_sub(self.counted);
        self.counted = count;
        self.m1.update(events);
        self.m5.update(events);
        self.m15.update(events);
        // The first tick takes the events; the others are empty intervals.
        self.tick_all();
        for _ in 1..required {
            let before = self.rates();
            self.tick_all();
            // Empty ticks only decay, and after a long idle spell the averages reach a fixed
            // point (zero, or the smallest subnormal) that further empty ticks cannot change:
            // stop there instead of looping once per 5 seconds of idleness.
            if self.rates() == before {
                break;
            }
        }
    }

    fn tick_all(&mut self) {
        self.m1.tick();
        self.m5.tick();
        self.m15.tick();
    }

    fn rates(&self) -> [f64; 3] {
        [
            self.m1.rate_per_second(),
            self.m5.rate_per_second(),
            self.m15.rate_per_second(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::ManualClock;

    #[test]
    fn idle_for_a_year_ticks_quickly_and_decays_to_nothing() {
        let clock = ManualClock::new();
        let meter = Meter::with_clock(Arc::new(clock.clone()));
        meter.mark_n(1000);
        clock.advance(Duration::from_secs(6));
        assert!(meter.one_minute_rate() > 0.0);
        clock.advance(Duration::from_secs(365 * 24 * 3600));
        let started = Instant::now();
        assert!(meter.fifteen_minute_rate() < 1e-300);
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn the_first_tick_after_idleness_is_not_initialized_twice() {
        // An interval with no events still initializes the averages (to zero): a later burst is
        // then averaged in, not taken as the rate.
        let clock = ManualClock::new();
        let meter = Meter::with_clock(Arc::new(clock.clone()));
        clock.advance(Duration::from_secs(6));
        assert_eq!(meter.one_minute_rate(), 0.0);
        meter.mark_n(5);
        clock.advance(Duration::from_secs(5));
        let expected = Ewma::one_minute().alpha() * 1.0; // instant rate 5/5 s = 1/s
        assert!((meter.one_minute_rate() - expected).abs() < 1e-12);
    }
}
