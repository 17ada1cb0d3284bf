//! [`Adder`]: a sum that many threads add to without fighting over one cache line
//! (DropWizard's counters and meters are `LongAdder`s for the same reason).
//!
//! A server records a few metrics on every request, from every worker thread. On one shared
//! atomic each add moves the cache line to the adding core: measured on this project's
//! 2-core machine, the server's metrics cost ~1.2 µs of CPU a request that way, most of it
//! waiting for lines (BENCHMARKS.md). An adder starts as one atomic, as cheap as a plain
//! counter while one thread uses it; the first time an add finds the value changed under it
//! (another thread added at the same moment), it spreads over a small array of padded cells,
//! one per thread slot, and every later add touches only its own thread's cell. Reading sums
//! the cells: reads are rare (a scrape) and adds are not.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicI64, AtomicU64, AtomicUsize, Ordering::Relaxed};

use crossbeam_utils::CachePadded;

/// Cells once contended: enough that the worker threads of a typical server rarely share one
/// (threads are numbered in order of first use and take the cell of their number).
const CELLS: usize = 16;

/// A sum of `i64` additions from any number of threads. See the module docs.
#[derive(Debug, Default)]
pub struct Adder {
    base: AtomicI64,
    cells: OnceLock<Box<[CachePadded<AtomicI64>]>>,
}

thread_local! {
    static CELL: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Relaxed) % CELLS
    };
}

impl Adder {
    /// A sum of zero.
    pub fn new() -> Adder {
        Adder::default()
    }

    /// Adds `n` (negative to subtract).
    #[inline]
    pub fn add(&self, n: i64) {
        if let Some(cells) = self.cells.get() {
            cells[CELL.with(|c| *c)].fetch_add(n, Relaxed);
            return;
        }
        let current = self.base.load(Relaxed);
        if self
            .base
            .compare_exchange(current, current.wrapping_add(n), Relaxed, Relaxed)
            .is_err()
        {
            // Another thread added at the same moment: spread from now on.
            let cells = self.cells.get_or_init(|| {
                (0..CELLS)
                    .map(|_| CachePadded::new(AtomicI64::new(0)))
                    .collect()
            });
            cells[CELL.with(|c| *c)].fetch_add(n, Relaxed);
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
        FloatSum {
            cells: (0..CELLS)
                .map(|_| CachePadded::new(AtomicU64::new(0)))
                .collect(),
        }
    }
}

impl FloatSum {
    /// Adds `x`.
    #[inline]
    pub(crate) fn add(&self, x: f64) {
        let cell = &self.cells[CELL.with(|c| *c)];
        // The thread's own cell: the exchange nearly always succeeds at once.
        let _ = cell.fetch_update(Relaxed, Relaxed, |bits| {
            Some((f64::from_bits(bits) + x).to_bits())
        });
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

    #[test]
    fn many_threads_lose_nothing() {
        let a = Arc::new(Adder::new());
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let a = a.clone();
                std::thread::spawn(move || {
                    for _ in 0..100_000 {
                        a.add(1);
                    }
                    a.add(-10);
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(a.sum(), 8 * (100_000 - 10));
    }
}
