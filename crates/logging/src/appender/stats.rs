//! Counters of every event an appender took, wrote and dropped, per level.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use crossbeam_utils::CachePadded;
use tracing::Level;

/// Levels in counter order.
pub const LEVELS: [Level; 5] = [
    Level::TRACE,
    Level::DEBUG,
    Level::INFO,
    Level::WARN,
    Level::ERROR,
];

pub(crate) fn level_index(level: &Level) -> usize {
    match *level {
        Level::TRACE => 0,
        Level::DEBUG => 1,
        Level::INFO => 2,
        Level::WARN => 3,
        _ => 4,
    }
}

/// The live counters of one appender. Those the request threads bump and those the
/// writer bumps sit on separate cache lines, so that neither side slows the other.
#[derive(Debug, Default)]
pub struct Counters {
    emitted: CachePadded<[AtomicU64; 5]>,
    dropped: CachePadded<[AtomicU64; 5]>,
    high_water: CachePadded<AtomicUsize>,
    written: CachePadded<[AtomicU64; 5]>,
    write_errors: AtomicU64,
}

impl Counters {
    pub(crate) fn emitted(&self, level: usize) {
        self.emitted[level].fetch_add(1, Relaxed);
    }
    pub(crate) fn written(&self, level: usize, n: u64) {
        self.written[level].fetch_add(n, Relaxed);
    }
    pub(crate) fn dropped(&self, level: usize, n: u64) {
        self.dropped[level].fetch_add(n, Relaxed);
    }
    pub(crate) fn write_error(&self) {
        self.write_errors.fetch_add(1, Relaxed);
    }
    pub(crate) fn depth(&self, depth: usize) {
        // A read is nearly free; the read-modify-write only when the mark moves.
        if depth > self.high_water.load(Relaxed) {
            self.high_water.fetch_max(depth, Relaxed);
        }
    }
}

/// Per-level figures.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LevelCounts {
    /// Events the appender accepted (passed its threshold).
    pub emitted: u64,
    /// Events written to the destination.
    pub written: u64,
    /// Events dropped: queue full under the drop policy, or lost to a write error.
    pub dropped: u64,
}

/// A snapshot of one appender's counters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppenderStats {
    /// The appender's name, e.g. `logging.appenders[0] (file app.log)`.
    pub name: String,
    /// Figures for TRACE, DEBUG, INFO, WARN, ERROR, in that order.
    pub levels: [LevelCounts; 5],
    /// Events in the queue now.
    pub queue_depth: usize,
    /// The queue's capacity.
    pub queue_capacity: usize,
    /// The most events ever queued at once.
    pub high_water_mark: usize,
    /// Failed write calls.
    pub write_errors: u64,
}

impl AppenderStats {
    pub(crate) fn read(
        name: &str,
        c: &Counters,
        queue_depth: usize,
        queue_capacity: usize,
    ) -> Self {
        let mut levels = [LevelCounts::default(); 5];
        for (i, l) in levels.iter_mut().enumerate() {
            // Read written and dropped before emitted: emitted >= written + dropped then
            // holds in every snapshot, even one taken while events flow.
            l.written = c.written[i].load(Relaxed);
            l.dropped = c.dropped[i].load(Relaxed);
            l.emitted = c.emitted[i].load(Relaxed);
        }
        AppenderStats {
            name: name.to_owned(),
            levels,
            queue_depth,
            queue_capacity,
            high_water_mark: c.high_water.load(Relaxed),
            write_errors: c.write_errors.load(Relaxed),
        }
    }

    /// The figures of one level.
    pub fn level(&self, level: Level) -> LevelCounts {
        self.levels[level_index(&level)]
    }

    /// Totals over all levels.
    pub fn total(&self) -> LevelCounts {
        self.levels
            .iter()
            .fold(LevelCounts::default(), |a, l| LevelCounts {
                emitted: a.emitted + l.emitted,
                written: a.written + l.written,
                dropped: a.dropped + l.dropped,
            })
    }
}
