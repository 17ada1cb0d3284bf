//! [`Histogram`]: the distribution of values over DropWizard's default reservoir, the
//! exponentially decaying one.
//!
//! The reservoir is the `exponential-decay-histogram` crate, a port of DropWizard's
//! `ExponentiallyDecayingReservoir` (forward decay, Cormode et al. 2009): 1028 samples, each
//! kept with weight `exp(0.015 * seconds since the last rescale)` and priority
//! `weight / uniform(0, 1)`; the lowest priority is evicted; priorities and weights are rescaled
//! every hour so they never overflow. 1028 samples give 99.9% confidence of a 5% margin of
//! error, and alpha 0.015 makes the last five minutes dominate.
//!
//! The crate's own snapshot picks quantiles by a different rule (the first sample at or above
//! the quantile, where DropWizard takes the last one at or below), so only its samples and
//! weights are taken from it and [`Snapshot`] does DropWizard's arithmetic.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use exponential_decay_histogram::ExponentialDecayHistogram;

use crate::clock::{self, Clock};
use crate::snapshot::Snapshot;

/// DropWizard's default reservoir size.
pub const RESERVOIR_SIZE: usize = 1028;
/// DropWizard's default decay factor.
pub const RESERVOIR_ALPHA: f64 = 0.015;

/// The distribution of a stream of values (sizes, queue depths, ...): its count and sum over
/// all time, and min, max, mean, standard deviation and quantiles over a decaying sample that
/// favours the last five minutes.
///
/// A cheap handle: clones share one histogram. Hot path ([`update`](Histogram::update)): an
/// uncontended lock, a clock read, one `exp` and one random number for the sample's weight and
/// priority and, usually, one comparison against the reservoir's lowest priority (an insertion
/// only when the new sample wins a place).
#[derive(Debug, Clone)]
pub struct Histogram {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    clock: Arc<dyn Clock>,
    /// Values are stored as `round(value * divisor)` (1 for integer histograms).
    divisor: f64,
}

/// Everything an update changes, under one lock: the reservoir needs it anyway, so the count
/// and sum ride along instead of costing two more atomic operations per update.
#[derive(Debug)]
struct State {
    reservoir: ExponentialDecayHistogram,
    count: u64,
    /// Sum of the stored values. 128 bits: a busy service's timer adds up to more than the
    /// 292 years of nanoseconds an `i64` holds within months (1000 calls in flight add 1000 s
    /// every second).
    sum: i128,
}

impl Default for Histogram {
    fn default() -> Self {
        Self::new()
    }
}

impl Histogram {
    /// A histogram on the system clock.
    pub fn new() -> Self {
        Self::build(clock::system(), 1.0)
    }

    /// A histogram whose samples are weighted by `clock`'s time.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        Self::build(clock, 1.0)
    }

    /// A histogram of fractional values stored as integers `round(value * divisor)`: what the
    /// `metrics` facade's `f64` histograms record into (see `facade.rs`).
    pub(crate) fn fixed_point(divisor: f64) -> Self {
        Self::build(clock::system(), divisor)
    }

    fn build(clock: Arc<dyn Clock>, divisor: f64) -> Self {
        let reservoir = ExponentialDecayHistogram::builder()
            .at(clock.now())
            .size(RESERVOIR_SIZE)
            .alpha(RESERVOIR_ALPHA)
            .build();
        Self {
            inner: Arc::new(Inner {
                state: Mutex::new(State {
                    reservoir,
                    count: 0,
                    sum: 0,
                }),
                clock,
                divisor,
            }),
        }
    }

    /// Records a value.
    #[inline]
    pub fn update(&self, value: i64) {
        let inner = &*self.inner;
        let mut state = lock(&inner.state);
        state.count += 1;
        state.sum = state.sum.saturating_add(i128::from(value));
        // Read the clock under the lock so the reservoir sees time move forward only (it may
        // rescale between two updates).
        state.reservoir.update_at(inner.clock.now(), value);
    }

    /// Records a fractional value in this histogram's fixed point (`round(value * divisor)`,
    /// saturating at the `i64` range; NaN is not recorded).
    pub(crate) fn update_f64(&self, value: f64) {
        if value.is_nan() {
            return;
        }
        // `as` saturates, which is what we want for out-of-range values.
        self.update((value * self.inner.divisor).round() as i64);
    }

    /// How many values were recorded.
    pub fn count(&self) -> u64 {
        lock(&self.inner.state).count
    }

    /// The sum of every value recorded, in the units recorded.
    pub fn sum(&self) -> f64 {
        self.raw_sum() as f64 / self.inner.divisor
    }

    /// The sum of the stored integers (nanoseconds, for a timer).
    pub(crate) fn raw_sum(&self) -> i128 {
        lock(&self.inner.state).sum
    }

    /// The distribution now. Samples of equal value are merged (their weights added), which
    /// changes no statistic; [`Snapshot::size`] therefore counts distinct values.
    pub fn snapshot(&self) -> Snapshot {
        let (samples, count): (Vec<(i64, f64)>, u64) = {
            let state = lock(&self.inner.state);
            (state.reservoir.snapshot().values().collect(), state.count)
        };
        Snapshot::from_weighted(samples)
            .with_count(count)
            .with_divisor(self.inner.divisor)
    }

    /// How many samples the reservoir holds now (at most [`RESERVOIR_SIZE`]).
    pub fn reservoir_len(&self) -> usize {
        lock(&self.inner.state)
            .reservoir
            .snapshot()
            .exemplars()
            .count()
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    // A panic inside the reservoir leaves a consistent map behind (its updates are single
    // insert/remove calls); keep recording rather than poisoning every later caller.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}
