//! [`Histogram`]: the distribution of values over DropWizard's default reservoir, the
//! exponentially decaying one.
//!
//! The reservoir is DropWizard's `ExponentiallyDecayingReservoir` (forward decay, Cormode et
//! al. 2009): 1028 samples, each kept with weight `exp(0.015 * seconds since the landmark)`
//! and priority `weight / uniform(0, 1]`; the lowest priority is evicted; weights and
//! priorities are rescaled to a new landmark every hour so they never overflow. 1028 samples
//! give 99.9% confidence of a 5% margin of error, and alpha 0.015 makes the last five minutes
//! dominate. [`Snapshot`] then does DropWizard's weighted arithmetic.
//!
//! Written here rather than taken from the `exponential-decay-histogram` crate: a server
//! updates two of these on every request from every worker, and that crate takes its one
//! mutex on every update, a lock every worker contends for (BENCHMARKS.md, "Metrics"). Once
//! the reservoir is full, a new sample enters only if its priority beats the lowest one,
//! which a steady stream's samples rarely do (about 1028 in the ~1/alpha seconds of samples
//! that weigh anything). So an update computes its priority first, compares it with the
//! lowest (kept in an atomic, read under a seqlock against the hourly rescale), and takes
//! the lock only when it would enter. Count and sum are per-thread adders. The samples kept
//! are exactly those the locked algorithm would keep.

use std::cell::Cell;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use crate::adder::{Adder, FloatSum};
use crate::clock::{self, Clock};
use crate::snapshot::Snapshot;

/// DropWizard's default reservoir size.
pub const RESERVOIR_SIZE: usize = 1028;
/// DropWizard's default decay factor.
pub const RESERVOIR_ALPHA: f64 = 0.015;
/// How often weights move to a new landmark.
const RESCALE_EVERY: Duration = Duration::from_secs(3600);

/// The distribution of a stream of values (sizes, queue depths, ...): its count and sum over
/// all time, and min, max, mean, standard deviation and quantiles over a decaying sample that
/// favours the last five minutes.
///
/// A cheap handle: clones share one histogram. Hot path ([`update`](Histogram::update)): two
/// per-thread adds, a random number, one `exp`, and a comparison with the reservoir's lowest
/// priority; the reservoir's lock only when the sample wins a place.
#[derive(Debug, Clone)]
pub struct Histogram {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    count: Adder,
    sum: FloatSum,
    reservoir: Mutex<Reservoir>,
    /// What an update reads before deciding to lock: even while a rescale writes them.
    seq: AtomicU64,
    /// The landmark, in whole seconds after `epoch`.
    landmark: AtomicU64,
    /// The next rescale, in nanoseconds after `epoch`.
    next_rescale: AtomicU64,
    /// The lowest priority kept, as f64 bits; 0 while the reservoir has room.
    lowest: AtomicU64,
    epoch: Instant,
    clock: Arc<dyn Clock>,
    /// Values are stored as `round(value * divisor)` (1 for integer histograms).
    divisor: f64,
}

/// The samples: priority (as f64 bits: priorities are positive, and so order as their bits
/// do) to value and weight.
#[derive(Debug, Default)]
struct Reservoir {
    samples: BTreeMap<u64, (i64, f64)>,
    /// The landmark weights are relative to (whole seconds after `epoch`), and the next
    /// rescale (nanoseconds after `epoch`).
    landmark: u64,
    next_rescale: u64,
}

const NANOS: u64 = 1_000_000_000;

/// When `t` is, after `epoch`: in nanoseconds, and in whole seconds (saturating). Both from
/// the duration's own parts: no division.
fn since(epoch: Instant, t: Instant) -> (u64, u64) {
    let d = t.saturating_duration_since(epoch);
    let second = d.as_secs();
    let at = second
        .saturating_mul(NANOS)
        .saturating_add(u64::from(d.subsec_nanos()));
    (at, second)
}

/// The weight of a sample in `second` for a landmark at `landmark` (both whole seconds after
/// the epoch): in whole seconds, as DropWizard counts them (so samples of one second weigh
/// the same).
///
/// Asked on every update, so kept cheap: seconds as the clock reading gives them (landmarks
/// fall on whole seconds, so no division is needed), and `exp` remembered per thread for the
/// last few seconds asked (a weight changes once a second, and a server updating two timers a
/// request would otherwise pay two `exp`s a request).
fn weight(second: u64, landmark: u64) -> f64 {
    // A sample timed just before a landmark another thread moved counts -1.
    let seconds = second.wrapping_sub(landmark) as i64;
    thread_local! {
        static WEIGHTS: [Cell<(i64, f64)>; 4] = const { [const { Cell::new((i64::MIN, 0.0)) }; 4] };
    }
    WEIGHTS.with(|cache| {
        let entry = &cache[(seconds as usize) % cache.len()];
        match entry.get() {
            (s, w) if s == seconds => w,
            _ => {
                let w = (RESERVOIR_ALPHA * seconds as f64).exp();
                entry.set((seconds, w));
                w
            }
        }
    })
}

/// A uniform number in (0, 1] (a priority divides by it): fastrand's per-thread generator,
/// no lock shared between threads.
fn uniform() -> f64 {
    1.0 - fastrand::f64()
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
        let epoch = clock.now();
        let next = u64::try_from(RESCALE_EVERY.as_nanos()).unwrap_or(u64::MAX);
        Self {
            inner: Arc::new(Inner {
                count: Adder::new(),
                sum: FloatSum::default(),
                reservoir: Mutex::new(Reservoir {
                    samples: BTreeMap::new(),
                    landmark: 0,
                    next_rescale: next,
                }),
                seq: AtomicU64::new(0),
                landmark: AtomicU64::new(0),
                next_rescale: AtomicU64::new(next),
                lowest: AtomicU64::new(0),
                epoch,
                clock,
                divisor,
            }),
        }
    }

    /// Records a value.
    #[inline]
    pub fn update(&self, value: i64) {
        self.update_at(self.inner.clock.now(), value);
    }

    /// Records a value at `now`, a reading of this histogram's clock the caller has already
    /// taken (a server that just measured a request's duration): one clock read saved.
    #[inline]
    pub fn update_at(&self, now: Instant, value: i64) {
        self.inner.count.add(1);
        self.sample_at(now, value);
    }

    /// [`update_at`](Self::update_at) without the count: for a timer, whose meter counts the
    /// same calls (one atomic addition a call saved; [`snapshot_counted`](Self::snapshot_counted)
    /// takes the meter's count).
    #[inline]
    pub(crate) fn sample_at(&self, now: Instant, value: i64) {
        let inner = &*self.inner;
        inner.sum.add(value as f64);
        let (at, second) = since(inner.epoch, now);
        let u = uniform();
        if inner.loses(at, second, u) {
            return;
        }
        inner.reservoir().insert(inner, at, second, u, value);
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
        u64::try_from(self.inner.count.sum()).unwrap_or(0)
    }

    /// The sum of every value recorded, in the units recorded.
    pub fn sum(&self) -> f64 {
        self.inner.sum.sum() / self.inner.divisor
    }

    /// The sum of the stored integers (nanoseconds, for a timer).
    pub(crate) fn raw_sum(&self) -> f64 {
        self.inner.sum.sum()
    }

    /// The distribution now. Samples of equal value are merged (their weights added), which
    /// changes no statistic; [`Snapshot::size`] therefore counts distinct values.
    pub fn snapshot(&self) -> Snapshot {
        self.snapshot_counted(self.count())
    }

    /// [`snapshot`](Self::snapshot) with a count kept elsewhere (see
    /// [`sample_at`](Self::sample_at)).
    pub(crate) fn snapshot_counted(&self, count: u64) -> Snapshot {
        let samples: Vec<(i64, f64)> = {
            let reservoir = self.inner.reservoir();
            let mut by_value: BTreeMap<i64, f64> = BTreeMap::new();
            for &(value, weight) in reservoir.samples.values() {
                *by_value.entry(value).or_default() += weight;
            }
            by_value.into_iter().collect()
        };
        Snapshot::from_weighted(samples)
            .with_count(count)
            .with_divisor(self.inner.divisor)
    }

    /// How many samples the reservoir holds now (at most [`RESERVOIR_SIZE`]).
    pub fn reservoir_len(&self) -> usize {
        self.inner.reservoir().samples.len()
    }
}

impl Inner {
    fn reservoir(&self) -> MutexGuard<'_, Reservoir> {
        // A panic inside leaves a consistent map behind (its updates are single insert and
        // remove calls); keep recording rather than poisoning every later caller.
        self.reservoir
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether a sample at `at` (in `second`) drawn `u` certainly does not enter, decided
    /// without the lock.
    #[inline]
    fn loses(&self, at: u64, second: u64, u: f64) -> bool {
        let before = self.seq.load(Ordering::Acquire);
        if before % 2 == 1 {
            return false;
        }
        let landmark = self.landmark.load(Ordering::Relaxed);
        let next_rescale = self.next_rescale.load(Ordering::Relaxed);
        let lowest = f64::from_bits(self.lowest.load(Ordering::Relaxed));
        std::sync::atomic::fence(Ordering::Acquire);
        if self.seq.load(Ordering::Relaxed) != before || at >= next_rescale || lowest == 0.0 {
            return false;
        }
        // `lowest` only rises between rescales, so a stale one never turns away a winner.
        weight(second, landmark) / u <= lowest
    }
}

impl Reservoir {
    fn insert(&mut self, inner: &Inner, at: u64, second: u64, u: f64, value: i64) {
        if at >= self.next_rescale {
            self.rescale(inner, second);
        }
        let w = weight(second, self.landmark);
        let priority = w / u;
        // Zero (an underflowed weight) or NaN: nothing to keep.
        if priority.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return;
        }
        let key = priority.to_bits();
        if self.samples.len() < RESERVOIR_SIZE {
            self.samples.entry(key).or_insert((value, w));
        } else if let Some((&lowest, _)) = self.samples.first_key_value()
            && lowest < key
            && !self.samples.contains_key(&key)
        {
            self.samples.insert(key, (value, w));
            self.samples.remove(&lowest);
        }
        if self.samples.len() >= RESERVOIR_SIZE
            && let Some((&lowest, _)) = self.samples.first_key_value()
        {
            inner.lowest.store(lowest, Ordering::Relaxed);
        }
    }

    /// Moves the landmark to `second`, scaling every weight and priority by the same factor
    /// (DropWizard's `rescale`), and publishes it under the seqlock.
    fn rescale(&mut self, inner: &Inner, second: u64) {
        // On a whole second after the epoch (as the first landmark is), so that weights counted
        // in whole seconds from the new landmark are the old ones times `factor` exactly.
        let factor = weight(self.landmark, second);
        let old = std::mem::take(&mut self.samples);
        for (key, (value, w)) in old {
            let priority = f64::from_bits(key) * factor;
            if priority > 0.0 {
                self.samples
                    .entry(priority.to_bits())
                    .or_insert((value, w * factor));
            }
        }
        self.landmark = second;
        self.next_rescale = second
            .saturating_mul(NANOS)
            .saturating_add(u64::try_from(RESCALE_EVERY.as_nanos()).unwrap_or(u64::MAX));
        // A seqlock's writer: odd, then a release fence, so that a reader whose acquire fence
        // follows a load of any store below also sees the odd count.
        inner.seq.fetch_add(1, Ordering::Relaxed);
        std::sync::atomic::fence(Ordering::Release);
        inner.landmark.store(self.landmark, Ordering::Relaxed);
        inner
            .next_rescale
            .store(self.next_rescale, Ordering::Relaxed);
        let lowest = match self.samples.first_key_value() {
            Some((&k, _)) if self.samples.len() >= RESERVOIR_SIZE => k,
            _ => 0,
        };
        inner.lowest.store(lowest, Ordering::Relaxed);
        inner.seq.fetch_add(1, Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The check done without the lock turns away only samples the locked algorithm would
    /// turn away too: fed the same samples, both reservoirs keep the same ones, across a
    /// rescale.
    /// Feeds `n` samples `gap` nanoseconds apart to a reservoir that takes each under the
    /// lock and to one that checks first; returns how many the second one locked for.
    fn compare(n: u64, gap: u64) -> u64 {
        let reference = Histogram::new();
        let filtered = Histogram::new();
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let mut taken = 0;
        for i in 0..n {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let u = ((x >> 11) + 1) as f64 / (1u64 << 53) as f64;
            let (at, value) = (i * gap, (x % 1000) as i64);
            reference
                .inner
                .reservoir()
                .insert(&reference.inner, at, at / NANOS, u, value);
            if !filtered.inner.loses(at, at / NANOS, u) {
                taken += 1;
                filtered
                    .inner
                    .reservoir()
                    .insert(&filtered.inner, at, at / NANOS, u, value);
            }
        }
        assert_eq!(
            reference.inner.reservoir().samples,
            filtered.inner.reservoir().samples
        );
        assert_eq!(filtered.reservoir_len(), RESERVOIR_SIZE);
        taken
    }

    #[test]
    fn weights_count_whole_seconds_from_the_landmark() {
        let s = 1_000_000_000u64;
        let reference = |at: u64, landmark: u64| {
            let seconds = (i128::from(at) - i128::from(landmark)).div_euclid(i128::from(s));
            (RESERVOIR_ALPHA * seconds as f64).exp()
        };
        for (at, landmark) in [
            (0, 0),
            (s - 1, 0),
            (s, 0),
            (3600 * s + 7, 5 * s),
            (5 * s - 1, 5 * s),
            (0, 5 * s),
            (4 * s, 5 * s),
            (4 * s + 1, 5 * s),
        ] {
            // Twice: computed, then remembered. (Landmarks fall on whole seconds.)
            assert_eq!(
                weight(at / s, landmark / s),
                reference(at, landmark),
                "{at} {landmark}"
            );
            assert_eq!(
                weight(at / s, landmark / s),
                reference(at, landmark),
                "{at} {landmark}"
            );
        }
    }

    #[test]
    fn the_lock_free_check_keeps_exactly_what_the_lock_would() {
        // Two hours in 200,000 samples: two rescales on the way.
        compare(200_000, 36_000_000);
        // A server's rate, 100,000 a second for 3 s: once the reservoir is full, nearly no
        // sample takes the lock, which is the point of the check.
        let taken = compare(300_000, 10_000);
        assert!(taken < 15_000, "{taken} of 300000 took the lock");
    }
}
