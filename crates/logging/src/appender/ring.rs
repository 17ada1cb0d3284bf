//! The queue between the threads that log and an appender's writer: a bounded ring of slots,
//! each owning one value (a [`Record`](crate::record::Record)) for good.
//!
//! Why it is hand-built, and why it is the one place in this crate with `unsafe`:
//!
//! - **Capture in place.** A request thread claims a slot and renders its event straight into
//!   the record the slot owns; the writer formats it from there. Nothing is moved, boxed or
//!   returned to a pool, so an event touches only the slot's few cache lines. A channel of
//!   boxed records (`crossbeam-channel` plus a pool of records in a `crossbeam-queue`) moves
//!   each record through three shared queues (BENCHMARKS.md, "Logging hot path");
//!   `crossbeam_queue::ArrayQueue` moves values in and out by copy and checks each slot's
//!   stamp on both sides, which reads a line the other core wrote last on every event.
//! - **The writer publishes its position in batches** (every [`RELEASE_EVERY`] values, and
//!   whenever it runs dry), so a request thread reads one shared word that changes once per
//!   batch, not a slot stamp the writer just wrote.
//! - **The depth is `tail - head`**, which is exactly what logback's `discardingThreshold`
//!   needs: the policy is decided before anything is captured.
//!
//! Sharing a slot's value between a producer and the consumer without a lock needs
//! `UnsafeCell`; the protocol (below, at each `unsafe`) makes the two never overlap. It is
//! Vyukov's bounded queue with a single consumer. `cfg(loom)` builds it on loom's atomics and
//! cells, and the tests at the bottom of this file are then model-checked over every
//! interleaving: `RUSTFLAGS="--cfg loom" cargo test -p ferrowizard-logging --lib ring`
//! (CI runs them).
#![allow(unsafe_code)]

use std::sync::Arc;

use crossbeam_utils::CachePadded;

use sync::{AtomicU64, Ordering, UnsafeCell};

#[cfg(loom)]
mod sync {
    pub(super) use loom::cell::UnsafeCell;
    pub(super) use loom::sync::atomic::{AtomicU64, Ordering};
}

#[cfg(not(loom))]
mod sync {
    pub(super) use std::sync::atomic::{AtomicU64, Ordering};

    /// `std`'s cell with loom's access methods, so that the ring reads the same on both.
    #[derive(Debug)]
    pub(super) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(super) fn new(value: T) -> Self {
            UnsafeCell(std::cell::UnsafeCell::new(value))
        }
        pub(super) fn with<R>(&self, f: impl FnOnce(*const T) -> R) -> R {
            f(self.0.get())
        }
        pub(super) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

/// How many slots ahead of the one just filled a producer asks for the next lines it will
/// write: a line the writer's core read last takes longer to come than one event takes to
/// capture, and a request logs its lines in a burst.
const PREFETCH_AHEAD: u64 = 2;

/// Set in `tail` once the consumer has closed: no claim succeeds after that.
const CLOSED: u64 = 1 << 63;

/// The consumer makes the slots it read available again at least this often.
pub(crate) const RELEASE_EVERY: u64 = 32;

#[repr(C)]
struct Slot<T> {
    /// `index + 1` once the producer that claimed `index` has filled the value.
    stamp: AtomicU64,
    value: UnsafeCell<T>,
}

/// A bounded multi-producer, single-consumer ring of values filled in place.
pub(crate) struct Ring<T> {
    /// The next index to claim, with [`CLOSED`] once the consumer is gone.
    tail: CachePadded<AtomicU64>,
    /// Every index below this is free to claim again. Read by every producer on every
    /// event, written by the consumer once per batch: a cache line of its own.
    head: CachePadded<AtomicU64>,
    slots: Box<[CachePadded<Slot<T>>]>,
    mask: u64,
    capacity: u64,
    /// Cache lines at the front of a slot that a producer writes (see [`Ring::prefetch`]).
    hot_lines: usize,
}

// SAFETY: a slot's value is reached only through a `Claim` (by the one producer whose
// compare-exchange on `tail` returned its index, before it publishes the stamp) or through
// the `Consumer` (after the stamp is published, before `head` passes the index). The two
// windows never overlap; see `try_claim` and `Consumer::pop`. Values are sent between
// threads, hence `T: Send`.
unsafe impl<T: Send> Sync for Ring<T> {}
// SAFETY: as above; the ring owns its values.
unsafe impl<T: Send> Send for Ring<T> {}

impl<T> std::fmt::Debug for Ring<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &self.capacity)
            .field("depth", &self.depth())
            .finish()
    }
}

impl<T> Ring<T> {
    /// A ring of `capacity` values made by `init`, and its one consumer. A producer writes
    /// the first `hot_bytes` of a value, typically (see [`Ring::prefetch`]).
    pub(crate) fn new(
        capacity: usize,
        hot_bytes: usize,
        mut init: impl FnMut() -> T,
    ) -> (Arc<Ring<T>>, Consumer<T>) {
        let capacity = capacity.max(1) as u64;
        let size = capacity.next_power_of_two();
        let slots = (0..size)
            .map(|_| {
                CachePadded::new(Slot {
                    stamp: AtomicU64::new(0),
                    value: UnsafeCell::new(init()),
                })
            })
            .collect();
        let ring = Arc::new(Ring {
            tail: CachePadded::new(AtomicU64::new(0)),
            head: CachePadded::new(AtomicU64::new(0)),
            slots,
            mask: size - 1,
            capacity,
            hot_lines: (std::mem::offset_of!(Slot<T>, value) + hot_bytes)
                .div_ceil(64)
                .min(std::mem::size_of::<CachePadded<Slot<T>>>() / 64),
        });
        let consumer = Consumer {
            ring: ring.clone(),
            position: 0,
            released: 0,
        };
        (ring, consumer)
    }

    /// How many values the ring holds at most.
    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Values claimed and not yet released by the consumer (an upper bound while it reads).
    pub(crate) fn depth(&self) -> u64 {
        let tail = self.tail.load(Ordering::Relaxed) & !CLOSED;
        tail.saturating_sub(self.head.load(Ordering::Relaxed))
    }

    /// Every index claimed so far is below this.
    pub(crate) fn tail(&self) -> u64 {
        self.tail.load(Ordering::SeqCst) & !CLOSED
    }

    /// Asks the CPU to bring slot `index`'s hot cache lines here, for writing: the next claim
    /// will likely be that slot, and the writer thread (another core) read it last, so
    /// without this the first stores into it wait for the lines to come back. Only the lines
    /// a typical value writes: the rest of a slot (a long text's buffer) would take the
    /// lines from the writer's cache and from this core's for nothing.
    #[inline]
    fn prefetch(&self, index: u64) {
        #[cfg(all(target_arch = "x86_64", not(loom)))]
        {
            let slot = &self.slots[(index & self.mask) as usize];
            let start = (slot as *const CachePadded<Slot<T>>).cast::<i8>();
            for line in 0..self.hot_lines {
                // SAFETY: a prefetch is a hint with no effect on memory or program state, and
                // the address is inside the slot anyway.
                unsafe {
                    std::arch::asm!("prefetchw [{0}]", in(reg) start.wrapping_add(line * 64), options(nostack, preserves_flags, readonly))
                };
            }
        }
        #[cfg(not(all(target_arch = "x86_64", not(loom))))]
        let _ = (index, self.hot_lines);
    }

    /// Claims the next slot when fewer than `limit` values are queued.
    #[inline]
    pub(crate) fn try_claim(&self, limit: u64) -> Result<Claim<'_, T>, Refused> {
        let limit = limit.min(self.capacity);
        let mut tail = self.tail.load(Ordering::Relaxed);
        loop {
            if tail & CLOSED != 0 {
                return Err(Refused::Closed);
            }
            // Acquire: pairs with the consumer's release of `head`, so that its reads of the
            // slot's previous value happen before this producer's writes.
            let head = self.head.load(Ordering::Acquire);
            // `head` may be newer than `tail`; the compare-exchange below then fails.
            let depth = tail.saturating_sub(head);
            if depth >= limit {
                return Err(Refused::Full(depth));
            }
            // Claims and `close` are read-modify-writes of `tail`, so they are totally
            // ordered: a claim either precedes the close (and the consumer drains it) or
            // sees `CLOSED`. SeqCst (free on x86: every locked instruction is a full fence)
            // so that a producer's later SeqCst load of the writer's `sleeping` flag and the
            // writer's SeqCst store of it and load of `tail` cannot both miss each other.
            match self.tail.compare_exchange_weak(
                tail,
                tail + 1,
                Ordering::SeqCst,
                Ordering::Relaxed,
            ) {
                // `tail - head < capacity <= slots`: the slot's previous value, index
                // `tail - slots`, is below `head`, so the consumer is done with it.
                Ok(_) => {
                    return Ok(Claim {
                        ring: self,
                        index: tail,
                        depth: depth + 1,
                    });
                }
                Err(now) => tail = now,
            }
        }
    }
}

/// A claimed slot: fill it, then drop the claim to hand the value to the consumer.
pub(crate) struct Claim<'a, T> {
    ring: &'a Ring<T>,
    index: u64,
    depth: u64,
}

impl<T> Claim<'_, T> {
    /// Asks the CPU to bring the slot's cache lines here, for writing.
    #[inline]
    pub(crate) fn prefetch(&self) {
        self.ring.prefetch(self.index);
    }

    /// Runs `f` on the slot's value.
    #[inline]
    pub(crate) fn fill<R>(&mut self, f: impl FnOnce(&mut T) -> R) -> R {
        let slot = &self.ring.slots[(self.index & self.ring.mask) as usize];
        // SAFETY: this claim is the only one for `index` (the compare-exchange on `tail`
        // handed it out once), the consumer does not read the slot before the stamp says
        // `index + 1` (written when this claim drops), and it finished with the slot's
        // previous value before releasing `head` past it (checked in `try_claim`).
        slot.value.with_mut(|value| f(unsafe { &mut *value }))
    }

    /// Values queued, this one included, when it was claimed.
    pub(crate) fn depth(&self) -> u64 {
        self.depth
    }

    fn publish(&mut self) {
        let slot = &self.ring.slots[(self.index & self.ring.mask) as usize];
        // Release: the value's writes happen before the consumer's acquire of the stamp.
        slot.stamp.store(self.index + 1, Ordering::Release);
    }
}

impl<T> Drop for Claim<'_, T> {
    /// Hands the value to the consumer (also when filling it panicked: the consumer reads
    /// slots in order and would otherwise wait for this one for ever).
    #[inline]
    fn drop(&mut self) {
        self.publish();
        self.ring.prefetch(self.index + PREFETCH_AHEAD);
    }
}

/// Why a claim was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Refused {
    /// This many values are queued, at least the limit asked for.
    Full(u64),
    /// The consumer is gone.
    Closed,
}

/// The ring's one reader (the writer thread).
pub(crate) struct Consumer<T> {
    ring: Arc<Ring<T>>,
    /// The next index to read.
    position: u64,
    /// What `head` says.
    released: u64,
}

impl<T> std::fmt::Debug for Consumer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Consumer")
            .field("position", &self.position)
            .finish()
    }
}

impl<T> Consumer<T> {
    /// Runs `f` on the next value if its producer has published it.
    #[inline]
    pub(crate) fn pop<R>(&mut self, f: impl FnOnce(&T) -> R) -> Option<R> {
        {
            let slot = &self.ring.slots[(self.position & self.ring.mask) as usize];
            // Acquire: pairs with the producer's release of the stamp.
            if slot.stamp.load(Ordering::Acquire) != self.position + 1 {
                return None;
            }
            // SAFETY: the stamp says the producer of `position` has finished (it wrote the
            // stamp last), and no producer claims this slot again before `head` passes
            // `position`, which only `release` does, after this read.
            let r = slot.value.with(|value| f(unsafe { &*value }));
            self.position += 1;
            if self.position - self.released >= RELEASE_EVERY {
                self.release();
            }
            Some(r)
        }
    }

    /// Makes every slot read so far available to producers.
    pub(crate) fn release(&mut self) {
        if self.released != self.position {
            // SeqCst rather than Release: a producer about to wait counts itself a waiter
            // and then checks the depth; the writer releases and then checks for waiters.
            // One of the two sees the other.
            self.ring.head.store(self.position, Ordering::SeqCst);
            self.released = self.position;
        }
    }

    /// The next index to read: every value below it has been read.
    pub(crate) fn position(&self) -> u64 {
        self.position
    }

    /// Stops taking values: claims are refused from now on. Returns the index below which
    /// every claim succeeded; the consumer should still read up to it.
    pub(crate) fn close(&mut self) -> u64 {
        self.ring.tail.fetch_or(CLOSED, Ordering::AcqRel) & !CLOSED
    }

    /// The ring.
    pub(crate) fn ring(&self) -> &Arc<Ring<T>> {
        &self.ring
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn values_come_out_in_order_and_the_ring_fills() {
        let (ring, mut consumer) = Ring::new(3, 8, || 0u64);
        assert_eq!(ring.capacity(), 3);
        for i in 1..=3 {
            let mut claim = ring.try_claim(3).expect("room");
            assert_eq!(claim.depth(), i);
            claim.fill(|v| *v = i * 10);
        }
        // Three of three taken (the ring has four slots, but its capacity is three).
        assert_eq!(ring.try_claim(3).err(), Some(Refused::Full(3)));
        // Below a lower limit (a discarding threshold) too.
        assert_eq!(ring.try_claim(2).err(), Some(Refused::Full(3)));
        assert_eq!(consumer.pop(|v| *v), Some(10));
        // Read but not released: still counted.
        assert_eq!(ring.depth(), 3);
        consumer.release();
        assert_eq!(ring.depth(), 2);
        ring.try_claim(3).expect("room again").fill(|v| *v = 40);
        assert_eq!(consumer.pop(|v| *v), Some(20));
        assert_eq!(consumer.pop(|v| *v), Some(30));
        assert_eq!(consumer.pop(|v| *v), Some(40));
        assert_eq!(consumer.pop(|v| *v), None);
    }

    #[test]
    fn an_unpublished_claim_holds_back_the_values_after_it() {
        let (ring, mut consumer) = Ring::new(4, 8, || 0u32);
        let mut first = ring.try_claim(4).expect("room");
        ring.try_claim(4).expect("room").fill(|v| *v = 2);
        assert_eq!(consumer.pop(|v| *v), None, "the first is not published yet");
        first.fill(|v| *v = 1);
        drop(first);
        assert_eq!(consumer.pop(|v| *v), Some(1));
        assert_eq!(consumer.pop(|v| *v), Some(2));
    }

    #[test]
    fn claims_after_close_are_refused() {
        let (ring, mut consumer) = Ring::new(4, 8, || 0u32);
        ring.try_claim(4).expect("room").fill(|v| *v = 1);
        assert_eq!(consumer.close(), 1, "drain up to index 1");
        assert_eq!(ring.try_claim(4).err(), Some(Refused::Closed));
        assert_eq!(ring.tail(), 1);
        assert_eq!(consumer.pop(|v| *v), Some(1));
        assert_eq!(consumer.pop(|v| *v), None);
    }

    #[test]
    fn four_producers_each_in_order_none_lost() {
        const PER: u64 = 20_000;
        let (ring, mut consumer) = Ring::new(64, 8, || (0usize, 0u64));
        let producers: Vec<_> = (0..4)
            .map(|p| {
                let ring = ring.clone();
                std::thread::spawn(move || {
                    for i in 0..PER {
                        loop {
                            if let Ok(mut claim) = ring.try_claim(64) {
                                claim.fill(|v| *v = (p, i));
                                break;
                            }
                            std::thread::yield_now();
                        }
                    }
                })
            })
            .collect();
        let mut next = [0u64; 4];
        let mut seen = 0;
        while seen < 4 * PER {
            match consumer.pop(|v| *v) {
                Some((p, i)) => {
                    assert_eq!(i, next[p], "producer {p} out of order");
                    next[p] += 1;
                    seen += 1;
                }
                None => {
                    consumer.release();
                    std::thread::yield_now();
                }
            }
        }
        for p in producers {
            p.join().expect("producer");
        }
        assert_eq!(next, [PER; 4]);
    }
}

/// Model-checked over every interleaving under `--cfg loom`.
#[cfg(all(test, loom))]
pub(super) mod loom_tests {
    use super::*;
    use loom::thread;

    /// Every interleaving with at most three preemptions: enough for the races here (a
    /// claim against a release, two claims against each other) and still quick.
    pub(in crate::appender) fn model(f: impl Fn() + Sync + Send + 'static) {
        let mut builder = loom::model::Builder::new();
        builder.preemption_bound = Some(3);
        builder.check(f);
    }

    /// Two producers and one slot, so that each claim races with the consumer's release of
    /// the other's: each value arrives once and intact, and loom's cells check that a slot
    /// is never written while the consumer reads it.
    #[test]
    fn two_producers_one_slot() {
        model(|| {
            let (ring, mut consumer) = Ring::new(1, 8, || (0u8, 0u8));
            let producers: Vec<_> = (1..=2u8)
                .map(|p| {
                    let ring = ring.clone();
                    thread::spawn(move || {
                        loop {
                            if let Ok(mut c) = ring.try_claim(1) {
                                c.fill(|v| *v = (p, p * 10));
                                break;
                            }
                            thread::yield_now();
                        }
                    })
                })
                .collect();
            let mut seen = [false; 2];
            while seen != [true; 2] {
                match consumer.pop(|v| *v) {
                    Some((p, v)) => {
                        assert_eq!(v, p * 10, "intact");
                        assert!(!seen[p as usize - 1], "once");
                        seen[p as usize - 1] = true;
                        consumer.release();
                    }
                    None => thread::yield_now(),
                }
            }
            for p in producers {
                p.join().unwrap();
            }
        });
    }

    /// A claim racing with `close` is either drained or refused.
    #[test]
    fn close_races_with_a_claim() {
        model(|| {
            let (ring, mut consumer) = Ring::new(2, 8, || 0u8);
            let producer = {
                let ring = ring.clone();
                thread::spawn(move || match ring.try_claim(2) {
                    Ok(mut c) => {
                        c.fill(|v| *v = 7);
                        true
                    }
                    Err(refused) => {
                        assert_eq!(refused, Refused::Closed);
                        false
                    }
                })
            };
            let drain_to = consumer.close();
            let mut read = 0;
            while consumer.position() < drain_to {
                if consumer.pop(|v| assert_eq!(*v, 7)).is_some() {
                    read += 1;
                } else {
                    thread::yield_now();
                }
            }
            let reached = producer.join().unwrap();
            assert_eq!(reached, read == 1, "a claim that succeeds is read");
        });
    }
}
