//! Counters of every event an appender took, wrote and dropped, per level.

use std::sync::atomic::{
    AtomicU64, AtomicUsize, Ordering::Acquire, Ordering::Relaxed, Ordering::Release,
};

use super::labels::AppenderLabels;
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
/// writer bumps sit on separate cache lines, so that neither side slows the other; an event
/// that is queued bumps none on the request thread (the writer counts it when it takes it).
#[derive(Debug, Default)]
pub struct Counters {
    /// Dropped by the request thread: by the queue policy, or after the writer stopped.
    dropped: CachePadded<[AtomicU64; 5]>,
    /// Events whose thread waited for room (a full queue that does not drop them).
    waited: CachePadded<AtomicU64>,
    high_water: CachePadded<AtomicUsize>,
    writer: CachePadded<WriterCounters>,
}

#[derive(Debug, Default)]
struct WriterCounters {
    /// Taken from the queue by the writer.
    taken: [AtomicU64; 5],
    written: [AtomicU64; 5],
    /// Taken but lost to a write error.
    lost: [AtomicU64; 5],
    write_errors: AtomicU64,
}

impl Counters {
    pub(crate) fn dropped(&self, level: usize, n: u64) {
        self.dropped[level].fetch_add(n, Relaxed);
    }
    pub(crate) fn waited(&self) {
        self.waited.fetch_add(1, Relaxed);
    }
    pub(crate) fn taken(&self, level: usize, n: u64) {
        if n > 0 {
            self.writer.taken[level].fetch_add(n, Relaxed);
        }
    }
    // Release, with the snapshot's Acquire: a snapshot that sees these sees the `taken`
    // added before them.
    pub(crate) fn written(&self, level: usize, n: u64) {
        if n > 0 {
            self.writer.written[level].fetch_add(n, Release);
        }
    }
    pub(crate) fn lost(&self, level: usize, n: u64) {
        if n > 0 {
            self.writer.lost[level].fetch_add(n, Release);
        }
    }
    pub(crate) fn write_error(&self) {
        self.writer.write_errors.fetch_add(1, Relaxed);
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
    /// Events the appender accepted (passed its threshold), once the writer has taken
    /// them to write or the policy dropped them: an event still queued shows in
    /// [`AppenderStats::queue_depth`] until then, and one formatted into the writer's next
    /// batch in neither, for at most a few milliseconds (see the writer's `HOLD`).
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
    /// What its metrics are labelled with: `appender="0",type="file",target="app.log"`.
    pub labels: AppenderLabels,
    /// Figures for TRACE, DEBUG, INFO, WARN, ERROR, in that order.
    pub levels: [LevelCounts; 5],
    /// Events in the queue now.
    pub queue_depth: usize,
    /// The queue's capacity.
    pub queue_capacity: usize,
    /// The most events ever queued at once.
    pub high_water_mark: usize,
    /// Events whose thread had to wait for room in the queue (full, and not allowed to drop
    /// them: WARN and ERROR, or every level of a lossless appender). A request thread that
    /// waits is a request slowed by its log: the figure that says the queue is too small or
    /// the destination too slow.
    pub waited: u64,
    /// Failed write calls.
    pub write_errors: u64,
}

impl AppenderStats {
    pub(crate) fn read(
        name: &str,
        labels: &AppenderLabels,
        c: &Counters,
        queue_depth: usize,
        queue_capacity: usize,
    ) -> Self {
        let mut levels = [LevelCounts::default(); 5];
        for (i, l) in levels.iter_mut().enumerate() {
            // The writer counts taken before written or lost; read in the other order,
            // emitted >= written + dropped holds in every snapshot, even while events flow.
            let w = &c.writer;
            l.written = w.written[i].load(Acquire);
            let lost = w.lost[i].load(Acquire);
            let taken = w.taken[i].load(Relaxed);
            let dropped = c.dropped[i].load(Relaxed);
            l.dropped = dropped + lost;
            l.emitted = taken + dropped;
        }
        AppenderStats {
            name: name.to_owned(),
            labels: labels.clone(),
            levels,
            queue_depth,
            queue_capacity,
            high_water_mark: c.high_water.load(Relaxed),
            waited: c.waited.load(Relaxed),
            write_errors: c.writer.write_errors.load(Relaxed),
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
