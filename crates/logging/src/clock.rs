//! When an event happened, read cheaply on the thread that logs it and dated on the writer.
//!
//! The thread that logs reads the CPU's time-stamp counter through `quanta` (one instruction:
//! no system call, no scaling), instead of the wall clock (the vDSO's `clock_gettime`, which
//! fences, scales and retries). The writer thread turns a reading into wall-clock time against
//! an [`Anchor`]: one reading of both clocks, taken at the start of each batch it formats. An
//! event is then dated by the wall clock at the anchor, less the counter's time elapsed since
//! the event: a few milliseconds measured by the counter, so the date is as exact as the wall
//! clock's own, and a step of the wall clock (NTP) shows from the next batch on.
//!
//! Where the counter is missing or unreliable, `quanta` reads the monotonic clock instead, and
//! the same arithmetic holds.

use std::cell::Cell;
use std::sync::OnceLock;
use std::time::SystemTime;

/// The process's clock: calibrated once (up to 200 ms, see [`start`]).
static CLOCK: OnceLock<quanta::Clock> = OnceLock::new();

/// An anchor older than this (by the counter) is taken again before it dates a reading, so
/// that the counter never measures long spans against the wall clock.
const STALE_NANOS: u64 = 1_000_000_000;

/// Calibrates the clock (on the counter, `quanta` measures its rate for up to 200 ms): done
/// when an appender starts, so that no event waits for it.
pub(crate) fn start() {
    clock();
}

fn clock() -> &'static quanta::Clock {
    CLOCK.get_or_init(quanta::Clock::new)
}

/// A reading for the thread that logs: see the module's documentation.
#[inline]
pub(crate) fn now() -> u64 {
    clock().raw()
}

/// `time` in nanoseconds since the Unix epoch (negative before it).
pub(crate) fn wall_nanos(time: SystemTime) -> i128 {
    match time.duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// One reading of both clocks.
#[derive(Clone, Copy, Debug)]
struct Anchor {
    ticks: u64,
    /// Nanoseconds since the Unix epoch: an `i64` holds them until the year 2262, and its
    /// arithmetic is a few instructions where `i128`'s division is a call.
    unix_nanos: i64,
}

thread_local! {
    /// This thread's anchor: a writer takes it at the start of each batch.
    static ANCHOR: Cell<Option<Anchor>> = const { Cell::new(None) };
}

/// Takes this thread's anchor now. The writer calls it before each batch it formats.
pub(crate) fn anchor() {
    take_anchor();
}

fn take_anchor() -> Anchor {
    let anchor = Anchor {
        ticks: now(),
        unix_nanos: wall_nanos(SystemTime::now()) as i64,
    };
    ANCHOR.with(|a| a.set(Some(anchor)));
    anchor
}

/// The time of reading `ticks`, in nanoseconds since the Unix epoch, against this thread's
/// anchor (taken afresh when there is none, or when it is further than [`STALE_NANOS`] from
/// the reading).
pub(crate) fn unix_nanos(ticks: u64) -> i64 {
    let clock = clock();
    // How far the reading is after (positive) or before the anchor: `delta_as_nanos` is 0
    // unless its second reading is the later one.
    let offset = |a: &Anchor| {
        if ticks >= a.ticks {
            clock.delta_as_nanos(a.ticks, ticks) as i64
        } else {
            -(clock.delta_as_nanos(ticks, a.ticks) as i64)
        }
    };
    if let Some(anchor) = ANCHOR.with(Cell::get) {
        let offset = offset(&anchor);
        if offset.unsigned_abs() <= STALE_NANOS {
            return anchor.unix_nanos + offset;
        }
    }
    let anchor = take_anchor();
    anchor.unix_nanos + offset(&anchor)
}

/// [`unix_nanos`] as whole seconds (floored) and the nanoseconds past them.
pub(crate) fn unix_time(ticks: u64) -> (i64, u32) {
    let nanos = unix_nanos(ticks);
    (
        nanos.div_euclid(1_000_000_000),
        nanos.rem_euclid(1_000_000_000) as u32,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Catches: a reading dated by the anchor alone (every event of a batch at one time), the
    /// elapsed time added instead of taken away, and an anchor never taken on a thread that is
    /// not a writer.
    #[test]
    fn a_reading_is_dated_by_the_wall_clock_less_the_time_since() {
        let wall = |time| wall_nanos(time) as i64;
        let before = wall(SystemTime::now());
        let first = now();
        std::thread::sleep(Duration::from_millis(30));
        let second = now();
        let after = wall(SystemTime::now());
        anchor();
        let (a, b) = (unix_nanos(first), unix_nanos(second));
        // Each within the wall clock's bounds, and 30 ms apart as the counter saw it.
        assert!(
            before - 2_000_000 <= a && a <= after,
            "{before} {a} {after}"
        );
        assert!(
            before <= b && b <= after + 2_000_000,
            "{before} {b} {after}"
        );
        let apart = b - a;
        assert!(
            (29_000_000..80_000_000).contains(&apart),
            "{apart} ns apart"
        );
    }

    /// A thread that never anchored (not a writer) dates a reading all the same.
    #[test]
    fn a_thread_without_an_anchor_takes_one() {
        let t = std::thread::spawn(|| {
            let before = wall_nanos(SystemTime::now()) as i64;
            let n = unix_nanos(now());
            let after = wall_nanos(SystemTime::now()) as i64;
            (before, n, after)
        });
        let (before, n, after) = t.join().unwrap();
        assert!(before - 2_000_000 <= n && n <= after + 2_000_000);
    }
}
