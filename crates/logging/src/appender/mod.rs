//! An appender: a bounded queue between the threads that log and one writer thread.
//!
//! This is the hot path, and it is hand-built on purpose. `tracing-appender`'s non-blocking
//! writer takes already formatted bytes (the formatting cost stays on the request thread),
//! allocates a `Vec` per line, and when its channel is full either blocks every level or
//! drops every level, counting only the total. DropWizard users expect logback's
//! `AsyncAppender`: drop the unimportant levels first (`discardingThreshold`), never drop
//! WARN/ERROR unless told to (`neverBlock`), and count what is lost. No crate does that,
//! so here:
//!
//! - the queue is a `ring` of `queueSize` slots, each owning a [`Record`] for good: the
//!   request thread claims a slot and captures its event straight into that record
//!   ([`Appender::log`]), so nothing is allocated, moved or pooled per event;
//! - the drop policy is decided when claiming, before anything is captured: when fewer than
//!   `discardingThreshold` slots are free, TRACE/DEBUG/INFO are dropped and counted; WARN and
//!   above wait for a slot (on a condition variable the writer signals), unless `neverBlock`
//!   drops them too;
//! - the writer thread (`worker`) formats records in place, in batches, and writes each
//!   batch with one call; it is woken only when the queue is half full or it sleeps for good,
//!   never per event.
//!
//! Application events are formatted on the writer thread, so the request thread never pays
//! for the layout (BENCHMARKS.md, "Logging hot path").

pub(crate) mod control;
pub mod labels;
pub(crate) mod ring;
pub mod stats;
pub(crate) mod wake;
pub(crate) mod worker;

use std::cell::Cell;

use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, bounded, unbounded};
use tracing::Level;

use crate::layout::Layout;
use crate::record::Record;
use crate::sink::Sink;
use control::Control;
use labels::AppenderLabels;
use ring::{Claim, Refused, Ring};
use stats::{AppenderStats, Counters, level_index};
use wake::{Room, Sleep};

thread_local! {
    /// Set while this thread fills a claimed slot: an event logged from inside that (a
    /// `Debug` impl that logs) must not wait for room, since the writer cannot pass the
    /// unfinished slot.
    ///
    /// What this cannot cover: a `Debug` impl that takes a lock which another thread holds
    /// while it waits for room behind this thread's unfinished slot (a lock-order cycle
    /// through the queue). Fields' `Debug` impls should not take locks that are held around
    /// logging calls.
    static FILLING: Cell<bool> = const { Cell::new(false) };
}

/// Marks this thread as filling a slot until dropped, then puts back what was there.
struct Filling(bool);

impl Filling {
    fn enter() -> Filling {
        Filling(FILLING.with(|f| f.replace(true)))
    }
}

impl Drop for Filling {
    fn drop(&mut self) {
        let before = self.0;
        FILLING.with(|f| f.set(before));
    }
}

/// How an appender behaves when its queue fills.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueuePolicy {
    /// Slots in the queue.
    pub capacity: usize,
    /// Drop TRACE/DEBUG/INFO when fewer slots than this are free (0: never by level).
    pub discarding_threshold: usize,
    /// Drop every level instead of waiting when the queue is full.
    pub never_block: bool,
}

impl QueuePolicy {
    /// DropWizard's reading of `queueSize`, `discardingThreshold` (-1 = queueSize/5) and
    /// `neverBlock`.
    pub fn new(queue_size: usize, discarding_threshold: i64, never_block: bool) -> Self {
        let capacity = queue_size.max(1);
        let discarding_threshold = match discarding_threshold {
            d if d < 0 => capacity / 5,
            d => (d as usize).min(capacity),
        };
        QueuePolicy {
            capacity,
            discarding_threshold,
            never_block,
        }
    }

    /// TRACE/DEBUG/INFO are queued only while fewer slots than this are taken: logback's
    /// "fewer than `discardingThreshold` free" (the whole queue when the threshold is 0:
    /// then nothing is dropped by level, and a full queue makes every level wait).
    pub fn discarding_limit(&self) -> usize {
        (self.capacity + 1)
            .saturating_sub(self.discarding_threshold)
            .min(self.capacity)
    }

    /// Whether an event of level index `level` (0 TRACE .. 4 ERROR) finds no room for its level
    /// when `depth` slots are taken (dropped, unless the threshold is 0: then it waits).
    #[inline]
    pub fn drops_by_level(&self, level: usize, depth: usize) -> bool {
        level <= level_index(&Level::INFO) && depth >= self.discarding_limit()
    }

    /// Lossless: every event waits for a slot.
    pub fn blocking(capacity: usize) -> Self {
        QueuePolicy {
            capacity: capacity.max(1),
            discarding_threshold: 0,
            never_block: false,
        }
    }
}

/// The request threads' handle on one appender.
pub struct Appender {
    name: String,
    /// What metrics call it (see [`labels`]).
    labels: AppenderLabels,
    threshold: Level,
    include_caller: bool,
    policy: QueuePolicy,
    /// How many slots TRACE/DEBUG/INFO may find taken and still be queued.
    discarding_limit: u64,
    ring: Arc<Ring<Record>>,
    counters: Arc<Counters>,
    room: Arc<Room>,
    /// The writer thread, woken when the queue is half full or it sleeps for good.
    writer: Thread,
    sleep: Arc<Sleep>,
    wake_depth: u64,
    control: Sender<Control>,
    worker: Mutex<Option<JoinHandle<()>>>,
    /// `messageRate`: events beyond one per period are dropped (and counted).
    throttle: Option<Throttle>,
}

/// At most one event per `every`, as DropWizard's `messageRate` (logback's throttling
/// appender): the first event at or after `next` passes and moves `next` on; the others
/// meanwhile are dropped.
#[derive(Debug)]
struct Throttle {
    every: u64,
    started: std::time::Instant,
    /// Nanoseconds since `started` from which the next event passes.
    next: std::sync::atomic::AtomicU64,
}

impl Throttle {
    fn admit(&self) -> bool {
        use std::sync::atomic::Ordering::Relaxed;
        let now = u64::try_from(self.started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let next = self.next.load(Relaxed);
        now >= next
            && self
                .next
                .compare_exchange(next, now.saturating_add(self.every), Relaxed, Relaxed)
                .is_ok()
    }
}

impl std::fmt::Debug for Appender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Appender")
            .field("name", &self.name)
            .field("policy", &self.policy)
            .finish()
    }
}

impl Appender {
    /// Starts an appender writing `layout`-formatted records to `sink` on its own thread.
    /// `threshold` is the least severe level it writes.
    pub fn start(
        name: impl Into<String>,
        threshold: Level,
        include_caller: bool,
        policy: QueuePolicy,
        layout: Layout,
        sink: Box<dyn Sink>,
    ) -> std::io::Result<Appender> {
        let name = name.into();
        // The clock events are stamped with is calibrated now, not on the first event.
        crate::clock::start();
        // Every record that can be in flight exists from the start, with room for a typical
        // event: the request threads never allocate one.
        let (ring, consumer) = Ring::new(policy.capacity, Record::HOT_BYTES, Record::with_capacity);
        let counters = Arc::new(Counters::default());
        let sleep = Arc::new(Sleep::default());
        let room = Arc::new(Room::default());
        let (control, requests) = unbounded();
        let worker = worker::spawn(
            &name,
            consumer,
            requests,
            counters.clone(),
            room.clone(),
            sleep.clone(),
            layout,
            sink,
        )?;
        Ok(Appender {
            writer: worker.thread().clone(),
            sleep,
            wake_depth: (ring.capacity() / 2).max(1),
            discarding_limit: policy.discarding_limit() as u64,
            labels: AppenderLabels::named(&name),
            name,
            threshold,
            include_caller,
            policy,
            ring,
            counters,
            room,
            control,
            worker: Mutex::new(Some(worker)),
            throttle: None,
        })
    }

    /// Lets at most one event a `period` through (DropWizard's `messageRate`); the others
    /// are dropped and counted. A zero period lets every event through.
    #[must_use]
    pub fn with_message_rate(mut self, period: Duration) -> Appender {
        self.throttle = (!period.is_zero()).then(|| Throttle {
            every: u64::try_from(period.as_nanos()).unwrap_or(u64::MAX),
            started: std::time::Instant::now(),
            next: std::sync::atomic::AtomicU64::new(0),
        });
        self
    }

    /// Gives the appender the labels its metrics carry (by default its name, cleaned, as
    /// its place; see [`labels`]).
    #[must_use]
    pub fn with_labels(mut self, labels: AppenderLabels) -> Appender {
        self.labels = labels;
        self
    }

    /// The appender's name, as in its counters.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The labels its metrics carry.
    pub fn labels(&self) -> &AppenderLabels {
        &self.labels
    }

    /// Whether an event of `level` passes this appender's threshold.
    #[inline]
    pub fn accepts(&self, level: &Level) -> bool {
        // tracing orders levels by verbosity: TRACE > DEBUG > ... > ERROR.
        *level <= self.threshold
    }

    /// Whether records should carry the source file and line.
    pub fn include_caller(&self) -> bool {
        self.include_caller
    }

    /// Queues a finished line of `level` at `time` (a request-log line, say), written by
    /// `write` into the record in its queue slot, under the appender's drop policy; layouts
    /// write it as it is (`Layout::Raw`, or a syslog header then the line). Returns whether
    /// it was queued. Only the level, time and line of the slot are touched: a line carries
    /// no fields, and the rest of the slot (last read by the writer thread, on another core)
    /// is left alone.
    ///
    /// ```
    /// use ferrowizard_logging::config::{AppenderFactory, ConsoleAppenderFactory};
    ///
    /// let console = AppenderFactory::Console(ConsoleAppenderFactory::default());
    /// let appender = ferrowizard_logging::start_raw_appender("example", &console, "svc")
    ///     .unwrap()
    ///     .unwrap();
    /// let now = std::time::SystemTime::now();
    /// let queued = appender.write_line(&tracing::Level::INFO, now, |line| {
    ///     line.push_str("GET / 200\n");
    /// });
    /// assert!(queued);
    /// appender.stop(std::time::Duration::from_secs(1));
    /// ```
    #[inline]
    pub fn write_line(
        &self,
        level: &Level,
        time: std::time::SystemTime,
        write: impl FnOnce(&mut crate::record::Text),
    ) -> bool {
        self.log(level, |record| record.set_line(*level, time, write))
    }

    /// Queues an event of `level`, captured by `fill` into the record in its queue slot
    /// (`fill` clears it first: it holds an earlier event), under the appender's drop policy. Returns whether it was queued; what is
    /// dropped is counted, and `fill` is not called for it (rendering an event only to
    /// discard it would waste the request thread's time exactly when the service is
    /// busiest). Panics only if `fill` does (the slot is published all the same).
    #[inline]
    pub fn log(&self, level: &Level, fill: impl FnOnce(&mut Record)) -> bool {
        let level = level_index(level);
        if let Some(throttle) = &self.throttle
            && !throttle.admit()
        {
            self.counters.dropped(level, 1);
            return false;
        }
        let discardable =
            level <= level_index(&Level::INFO) && self.policy.discarding_threshold > 0;
        let limit = if discardable {
            self.discarding_limit
        } else {
            u64::MAX
        };
        let mut claim = match self.ring.try_claim(limit) {
            Ok(claim) => claim,
            Err(Refused::Full(_)) if !discardable && !self.policy.never_block => {
                match self.wait_for_room() {
                    Some(claim) => claim,
                    None => {
                        self.counters.dropped(level, 1);
                        return false;
                    }
                }
            }
            // Full under the policy, or the writer has stopped: counted, never silently lost.
            Err(_) => {
                self.counters.dropped(level, 1);
                return false;
            }
        };
        let depth = claim.depth();
        // Its cache lines were last written on another core: ask for them now, so that they
        // arrive while `fill` does what needs no slot.
        claim.prefetch();
        {
            // Restores what it was (an event logged while capturing another is filling too)
            // also when `fill` panics (a `Debug` impl can).
            let _filling = Filling::enter();
            claim.fill(fill);
        }
        drop(claim);
        self.counters.depth(depth as usize);
        if depth >= self.wake_depth || self.sleep.writer_asleep() {
            self.writer.unpark();
        }
        true
    }

    /// Waits for a free slot (lossless appenders, WARN and ERROR). `None` when the writer
    /// is gone, or when this thread is filling another slot already (see `FILLING`).
    #[cold]
    fn wait_for_room(&self) -> Option<Claim<'_, Record>> {
        if FILLING.with(Cell::get) {
            return None;
        }
        self.counters.waited();
        self.room.wait(
            || match self.ring.try_claim(u64::MAX) {
                Ok(claim) => Some(Some(claim)),
                Err(Refused::Closed) => Some(None),
                Err(Refused::Full(_)) => None,
            },
            || self.writer.unpark(),
        )
    }

    /// Writes every record queued so far and flushes the destination, waiting at most
    /// `timeout`. Returns whether it finished in time.
    pub fn flush(&self, timeout: Duration) -> bool {
        let target = self.ring.tail();
        self.request(timeout, |ack| Control::Flush(target, ack))
    }

    /// Flushes, then stops the writer thread. Records submitted afterwards are dropped
    /// and counted.
    pub fn stop(&self, timeout: Duration) -> bool {
        let done = self.request(timeout, Control::Stop);
        if done
            && let Ok(mut w) = self.worker.lock()
            && let Some(handle) = w.take()
        {
            let _ = handle.join();
        }
        done
    }

    fn request(&self, timeout: Duration, control: impl FnOnce(Sender<()>) -> Control) -> bool {
        let deadline = Instant::now() + timeout;
        let (ack_tx, ack_rx) = bounded(1);
        if self.control.send(control(ack_tx)).is_err() {
            // The writer is gone: nothing is queued that it could still write.
            return self.ring.depth() == 0;
        }
        self.writer.unpark();
        ack_rx.recv_deadline(deadline).is_ok()
    }

    /// The appender's counters now.
    pub fn stats(&self) -> AppenderStats {
        AppenderStats::read(
            &self.name,
            &self.labels,
            &self.counters,
            self.ring.depth() as usize,
            self.policy.capacity,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::QueuePolicy;

    #[test]
    fn dropwizard_policy() {
        let p = QueuePolicy::new(256, -1, false);
        assert_eq!(p.discarding_threshold, 51);
        // 206 taken: 50 free, fewer than 51: TRACE/DEBUG/INFO go, WARN/ERROR stay.
        assert!(p.drops_by_level(0, 206) && p.drops_by_level(2, 206));
        assert!(!p.drops_by_level(3, 206) && !p.drops_by_level(4, 256));
        assert!(!p.drops_by_level(2, 205));
        assert_eq!(p.discarding_limit(), 206);
        let lossless = QueuePolicy::new(256, 0, false);
        assert!(!lossless.drops_by_level(0, 255));
        assert_eq!(lossless.discarding_limit(), 256);
        assert_eq!(QueuePolicy::new(8, 100, true).discarding_threshold, 8);
    }
}
