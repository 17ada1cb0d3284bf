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
//! - the request thread takes a recycled [`Record`] from a pool (no allocation once the
//!   pool is warm), renders the message into it, and sends it on a bounded
//!   `crossbeam-channel` of `queueSize` slots ([`Appender::submit`]);
//! - when fewer than `discardingThreshold` slots are free, TRACE/DEBUG/INFO records are
//!   dropped and counted; WARN and above wait for a slot, unless `neverBlock` drops them too;
//! - the writer thread ([`worker`]) formats records in batches and writes each batch with
//!   one call, then returns the records to the pool.
//!
//! Formatting happens on the writer thread: `BENCHMARKS.md` records the comparison
//! (formatting the whole line on the caller costs the request thread more).

pub mod stats;
pub(crate) mod worker;

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

use crossbeam_channel::{Sender, TrySendError, bounded};
use crossbeam_queue::ArrayQueue;
use tracing::Level;

use crate::layout::Layout;
use crate::record::Record;
use crate::sink::Sink;
use stats::{AppenderStats, Counters, level_index};

/// What travels from the request threads to the writer.
pub(crate) enum Msg {
    Record(Box<Record>),
    /// Write everything before this, flush the destination, then answer.
    Flush(Sender<()>),
    /// Like `Flush`, then stop the writer.
    Stop(Sender<()>),
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

    /// Whether an event of level index `level` (0 TRACE .. 4 ERROR) is dropped when
    /// `depth` slots are taken, before trying to queue it.
    #[inline]
    pub fn drops_by_level(&self, level: usize, depth: usize) -> bool {
        let free = self.capacity.saturating_sub(depth);
        level <= level_index(&Level::INFO) && free < self.discarding_threshold
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
    threshold: Level,
    include_caller: bool,
    policy: QueuePolicy,
    tx: Sender<Msg>,
    pool: Arc<ArrayQueue<Box<Record>>>,
    counters: Arc<Counters>,
    /// The writer thread, woken when the queue is half full or it sleeps for good.
    writer: Thread,
    sleeping: Arc<AtomicBool>,
    wake_depth: usize,
    worker: Mutex<Option<JoinHandle<()>>>,
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
        let (tx, rx) = bounded(policy.capacity);
        // Every record that can be in flight exists from the start, with room for a typical
        // event: the request threads never allocate one.
        let pool = Arc::new(ArrayQueue::new(policy.capacity + 64));
        for _ in 0..policy.capacity + 64 {
            let _ = pool.push(Box::new(Record::with_capacity()));
        }
        let counters = Arc::new(Counters::default());
        let sleeping = Arc::new(AtomicBool::new(false));
        let worker = worker::spawn(
            &name,
            rx,
            pool.clone(),
            counters.clone(),
            sleeping.clone(),
            layout,
            sink,
        )?;
        Ok(Appender {
            writer: worker.thread().clone(),
            sleeping,
            wake_depth: (policy.capacity / 2).max(1),
            name,
            threshold,
            include_caller,
            policy,
            tx,
            pool,
            counters,
            worker: Mutex::new(Some(worker)),
        })
    }

    /// The appender's name, as in its counters.
    pub fn name(&self) -> &str {
        &self.name
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

    /// An empty record, recycled when one is free.
    #[inline]
    pub fn record(&self) -> Box<Record> {
        match self.pool.pop() {
            Some(mut r) => {
                r.clear();
                r
            }
            None => Box::default(),
        }
    }

    /// Drops an event of `level` before it is captured if the queue is too full to take it
    /// (counted as emitted and dropped): rendering an event only to discard it would waste
    /// the request thread's time exactly when the service is busiest. Returns whether it
    /// was dropped.
    #[inline]
    pub fn drop_early(&self, level: &Level) -> bool {
        let level = level_index(level);
        let depth = self.tx.len();
        let full = self.policy.never_block && depth >= self.policy.capacity;
        if full || self.policy.drops_by_level(level, depth) {
            self.counters.emitted(level);
            self.counters.dropped(level, 1);
            return true;
        }
        false
    }

    /// Queues a record under the appender's drop policy. Never panics; what is dropped is
    /// counted.
    #[inline]
    pub fn submit(&self, record: Box<Record>) {
        let level = level_index(&record.level);
        self.counters.emitted(level);
        let depth = self.tx.len();
        self.counters.depth(depth + 1);
        if self.policy.drops_by_level(level, depth) {
            self.drop_record(record, level);
            return;
        }
        let msg = Msg::Record(record);
        let result = if self.policy.never_block {
            self.tx.try_send(msg).map_err(|e| match e {
                TrySendError::Full(m) | TrySendError::Disconnected(m) => m,
            })
        } else {
            self.tx.send(msg).map_err(|e| e.0)
        };
        match result {
            Err(Msg::Record(r)) => self.drop_record(r, level),
            _ => {
                if depth + 1 >= self.wake_depth || self.sleeping.load(SeqCst) {
                    self.writer.unpark();
                }
            }
        }
    }

    fn drop_record(&self, record: Box<Record>, level: usize) {
        self.counters.dropped(level, 1);
        let _ = self.pool.push(record);
    }

    /// Writes every record queued so far and flushes the destination, waiting at most
    /// `timeout`. Returns whether it finished in time.
    pub fn flush(&self, timeout: Duration) -> bool {
        self.request(timeout, Msg::Flush)
    }

    /// Flushes, then stops the writer thread. Records submitted afterwards are dropped
    /// and counted.
    pub fn stop(&self, timeout: Duration) -> bool {
        let done = self.request(timeout, Msg::Stop);
        if done
            && let Ok(mut w) = self.worker.lock()
            && let Some(handle) = w.take()
        {
            let _ = handle.join();
        }
        done
    }

    fn request(&self, timeout: Duration, msg: fn(Sender<()>) -> Msg) -> bool {
        let deadline = Instant::now() + timeout;
        let (ack_tx, ack_rx) = bounded(1);
        if self.tx.send_deadline(msg(ack_tx), deadline).is_err() {
            return false;
        }
        self.writer.unpark();
        ack_rx.recv_deadline(deadline).is_ok()
    }

    /// The appender's counters now.
    pub fn stats(&self) -> AppenderStats {
        AppenderStats::read(
            &self.name,
            &self.counters,
            self.tx.len(),
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
        let lossless = QueuePolicy::new(256, 0, false);
        assert!(!lossless.drops_by_level(0, 256));
        assert_eq!(QueuePolicy::new(8, 100, true).discarding_threshold, 8);
    }
}
