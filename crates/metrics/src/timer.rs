//! [`Timer`]: how long something takes and how often it happens (DropWizard's `Timer`): a
//! histogram of durations and a meter of calls.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::clock::Clock;
use crate::histogram::Histogram;
use crate::meter::Meter;
use crate::snapshot::Snapshot;

const NANOS_PER_SECOND: f64 = 1e9;

/// A meter of calls plus a histogram of their durations, kept in nanoseconds.
///
/// A cheap handle: clones share one timer. Hot path ([`update`](Timer::update)): the
/// histogram's update plus the meter's atomic add.
#[derive(Debug, Clone)]
pub struct Timer {
    meter: Meter,
    histogram: Histogram,
}

impl Default for Timer {
    fn default() -> Self {
        Self::new()
    }
}

impl Timer {
    /// A timer on the system clock.
    pub fn new() -> Self {
        Self {
            meter: Meter::new(),
            histogram: Histogram::new(),
        }
    }

    /// A timer that reads `clock` to time calls, tick its rates and weight its samples.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self {
            meter: Meter::with_clock(clock.clone()),
            histogram: Histogram::with_clock(clock),
        }
    }

    /// Records one call that took `duration` (saturating at about 292 years).
    #[inline]
    pub fn update(&self, duration: Duration) {
        self.update_at(self.clock().now(), duration);
    }

    /// Records a call that took `duration` and ended at `now` (a reading of this timer's
    /// clock the caller already has, as a server does when it times a request): saves the
    /// clock read of [`update`](Self::update).
    #[inline]
    pub fn update_at(&self, now: Instant, duration: Duration) {
        let nanos = i64::try_from(duration.as_nanos()).unwrap_or(i64::MAX);
        // Counted once, by the meter: the histogram's count would be the same number.
        self.histogram.sample_at(now, nanos);
        self.meter.mark();
    }

    /// Runs `f` and records how long it took, even if it panics (DropWizard's `time` records
    /// in a `finally`).
    pub fn time<R>(&self, f: impl FnOnce() -> R) -> R {
        let _context = self.start();
        f()
    }

    /// Starts timing a call; the returned guard records it when dropped or
    /// [`stop`](TimerContext::stop)ped.
    pub fn start(&self) -> TimerContext {
        TimerContext {
            timer: self.clone(),
            started: self.clock().now(),
            recorded: false,
        }
    }

    /// How many calls were recorded.
    pub fn count(&self) -> u64 {
        self.meter.count()
    }

    /// Calls per second since the timer was made.
    pub fn mean_rate(&self) -> f64 {
        self.meter.mean_rate()
    }

    /// The one-minute moving average of calls per second.
    pub fn one_minute_rate(&self) -> f64 {
        self.meter.one_minute_rate()
    }

    /// The five-minute moving average of calls per second.
    pub fn five_minute_rate(&self) -> f64 {
        self.meter.five_minute_rate()
    }

    /// The fifteen-minute moving average of calls per second.
    pub fn fifteen_minute_rate(&self) -> f64 {
        self.meter.fifteen_minute_rate()
    }

    /// The distribution of durations, in nanoseconds.
    pub fn snapshot(&self) -> Snapshot {
        self.histogram.snapshot_counted(self.count())
    }

    /// The total time of every call recorded.
    pub fn sum(&self) -> Duration {
        // Durations are never negative, so neither is their sum.
        Duration::try_from_secs_f64(self.histogram.raw_sum() / NANOS_PER_SECOND)
            .unwrap_or(Duration::ZERO)
    }

    fn clock(&self) -> &Arc<dyn Clock> {
        self.meter.clock()
    }
}

/// A call being timed; records its duration into the timer when dropped.
#[derive(Debug)]
#[must_use = "the call is recorded when this guard is dropped; dropping it at once records ~0"]
pub struct TimerContext {
    timer: Timer,
    started: Instant,
    recorded: bool,
}

impl TimerContext {
    /// Records the call now and returns its duration.
    pub fn stop(mut self) -> Duration {
        self.record()
    }

    fn record(&mut self) -> Duration {
        let elapsed = self
            .timer
            .clock()
            .now()
            .saturating_duration_since(self.started);
        if !self.recorded {
            self.recorded = true;
            self.timer.update(elapsed);
        }
        elapsed
    }
}

impl Drop for TimerContext {
    fn drop(&mut self) {
        if !self.recorded {
            self.record();
        }
    }
}
