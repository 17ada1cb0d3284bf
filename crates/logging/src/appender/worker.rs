//! The writer thread: drains the ring, formats in place, writes in batches.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};

use super::control::Control;
use super::ring::Consumer;
use super::stats::{Counters, level_index};
use super::wake::{Room, Sleep};
use crate::layout::Layout;
use crate::record::Record;
use crate::sink::Sink;

/// A batch is written once it holds this many bytes, once its first line has waited
/// [`HOLD`], or as soon as the queue is quiet (nothing new for a nap).
///
/// Why hold lines at all: under load the queue never stays empty for long, and writing what
/// each look finds would make a write every millisecond or so (~7 KB for a server's request
/// log at 75,000 lines a second). A write of a few KB costs the kernel about as much as one
/// of 64 KB (the file's times and size, its journal), and that kernel time comes out of the
/// cores the server runs on. Held lines are formatted and their queue slots already free: the
/// batch is the queue's continuation, and it is written before any flush is answered, at
/// shutdown, and after a panic counted as lost like the queue's own lines.
///
/// Why 256 KiB rather than 64: an append that starts and ends mid-page fills the page cache
/// with small pages at its two ends, and the filesystem's work per page (ext4's block
/// reservation and buffer heads) rather than the copy is most of a write's cost. Larger
/// writes leave fewer of those ends per byte; beyond 256 KiB the saving is small and the
/// batch takes more of the writer's cache.
const BATCH_BYTES: usize = 256 * 1024;

/// How long a formatted line may wait in the batch for more (see [`BATCH_BYTES`]).
const HOLD: Duration = Duration::from_millis(5);

/// How long the writer naps when the queue is empty: at least [`NAP`], at most
/// [`LONGEST_NAP`], and in between as long as the queue takes to fill by [`NAP_FILL`] at the
/// rate the last nap saw. After [`IDLE_NAPS`] naps with nothing queued, it sleeps until woken.
///
/// Why the length follows the rate: each nap ends in a wake-up of the writer thread, which
/// costs the machine a context switch (several µs on a virtual machine) and often preempts a
/// request thread. A fixed nap of 1 ms would wake a busy request log's writer a thousand
/// times a second whether it finds ten lines or a hundred (BENCHMARKS.md, "Logging hot path").
const NAP: Duration = Duration::from_micros(250);
const LONGEST_NAP: Duration = Duration::from_millis(4);
/// The share of the queue a nap lets fill: a quarter, so that another quarter is left before
/// half, where producers wake the writer themselves (a system call on a request thread, which
/// also puts the writer on that thread's core), for the nap's timer and a busy core to run the
/// writer late; and far from where lossy appenders start dropping.
const NAP_FILL: (u64, u64) = (1, 4);
const IDLE_NAPS: u32 = 100;

/// Write errors are reported on stderr at most this often, with how many writes failed and
/// lines were lost since the last report.
const ERROR_REPORT_INTERVAL: Duration = Duration::from_secs(60);

#[allow(clippy::too_many_arguments)]
pub(crate) fn spawn(
    name: &str,
    consumer: Consumer<Record>,
    requests: Receiver<Control>,
    counters: Arc<Counters>,
    room: Arc<Room>,
    sleep: Arc<Sleep>,
    layout: Layout,
    sink: Box<dyn Sink>,
) -> std::io::Result<JoinHandle<()>> {
    let mut worker = Worker {
        name: name.to_owned(),
        consumer,
        requests,
        counters,
        room,
        sleep,
        layout,
        sink,
        batch: Vec::with_capacity(BATCH_BYTES * 2),
        line_ends: Vec::with_capacity(1024),
        levels: [0; 5],
        writing: [0; 5],
        held_since: None,
        flushes: Vec::new(),
        reports: ErrorReports::default(),
    };
    std::thread::Builder::new()
        .name(format!("ferrowizard-log-writer {name}"))
        .spawn(move || {
            let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| worker.run()));
            if ran.is_err() {
                worker.abandon();
            }
        })
}

struct Worker {
    name: String,
    consumer: Consumer<Record>,
    requests: Receiver<Control>,
    counters: Arc<Counters>,
    room: Arc<Room>,
    /// Set while the writer sleeps until woken (rather than napping).
    sleep: Arc<Sleep>,
    layout: Layout,
    sink: Box<dyn Sink>,
    batch: Vec<u8>,
    line_ends: Vec<usize>,
    /// Lines in the batch, per level.
    levels: [u64; 5],
    /// Lines of the batch being written (counted as taken, not yet as written or lost).
    writing: [u64; 5],
    /// When the batch's first line was formatted (see [`HOLD`]).
    held_since: Option<Instant>,
    /// Flushes asked for: the index to write up to, and whom to answer.
    flushes: Vec<(u64, Sender<()>)>,
    reports: ErrorReports,
}

impl Worker {
    /// Writes batches until told to stop or the appender is gone.
    ///
    /// The writer does not block waiting for records: a producer that found it blocked
    /// would have to wake it with a system call, and under load that would be paid every
    /// few events by a request thread. Instead the writer naps (0.25 to 4 ms, see [`NAP`]) when
    /// the queue is empty, and producers wake it only when the queue is half full, when it is
    /// asleep for good (after [`IDLE_NAPS`] naps with nothing queued), or to flush.
    fn run(&mut self) {
        let mut naps = 0;
        let mut nap = NAP;
        // When the nap that just ended began.
        let mut napped: Option<Instant> = None;
        let stop = loop {
            let taken = self.drain();
            let wrote = taken > 0;
            if let Some(since) = napped.take() {
                nap = next_nap(self.consumer.ring().capacity(), taken, since.elapsed(), nap);
            }
            if !wrote && naps > 0 {
                // The queue stayed quiet for a whole nap: nothing to wait for. (A look that
                // finds nothing right after one that found lines is common under load: the
                // writer is faster than the producers, and a producer's wake-up can end a
                // nap early.)
                self.write_batch();
            }
            match self.requests.try_recv() {
                Ok(Control::Flush(target, ack)) => self.flushes.push((target, ack)),
                Ok(Control::Stop(ack)) => break Some(ack),
                // The appender is gone.
                Err(crossbeam_channel::TryRecvError::Disconnected) => break None,
                Err(crossbeam_channel::TryRecvError::Empty) => {}
            }
            self.answer_flushes();
            if wrote {
                naps = 0;
            } else if !self.flushes.is_empty() {
                // A producer is still filling a slot a flush waits for.
                std::thread::yield_now();
            } else if naps < IDLE_NAPS {
                naps += 1;
                napped = Some(Instant::now());
                std::thread::park_timeout(nap);
            } else {
                // The ring's `tail`, read with SeqCst after the flag is raised: either this
                // sees a producer's claim, or the producer sees the flag (see `wake`).
                let (ring, position) = (self.consumer.ring(), self.consumer.position());
                let requests = &self.requests;
                self.sleep
                    .park_unless_busy(|| ring.tail() == position && requests.is_empty());
                naps = 0;
            }
        };
        // Stopping: claims from now on are counted as dropped by their producers; every
        // claim before that is written, so that nothing accepted is lost.
        let last = self.consumer.close();
        while self.consumer.position() < last {
            if self.drain() == 0 {
                std::thread::yield_now();
            }
        }
        self.write_batch();
        self.flush_sink();
        for (_, ack) in self.flushes.drain(..) {
            let _ = ack.send(());
        }
        if let Some(ack) = stop {
            let _ = ack.send(());
        }
        // Producers waiting for room see the ring closed.
        self.room.notify();
    }

    /// After a panic (a layout or sink that failed in a way it should not): the ring is closed
    /// so that no producer waits for room that will never come, and what was queued is
    /// counted as lost, so that every event is still counted once, written or dropped.
    fn abandon(&mut self) {
        let last = self.consumer.close();
        // The batch being written was counted as taken; lines formatted since, not yet.
        let writing = std::mem::take(&mut self.writing);
        let mut lost = if writing.iter().any(|n| *n > 0) {
            [0; 5]
        } else {
            self.levels
        };
        for (level, n) in writing.iter().enumerate() {
            self.counters.lost(level, *n);
        }
        self.levels = [0; 5];
        self.batch.clear();
        self.line_ends.clear();
        // Claims made before the close are published soon (their producers are filling
        // them); a few tries, not a wait without end.
        for _ in 0..1000 {
            while let Some(level) = self.consumer.pop(|r| level_index(&r.level())) {
                lost[level] += 1;
            }
            self.consumer.release();
            if self.consumer.position() >= last {
                break;
            }
            std::thread::yield_now();
        }
        for (level, n) in lost.iter().enumerate() {
            self.counters.taken(level, *n);
            self.counters.lost(level, *n);
        }
        eprintln!(
            "ferrowizard-logging: appender {} ({}): the writer thread panicked; {} queued lines lost; later events are counted as dropped",
            self.name,
            self.sink.describe(),
            lost.iter().chain(writing.iter()).sum::<u64>()
        );
        for (_, ack) in self.flushes.drain(..) {
            let _ = ack.send(());
        }
        self.room.notify();
    }

    /// Formats what is queued into batches and writes them. Returns how many lines it took.
    fn drain(&mut self) -> u64 {
        let mut taken = 0;
        // The events' counter readings are dated against the clocks as they are now.
        crate::clock::anchor();
        loop {
            let Worker {
                consumer,
                layout,
                batch,
                line_ends,
                levels,
                held_since,
                ..
            } = self;
            let took = consumer.pop(|record| {
                if batch.is_empty() {
                    *held_since = Some(Instant::now());
                }
                layout.format(record, batch);
                line_ends.push(batch.len());
                levels[level_index(&record.level())] += 1;
            });
            if took.is_none() {
                break;
            }
            taken += 1;
            if self.batch.len() >= BATCH_BYTES {
                self.release();
                self.write_batch();
            }
        }
        if taken > 0 {
            self.release();
            if self.held_since.is_some_and(|t| t.elapsed() >= HOLD) {
                self.write_batch();
            }
        }
        taken
    }

    /// Frees the slots read so far and wakes producers waiting for one.
    fn release(&mut self) {
        self.consumer.release();
        self.room.notify();
    }

    /// Answers the flushes whose records are all written.
    fn answer_flushes(&mut self) {
        let position = self.consumer.position();
        if !self.flushes.iter().any(|(target, _)| *target <= position) {
            return;
        }
        self.write_batch();
        self.flush_sink();
        self.flushes.retain(|(target, ack)| {
            let done = *target <= position;
            if done {
                let _ = ack.send(());
            }
            !done
        });
    }

    fn flush_sink(&mut self) {
        if let Err(e) = self.sink.flush() {
            self.write_failed(&e, 0);
        }
    }

    fn write_batch(&mut self) {
        if self.line_ends.is_empty() {
            return;
        }
        // Taken before written or lost, so that a snapshot never shows more written and
        // dropped than emitted. `writing` says which lines are between the two, should the
        // sink panic (see `abandon`).
        for (level, n) in self.levels.iter().enumerate() {
            self.counters.taken(level, *n);
        }
        self.writing = self.levels;
        match self.sink.write(&self.batch, &self.line_ends) {
            Ok(()) => {
                for (level, n) in self.levels.iter().enumerate() {
                    self.counters.written(level, *n);
                }
                // The clock is read only while failures are being told, not for every batch.
                if self.reports.failing
                    && let Some(tally) = self.reports.succeeded(Instant::now())
                {
                    eprintln!("ferrowizard-logging: {}: writing again; {tally}", self.name);
                }
            }
            Err(e) => {
                for (level, n) in self.levels.iter().enumerate() {
                    self.counters.lost(level, *n);
                }
                self.write_failed(&e, self.line_ends.len() as u64);
            }
        }
        self.batch.clear();
        self.line_ends.clear();
        self.levels = [0; 5];
        self.writing = [0; 5];
        self.held_since = None;
    }

    /// Counts a failed write that lost `lost` lines, and tells stderr about it unless it did
    /// less than a minute ago ([`ERROR_REPORT_INTERVAL`]): a full disk fails every batch,
    /// and one line a minute says so as well as thousands.
    fn write_failed(&mut self, e: &std::io::Error, lost: u64) {
        self.counters.write_error();
        if let Some(tally) = self.reports.failed(lost, Instant::now()) {
            eprintln!(
                "ferrowizard-logging: {}: write failed: {e}; {tally}; retrying",
                self.name
            );
        }
    }
}

/// When a writer tells stderr about its write errors: a failure at once when none is being
/// told (the first, or the first after writing was told to work again), then at most once
/// every [`ERROR_REPORT_INTERVAL`] while failures go on; and that writing works again once a
/// whole interval passed without a failure (a write into a sink's buffer succeeds whether or
/// not the disk has room, so one success proves nothing) and an interval after the last
/// report. Each report says what failed since the one before.
#[derive(Debug, Default)]
struct ErrorReports {
    last: Option<Instant>,
    /// Failed writes since the last report.
    failures: u64,
    /// Lines lost to write errors since the last report.
    unreported: u64,
    /// Failures were told and their end not yet.
    failing: bool,
    last_failure: Option<Instant>,
}

impl ErrorReports {
    /// A write failed at `now`, losing `lost` lines: the tally to report, if one is due.
    fn failed(&mut self, lost: u64, now: Instant) -> Option<String> {
        self.failures += 1;
        self.unreported += lost;
        self.last_failure = Some(now);
        let fresh = !std::mem::replace(&mut self.failing, true);
        (fresh || self.due(now)).then(|| self.tally(now))
    }

    /// A write succeeded at `now`: the tally to report with "writing again", if failures
    /// were told, none came for an interval, and a report is due.
    fn succeeded(&mut self, now: Instant) -> Option<String> {
        let quiet = self
            .last_failure
            .is_none_or(|t| now.saturating_duration_since(t) >= ERROR_REPORT_INTERVAL);
        if !self.failing || !quiet || !self.due(now) {
            return None;
        }
        self.failing = false;
        Some(self.tally(now))
    }

    fn due(&self, now: Instant) -> bool {
        self.last
            .is_none_or(|t| now.saturating_duration_since(t) >= ERROR_REPORT_INTERVAL)
    }

    /// What failed since the last report, for the report made at `now`.
    fn tally(&mut self, now: Instant) -> String {
        let since = match self.last {
            Some(_) => "since the last report",
            None => "so far",
        };
        let tally = format!(
            "{} and {} dropped {since}",
            counted(self.failures, "failed write"),
            counted(self.unreported, "line")
        );
        self.last = Some(now);
        self.failures = 0;
        self.unreported = 0;
        tally
    }
}

/// `n` and `what`, plural unless one: `2 lines`.
fn counted(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// The nap after one of `nap` that ended `took` after it began and found `taken` lines in a
/// queue of `capacity` slots (see [`NAP`]).
///
/// A nap that found nothing is a quiet queue only if it lasted: one cut short by a wake-up
/// with nothing behind it keeps its length. (A producer that finds the queue half full
/// while the writer is busy draining it leaves a wake-up token behind, and the writer's next
/// nap returns at once; taking that for a quiet queue would make the writer sleep the
/// longest nap under the heaviest load, and the producers wake it themselves.)
fn next_nap(capacity: u64, taken: u64, took: Duration, nap: Duration) -> Duration {
    if taken == 0 {
        return if took < nap { nap } else { LONGEST_NAP };
    }
    let fill = (capacity * NAP_FILL.0 / NAP_FILL.1).max(1);
    let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
    Duration::from_nanos(nanos.saturating_mul(fill) / taken).clamp(NAP, LONGEST_NAP)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Catches: a report per failure (thousands a minute on a full disk), a report that
    /// forgets what failed between reports, a recovery never told because the failures were
    /// told already, told at once after the last report, or told on a success between
    /// failures; a new outage after a recovery held back.
    #[test]
    fn write_errors_are_told_once_a_minute_and_so_is_writing_again() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut r = ErrorReports::default();
        assert_eq!(r.succeeded(at(0)), None, "nothing failed");
        assert_eq!(
            r.failed(10, at(0)).as_deref(),
            Some("1 failed write and 10 lines dropped so far")
        );
        assert_eq!(r.failed(5, at(30)), None);
        assert_eq!(r.failed(5, at(59)), None);
        assert_eq!(
            r.failed(1, at(60)).as_deref(),
            Some("3 failed writes and 11 lines dropped since the last report")
        );
        // Room again 5 s later: told once the last failure and the last report are a minute
        // old, and once only.
        assert_eq!(r.succeeded(at(65)), None);
        assert_eq!(r.succeeded(at(119)), None);
        assert_eq!(
            r.succeeded(at(120)).as_deref(),
            Some("0 failed writes and 0 lines dropped since the last report")
        );
        assert_eq!(r.succeeded(at(200)), None);
        // A failure after writing was told to work again is told at once.
        assert_eq!(
            r.failed(1, at(300)).as_deref(),
            Some("1 failed write and 1 line dropped since the last report")
        );
        // A success between failures (a write into a buffer) is no recovery: the failure at
        // 310 keeps "writing again" back until 370.
        assert_eq!(r.succeeded(at(301)), None);
        assert_eq!(r.failed(2, at(310)), None);
        assert_eq!(r.succeeded(at(365)), None);
        assert_eq!(
            r.succeeded(at(370)).as_deref(),
            Some("1 failed write and 2 lines dropped since the last report")
        );
        assert!(r.failed(1, at(375)).is_some());
    }

    #[test]
    fn a_nap_lasts_as_long_as_the_queue_takes_to_fill_by_a_quarter() {
        let ms = Duration::from_millis;
        // 64 lines a millisecond into 512 slots: 128 take 2 ms.
        assert_eq!(next_nap(512, 64, ms(1), NAP), ms(2));
        // Faster than the shortest nap allows, or slower than the longest: the bounds.
        assert_eq!(next_nap(512, 1000, ms(1), NAP), NAP);
        assert_eq!(next_nap(512, 10, ms(1), NAP), LONGEST_NAP);
        // A larger queue lets the writer sleep longer at the same rate.
        assert_eq!(next_nap(1024, 256, ms(1), NAP), ms(1));
        assert_eq!(next_nap(1024, 128, ms(1), NAP), ms(2));
        assert_eq!(next_nap(1, 100, ms(1), NAP), NAP);
    }

    /// Catches: a nap cut short by a wake-up that found nothing taken for a quiet queue, so
    /// that the writer sleeps the longest nap while lines pour in.
    #[test]
    fn only_a_whole_nap_that_finds_nothing_lengthens_the_next() {
        let ms = Duration::from_millis;
        assert_eq!(next_nap(4096, 0, ms(2), ms(2)), LONGEST_NAP);
        assert_eq!(next_nap(4096, 0, Duration::from_micros(1), ms(2)), ms(2));
    }
}
