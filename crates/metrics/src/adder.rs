//! [`Adder`]: a sum that many threads add to without fighting over one cache line
//! (DropWizard's counters and meters are `LongAdder`s for the same reason).
//!
//! A server records a few metrics on every request, from every worker thread. On one shared
//! atomic each add moves the cache line to the adding core, and most of an add's time is the
//! wait for the line (BENCHMARKS.md, "Metrics"). An adder starts as one atomic, as cheap as a
//! plain counter while one thread uses it; the first time an add finds the value changed
//! under it (another thread added at the same moment), it spreads over a small array of
//! padded cells, one per thread slot, and every later add touches only its own thread's cell.
//! Reading sums the cells: reads are rare (a scrape) and adds are not.
//!
//! The first [`CELLS`] threads to add (a server's workers start first) each own a cell that
//! no other thread writes, and add to it with a plain read and write: no locked instruction,
//! which on x86 is a full barrier that waits for every store before it (a server adds to a
//! few metrics per request, and each locked add stalls it: BENCHMARKS.md, "Metrics").
//! Later threads share the other half of the cells, with atomic additions.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};

use crossbeam_utils::CachePadded;

/// Threads with a cell of their own (numbered in order of first use); as many cells again are
/// shared, with atomic additions, by the threads after them.
const CELLS: usize = 16;

/// A sum of `i64` additions from any number of threads. See the module docs.
#[derive(Debug, Default)]
pub struct Adder {
    base: AtomicI64,
    cells: OnceLock<Box<[CachePadded<AtomicI64>]>>,
}

thread_local! {
    /// This thread's number, in order of first use: never reused, so that a cell below
    /// [`CELLS`] has one writer for good.
    static THREAD: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Relaxed)
    };
}

/// Cells for [`CELLS`] owners and as many shared ones.
fn cells<T: Default>() -> Box<[CachePadded<T>]> {
    (0..2 * CELLS)
        .map(|_| CachePadded::new(T::default()))
        .collect()
}

/// Adds `n` to this thread's cell among `cells` (of [`cells`]'s length).
#[inline]
fn add_to(cells: &[CachePadded<AtomicI64>], n: i64) {
    let thread = THREAD.with(|t| *t);
    if let Some(own) = cells.get(thread).filter(|_| thread < CELLS) {
        // Only this thread ever writes this cell: a reader sees the value before or after.
        own.store(own.load(Relaxed).wrapping_add(n), Relaxed);
    } else {
        cells[CELLS + thread % CELLS].fetch_add(n, Relaxed);
    }
}

impl Adder {
    /// A sum of zero.
    pub fn new() -> Adder {
        Adder::default()
    }

    /// Adds `n` (negative to subtract).
    #[inline]
    pub fn add(&self, n: i64) {
        match self.cells.get() {
            Some(cells) => add_to(cells, n),
            None => self.add_to_base(n),
        }
    }

    /// Before the first contention: the one atomic. Out of line, so that the spread adder's
    /// add above stays small enough to inline where it is called.
    #[cold]
    fn add_to_base(&self, n: i64) {
        let current = self.base.load(Relaxed);
        if self
            .base
            .compare_exchange(current, current.wrapping_add(n), Relaxed, Relaxed)
            .is_err()
        {
            // Another thread added at the same moment: spread from now on.
            add_to(self.cells.get_or_init(cells), n);
        }
    }

    /// The sum now (exact once the adding threads are done; while they add, a sum they might
    /// have reached at some moment).
    pub fn sum(&self) -> i64 {
        let cells = self.cells.get().map_or(0i64, |c| {
            c.iter().fold(0i64, |s, c| s.wrapping_add(c.load(Relaxed)))
        });
        self.base.load(Relaxed).wrapping_add(cells)
    }
}

/// A sum of `f64` additions from any number of threads: a histogram's sum (a timer's, in
/// nanoseconds, outgrows an `i64` of nanoseconds within months on a busy service; a float
/// keeps its magnitude, with the precision a rate or a mean needs). Always spread over
/// cells: histograms are few and updated from every worker.
#[derive(Debug)]
pub(crate) struct FloatSum {
    cells: Box<[CachePadded<AtomicU64>]>,
}

impl Default for FloatSum {
    fn default() -> Self {
        FloatSum { cells: cells() }
    }
}

impl FloatSum {
    /// Adds `x`.
    #[inline]
    pub(crate) fn add(&self, x: f64) {
        let thread = THREAD.with(|t| *t);
        let add = |bits: u64| (f64::from_bits(bits) + x).to_bits();
        if let Some(own) = self.cells.get(thread).filter(|_| thread < CELLS) {
            // Only this thread ever writes this cell (see `add_to`).
            own.store(add(own.load(Relaxed)), Relaxed);
        } else {
            let cell = &self.cells[CELLS + thread % CELLS];
            let _ = cell.fetch_update(Relaxed, Relaxed, |bits| Some(add(bits)));
        }
    }

    /// The sum now.
    pub(crate) fn sum(&self) -> f64 {
        self.cells
            .iter()
            .map(|c| f64::from_bits(c.load(Relaxed)))
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn one_thread_adds_and_subtracts() {
        let a = Adder::new();
        a.add(5);
        a.add(-2);
        assert_eq!(a.sum(), 3);
    }

    /// Runs `add` on more threads than there are own cells (the later ones share cells), all
    /// at once.
    fn on_many_threads(add: impl Fn() + Send + Sync + 'static) {
        let add = Arc::new(add);
        let threads: Vec<_> = (0..3 * CELLS)
            .map(|_| {
                let add = add.clone();
                std::thread::spawn(move || add())
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
    }

    #[test]
    fn many_threads_lose_nothing() {
        let a = Arc::new(Adder::new());
        let adder = a.clone();
        on_many_threads(move || {
            for _ in 0..100_000 {
                adder.add(1);
            }
            adder.add(-10);
        });
        assert_eq!(a.sum(), 3 * CELLS as i64 * (100_000 - 10));
    }

    #[test]
    fn many_threads_lose_no_float_either() {
        let s = Arc::new(FloatSum::default());
        let sum = s.clone();
        on_many_threads(move || {
            for _ in 0..10_000 {
                sum.add(1.0);
            }
        });
        assert_eq!(s.sum(), (3 * CELLS * 10_000) as f64);
    }
}
