//! [`Ewma`]: the exponentially weighted moving average behind a meter's 1/5/15-minute rates.
//!
//! The arithmetic is DropWizard's `EWMA` to the operation, so the figures match its own tests:
//! the average is ticked every 5 seconds; a tick turns the events counted since the previous one
//! into an instant rate (events per nanosecond), and moves the average towards it by
//! `alpha = 1 - exp(-5 s / 60 s / minutes)`; the first tick sets the average to the instant rate.
//! These are the UNIX load average's constants.

use std::time::Duration;

/// How often an [`Ewma`] expects to be ticked.
pub const TICK_INTERVAL: Duration = Duration::from_secs(5);

const INTERVAL_SECS: f64 = 5.0;
const SECONDS_PER_MINUTE: f64 = 60.0;
/// [`TICK_INTERVAL`] in nanoseconds, as DropWizard keeps it (a double).
const INTERVAL_NANOS: f64 = 5_000_000_000.0;
const NANOS_PER_SECOND: f64 = 1_000_000_000.0;

/// An exponentially weighted moving average of an event rate, ticked every
/// [`TICK_INTERVAL`].
///
/// Not synchronized: a [`Meter`](crate::Meter) keeps its three behind one lock that only ticks
/// and reads take, never marks.
#[derive(Debug, Clone)]
pub struct Ewma {
    alpha: f64,
    /// Events per nanosecond.
    rate: f64,
    initialized: bool,
    uncounted: u64,
}

impl Ewma {
    /// An average over `minutes` minutes: `alpha = 1 - exp(-5/60/minutes)`.
    pub fn over_minutes(minutes: f64) -> Self {
        Self::with_alpha(1.0 - (-INTERVAL_SECS / SECONDS_PER_MINUTE / minutes).exp())
    }

    /// Like the UNIX one-minute load average.
    pub fn one_minute() -> Self {
        Self::over_minutes(1.0)
    }

    /// Like the UNIX five-minute load average.
    pub fn five_minutes() -> Self {
        Self::over_minutes(5.0)
    }

    /// Like the UNIX fifteen-minute load average.
    pub fn fifteen_minutes() -> Self {
        Self::over_minutes(15.0)
    }

    /// An average with smoothing constant `alpha`, ticked every [`TICK_INTERVAL`].
    pub fn with_alpha(alpha: f64) -> Self {
        Self {
            alpha,
            rate: 0.0,
            initialized: false,
            uncounted: 0,
        }
    }

    /// The smoothing constant.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// Counts `n` events into the current interval.
    pub fn update(&mut self, n: u64) {
        self.uncounted = self.uncounted.saturating_add(n);
    }

    /// Ends the current interval: folds the events counted since the last tick into the average.
    pub fn tick(&mut self) {
        let count = std::mem::take(&mut self.uncounted);
        let instant_rate = count as f64 / INTERVAL_NANOS;
        if self.initialized {
            self.rate += self.alpha * (instant_rate - self.rate);
        } else {
            self.rate = instant_rate;
            self.initialized = true;
        }
    }

    /// The average, in events per second.
    pub fn rate_per_second(&self) -> f64 {
        self.rate * NANOS_PER_SECOND
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alphas_are_dropwizards() {
        // DropWizard's M1_ALPHA, M5_ALPHA, M15_ALPHA: 1 - exp(-5 / 60.0 / minutes).
        assert!((Ewma::one_minute().alpha() - 0.079_955_585_370_676_71).abs() < 1e-17);
        assert!((Ewma::five_minutes().alpha() - 0.016_528_546_178_382_51).abs() < 1e-17);
        assert!((Ewma::fifteen_minutes().alpha() - 0.005_540_151_995_103_271).abs() < 1e-17);
    }

    #[test]
    fn first_tick_sets_the_instant_rate() {
        let mut e = Ewma::fifteen_minutes();
        e.update(10);
        e.tick();
        assert!((e.rate_per_second() - 2.0).abs() < 1e-12);
    }

    #[test]
    fn a_tick_without_events_still_decays() {
        let mut e = Ewma::one_minute();
        e.update(5);
        e.tick();
        let before = e.rate_per_second();
        e.tick();
        assert!((e.rate_per_second() - before * (1.0 - e.alpha())).abs() < 1e-12);
    }
}
