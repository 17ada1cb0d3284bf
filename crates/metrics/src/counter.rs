//! [`Counter`]: a count that goes up and down (DropWizard's `Counter`).

use crate::adder::Adder;
use std::sync::Arc;

/// A count that can be incremented and decremented, as DropWizard's `Counter` (for example the
/// number of requests in flight, or the total number of requests served).
///
/// A cheap handle: clones share one count. Hot path: one relaxed atomic add, on a cache line
/// of the adding thread's own once threads contend (see [`Adder`]).
///
/// Rendered as a Prometheus `counter`, which Prometheus assumes never decreases; a quantity that
/// goes down as well as up reads better as a gauge there (see `MetricRegistry::settable_gauge`).
#[derive(Clone, Default)]
pub struct Counter {
    count: Arc<Adder>,
    /// For a counter kept elsewhere (see [`Counter::from_fn`]): read when rendered.
    read: Option<Arc<dyn Fn() -> f64 + Send + Sync>>,
}

impl std::fmt::Debug for Counter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Counter")
            .field("value", &self.value())
            .field("function", &self.read.is_some())
            .finish()
    }
}

/// `u64` to `i64`, saturating: a step larger than `i64::MAX` is a caller's bug, not a reason to
/// wrap the count negative.
fn step(n: u64) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl Counter {
    /// A counter at zero, not in any registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one.
    #[inline]
    pub fn inc(&self) {
        self.count.add(1);
    }

    /// Adds `n`.
    #[inline]
    pub fn add(&self, n: u64) {
        self.count.add(step(n));
    }

    /// Subtracts one.
    #[inline]
    pub fn dec(&self) {
        self.count.add(-1);
    }

    /// Subtracts `n`.
    #[inline]
    pub fn sub(&self, n: u64) {
        self.count.add(step(n).saturating_neg());
    }

    /// A counter whose value is `f()` each time it is read: a count another component keeps
    /// (events a logging appender wrote, CPU seconds the kernel counted) published as a counter,
    /// which Prometheus then treats as monotonic. It ignores `inc`, `add` and the rest: the
    /// function is the count.
    pub fn from_fn(f: impl Fn() -> f64 + Send + Sync + 'static) -> Self {
        Counter {
            count: Arc::default(),
            read: Some(Arc::new(f)),
        }
    }

    /// The current count (a function counter's value, truncated).
    pub fn count(&self) -> i64 {
        match &self.read {
            Some(f) => f() as i64,
            None => self.count.sum(),
        }
    }

    /// The current count as a number: a function counter's may have a fraction.
    pub fn value(&self) -> f64 {
        match &self.read {
            Some(f) => f(),
            None => self.count.sum() as f64,
        }
    }

    /// Whether the value is integral (not a function's).
    pub(crate) fn is_integral(&self) -> bool {
        self.read.is_none()
    }

    /// Raises the count to `n` if it is lower (the `metrics` facade's `absolute`, which must
    /// never move a counter backwards when callers race).
    pub(crate) fn raise_to(&self, n: u64) {
        // Best effort when callers race (two may both add the difference): the facade's
        // `absolute` is for counts another component keeps, set by one caller at a time.
        let target = step(n);
        let now = self.count.sum();
        if target > now {
            self.count.add(target - now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_both_ways() {
        let c = Counter::new();
        c.inc();
        c.add(10);
        c.dec();
        c.sub(3);
        assert_eq!(c.count(), 7);
        c.sub(10);
        assert_eq!(c.count(), -3);
    }

    #[test]
    fn clones_share_the_count() {
        let a = Counter::new();
        let b = a.clone();
        b.add(5);
        assert_eq!(a.count(), 5);
    }

    #[test]
    fn huge_steps_saturate_instead_of_wrapping() {
        let c = Counter::new();
        c.add(u64::MAX);
        assert_eq!(c.count(), i64::MAX);
    }

    #[test]
    fn a_function_counter_reads_its_function() {
        let c = Counter::from_fn(|| 2.5);
        c.inc();
        assert_eq!(c.value(), 2.5);
        assert_eq!(c.count(), 2);
        assert!(!c.is_integral());
    }

    #[test]
    fn raise_to_never_lowers() {
        let c = Counter::new();
        c.raise_to(10);
        c.raise_to(4);
        assert_eq!(c.count(), 10);
    }
}
