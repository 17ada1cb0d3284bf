//! The two hand-offs between the threads that log and an appender's writer in which one side
//! goes to sleep: the writer sleeping for good until a producer's claim wakes it ([`Sleep`]),
//! and a producer waiting for room until the writer frees some ([`Room`]).
//!
//! Each is a store-buffering pattern: one side raises a flag and then looks at the queue, the
//! other changes the queue and then looks at the flag; with SeqCst on both sides, one of the
//! two sees the other, so no wake-up is lost. `cfg(loom)` builds both on loom's primitives and
//! the tests at the bottom of this file model-check them with the real [`Ring`](super::ring)
//! over every interleaving; a lost wake-up shows there as a deadlock (loom's condition
//! variable never times out, so the writer's 10 ms safety net cannot hide one).
//!
//! loom regards SeqCst loads and stores as AcqRel (its README, "Unsupported features"), which
//! is too weak for store buffering; it does model SeqCst fences. In loom builds a SeqCst fence
//! therefore stands at each point where the real code relies on a SeqCst store being ordered
//! before a later SeqCst load ([`seqcst_point`]). The model checks the hand-offs' logic (who
//! looks at what, and when); the memory orderings themselves are argued at each site.

use std::sync::atomic::Ordering::SeqCst;
use std::time::Duration;

use crossbeam_utils::CachePadded;

use sync::{AtomicBool, AtomicUsize, Condvar, Mutex};

#[cfg(loom)]
mod sync {
    pub(super) use loom::sync::atomic::{AtomicBool, AtomicUsize, fence};
    pub(super) use loom::sync::{Condvar, Mutex};
    pub(super) use loom::thread::{park, yield_now as pause};
}

#[cfg(not(loom))]
mod sync {
    pub(super) use std::sync::atomic::{AtomicBool, AtomicUsize, fence};
    pub(super) use std::sync::{Condvar, Mutex};
    pub(super) use std::thread::park;

    /// What a waiting producer does when the room's lock is poisoned.
    pub(super) fn pause() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// Where the real code relies on SeqCst loads and stores ordering a store before a later
/// load: a SeqCst fence in loom builds (see the module's documentation), nothing otherwise.
#[inline(always)]
fn seqcst_point() {
    #[cfg(loom)]
    sync::fence(SeqCst);
}

/// The writer's sleep for good (after it has napped with nothing to do), and the producers'
/// look at it.
#[derive(Debug, Default)]
pub(crate) struct Sleep {
    asleep: CachePadded<AtomicBool>,
}

impl Sleep {
    /// A producer, after its claim (a SeqCst read-modify-write of the ring's `tail`): whether
    /// the writer may be asleep and must be unparked. Either this sees the writer's flag, or
    /// the writer's look at `tail` (after raising it) sees the claim.
    #[inline]
    pub(crate) fn writer_asleep(&self) -> bool {
        seqcst_point();
        self.asleep.load(SeqCst)
    }

    /// The writer: raises the flag, then parks unless `idle` (asked after the flag is up, and
    /// reading the ring's `tail` with SeqCst) says something has come.
    pub(crate) fn park_unless_busy(&self, idle: impl FnOnce() -> bool) {
        self.asleep.store(true, SeqCst);
        seqcst_point();
        if idle() {
            sync::park();
        }
        self.asleep.store(false, SeqCst);
    }
}

/// Producers waiting for a free slot, and the writer's signal that there is one.
#[derive(Debug, Default)]
pub(crate) struct Room {
    waiting: AtomicUsize,
    lock: Mutex<()>,
    freed: Condvar,
}

impl Room {
    /// The writer, after releasing slots (a SeqCst store of the ring's `head`): wakes the
    /// producers waiting for a slot, if any. Either this sees a waiter's count, or the
    /// waiter's look at `head` (after counting itself) sees the release.
    pub(crate) fn notify(&self) {
        seqcst_point();
        if self.waiting.load(SeqCst) > 0 {
            let _guard = self.lock.lock();
            self.freed.notify_all();
        }
    }

    /// A producer: counts itself a waiter, then tries `attempt` (which looks at the ring)
    /// until it gives an answer, calling `nudge` (wake the writer) before each wait. The
    /// waits are on a condition variable the writer signals after each batch it frees, with
    /// a 10 ms timeout as a safety net.
    pub(crate) fn wait<R>(
        &self,
        mut attempt: impl FnMut() -> Option<R>,
        mut nudge: impl FnMut(),
    ) -> R {
        self.waiting.fetch_add(1, SeqCst);
        // Against the writer's release of `head` and then load of `waiting`: one of the two
        // sees the other (the claims in `attempt` read `head` with Acquire only).
        sync::fence(SeqCst);
        let mut guard = self.lock.lock().ok();
        let answer = loop {
            if let Some(answer) = attempt() {
                break answer;
            }
            nudge();
            guard = match guard {
                Some(g) => self
                    .freed
                    .wait_timeout(g, Duration::from_millis(10))
                    .ok()
                    .map(|(g, _)| g),
                None => {
                    sync::pause();
                    None
                }
            };
        };
        drop(guard);
        self.waiting.fetch_sub(1, SeqCst);
        answer
    }
}

/// Model-checked over every interleaving under `--cfg loom`:
/// `RUSTFLAGS="--cfg loom" cargo test -p ferrowizard-logging --lib wake` (CI runs them).
#[cfg(all(test, loom))]
mod loom_tests {
    use super::super::ring::loom_tests::model;
    use super::super::ring::{Refused, Ring};
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    /// A producer's claim against the writer going to sleep: the writer either sees the
    /// claim before it parks, or the producer sees it asleep and unparks it. Either way the
    /// value is read; a lost wake-up leaves the writer parked for ever, which loom reports.
    ///
    /// Catches: the writer parking without looking at `tail` after raising its flag (or
    /// looking before it), and a producer that does not look at the flag after its claim.
    #[test]
    fn a_sleeping_writer_is_woken_by_a_claim() {
        model(|| {
            let (ring, mut consumer) = Ring::new(2, 8, || 0u8);
            let sleep = Arc::new(Sleep::default());
            let writer = {
                let sleep = sleep.clone();
                thread::spawn(move || {
                    loop {
                        if let Some(v) = consumer.pop(|v| *v) {
                            assert_eq!(v, 7);
                            return;
                        }
                        let ring = consumer.ring().clone();
                        let position = consumer.position();
                        sleep.park_unless_busy(|| ring.tail() == position);
                        // Claimed but not yet published: look again.
                        thread::yield_now();
                    }
                })
            };
            let mut claim = ring.try_claim(2).expect("room");
            claim.fill(|v| *v = 7);
            drop(claim);
            if sleep.writer_asleep() {
                writer.thread().unpark();
            }
            writer.join().unwrap();
        });
    }

    /// A producer waiting for room against the writer freeing it: the producer either sees
    /// the release before it waits, or the writer sees it waiting and signals. A lost
    /// wake-up leaves the producer waiting for ever (loom's waits have no timeout).
    ///
    /// Catches: `notify` not looking at `waiting` after the release (or not signalling), and
    /// a producer that counts itself a waiter only after its look at the ring.
    #[test]
    fn a_waiting_producer_is_woken_when_room_is_freed() {
        model(|| {
            let (ring, mut consumer) = Ring::new(1, 8, || 0u8);
            let room = Arc::new(Room::default());
            ring.try_claim(1).expect("room").fill(|v| *v = 1);
            let producer = {
                let (ring, room) = (ring.clone(), room.clone());
                thread::spawn(move || {
                    let claimed = room.wait(
                        || match ring.try_claim(1) {
                            Ok(mut c) => {
                                c.fill(|v| *v = 2);
                                Some(true)
                            }
                            Err(Refused::Closed) => Some(false),
                            Err(Refused::Full(_)) => None,
                        },
                        || {},
                    );
                    assert!(claimed);
                })
            };
            while consumer.pop(|v| assert_eq!(*v, 1)).is_none() {
                thread::yield_now();
            }
            consumer.release();
            room.notify();
            producer.join().unwrap();
            assert_eq!(consumer.pop(|v| *v), Some(2));
        });
    }
}
