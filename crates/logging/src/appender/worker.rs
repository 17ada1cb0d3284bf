//! The writer thread: drains the queue, formats, writes in batches.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;

use crossbeam_channel::{Receiver, Sender, TryRecvError};
use crossbeam_queue::ArrayQueue;

use super::Msg;
use super::stats::{Counters, level_index};
use crate::layout::Layout;
use crate::record::Record;
use crate::sink::Sink;

/// A batch is written once it holds this many bytes, or when the queue is empty.
const BATCH_BYTES: usize = 64 * 1024;

/// How long the writer naps when the queue is empty, and how many naps before it sleeps
/// until woken.
const NAP: Duration = Duration::from_millis(1);
const IDLE_NAPS: u32 = 100;

/// Write errors are reported on stderr at most this often.
const ERROR_REPORT_INTERVAL: Duration = Duration::from_secs(60);

pub(crate) fn spawn(
    name: &str,
    rx: Receiver<Msg>,
    pool: Arc<ArrayQueue<Box<Record>>>,
    counters: Arc<Counters>,
    sleeping: Arc<AtomicBool>,
    layout: Layout,
    sink: Box<dyn Sink>,
) -> std::io::Result<JoinHandle<()>> {
    let mut worker = Worker {
        name: name.to_owned(),
        rx,
        pool,
        counters,
        sleeping,
        layout,
        sink,
        batch: Vec::with_capacity(BATCH_BYTES * 2),
        line_ends: Vec::with_capacity(1024),
        levels: [0; 5],
        acks: Vec::new(),
        stop: false,
        last_report: None,
        unreported: 0,
    };
    std::thread::Builder::new()
        .name(format!("ferrowizard-log-writer {name}"))
        .spawn(move || worker.run())
}

struct Worker {
    name: String,
    rx: Receiver<Msg>,
    pool: Arc<ArrayQueue<Box<Record>>>,
    counters: Arc<Counters>,
    /// Set while the writer sleeps until woken (rather than napping).
    sleeping: Arc<AtomicBool>,
    layout: Layout,
    sink: Box<dyn Sink>,
    batch: Vec<u8>,
    line_ends: Vec<usize>,
    /// Lines in the batch, per level.
    levels: [u64; 5],
    acks: Vec<Sender<()>>,
    stop: bool,
    last_report: Option<Instant>,
    /// Lines lost to write errors since the last report.
    unreported: u64,
}

impl Worker {
    /// Writes batches until told to stop or every sender is gone.
    ///
    /// The writer does not block on the channel: a sender that finds the receiver blocked
    /// must wake it with a system call, and under load that would be paid on every few
    /// events by a request thread. Instead the writer naps (1 ms) when the queue is empty,
    /// and request threads wake it only when the queue is half full, when it is asleep for
    /// good (after 100 ms idle), or to flush.
    fn run(&mut self) {
        let mut naps = 0;
        loop {
            match self.rx.try_recv() {
                Ok(msg) => {
                    naps = 0;
                    self.take(msg);
                    self.drain_batch();
                    if self.stop {
                        break;
                    }
                }
                Err(TryRecvError::Disconnected) => break,
                Err(TryRecvError::Empty) if naps < IDLE_NAPS => {
                    naps += 1;
                    std::thread::park_timeout(NAP);
                }
                Err(TryRecvError::Empty) => {
                    self.sleeping.store(true, SeqCst);
                    if self.rx.is_empty() {
                        std::thread::park();
                    }
                    self.sleeping.store(false, SeqCst);
                    naps = 0;
                }
            }
        }
        // The queue is closed or we were told to stop: whatever is still queued is
        // written too, so that nothing accepted is lost.
        while let Ok(msg) = self.rx.try_recv() {
            self.take(msg);
            if self.batch.len() >= BATCH_BYTES {
                self.write_batch();
            }
        }
        self.write_batch();
        let _ = self.sink.flush();
        for ack in self.acks.drain(..) {
            let _ = ack.send(());
        }
    }

    /// Takes what is queued (up to a batch), writes it, and answers flushes.
    fn drain_batch(&mut self) {
        while self.batch.len() < BATCH_BYTES && self.acks.is_empty() {
            match self.rx.try_recv() {
                Ok(msg) => self.take(msg),
                Err(_) => break,
            }
        }
        self.write_batch();
        if !self.acks.is_empty() {
            if let Err(e) = self.sink.flush() {
                self.report(&e, 0);
            }
            for ack in self.acks.drain(..) {
                let _ = ack.send(());
            }
        }
    }

    fn take(&mut self, msg: Msg) {
        match msg {
            Msg::Record(record) => {
                self.layout.format(&record, &mut self.batch);
                self.line_ends.push(self.batch.len());
                self.levels[level_index(&record.level)] += 1;
                let _ = self.pool.push(record);
            }
            Msg::Flush(ack) => self.acks.push(ack),
            Msg::Stop(ack) => {
                self.acks.push(ack);
                self.stop = true;
            }
        }
    }

    fn write_batch(&mut self) {
        if self.line_ends.is_empty() {
            return;
        }
        match self.sink.write(&self.batch, &self.line_ends) {
            Ok(()) => {
                for (level, n) in self.levels.iter().enumerate() {
                    self.counters.written(level, *n);
                }
            }
            Err(e) => {
                self.counters.write_error();
                for (level, n) in self.levels.iter().enumerate() {
                    self.counters.dropped(level, *n);
                }
                self.report(&e, self.line_ends.len() as u64);
            }
        }
        self.batch.clear();
        self.line_ends.clear();
        self.levels = [0; 5];
    }

    /// Tells stderr about write errors, at most once a minute, with the lines lost since.
    fn report(&mut self, e: &std::io::Error, lost: u64) {
        self.unreported += lost;
        let due = self
            .last_report
            .is_none_or(|t| t.elapsed() >= ERROR_REPORT_INTERVAL);
        if due {
            eprintln!(
                "ferrowizard-logging: appender {} ({}): write failed: {e}; {} lines dropped since the last report; retrying",
                self.name,
                self.sink.describe(),
                self.unreported
            );
            self.last_report = Some(Instant::now());
            self.unreported = 0;
        }
    }
}
