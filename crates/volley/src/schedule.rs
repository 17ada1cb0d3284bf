//! When a scenario's users come: its injection steps as a lazy sequence of [`Event`]s.
//!
//! The engine walks a [`Plan`] in time order, sleeping to each event and then starting it,
//! so a plan of any length costs the same few words of memory: a 10 h run at 1,000 users a
//! second is 36 M arrivals, none of which exists before it is due. Counts are exact (a
//! `rampUsers: 20` plans 20 users, a `constantUsersPerSec: 40, during: 1s` 40), randomized
//! arrivals included. A [`Sharded`] plan is one generator's part of it (`--shard`).

use std::time::Duration;

use crate::scenario::{Injection, Shape};
use crate::shard::Shard;

/// One thing to start, at an offset from the scenario's start.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    /// An open-model user, due at this offset. Its response times count from then, however
    /// late the generator gets round to starting it.
    Arrival(Duration),
    /// A closed-model slot: from `start`, it starts a new user whenever its last one has
    /// finished, until `end` (a user started before `end` runs to completion).
    Slot {
        /// When the slot becomes busy.
        start: Duration,
        /// When it stops starting users.
        end: Duration,
    },
}

impl Event {
    /// When the event is due, from the scenario's start.
    pub fn at(&self) -> Duration {
        match self {
            Event::Arrival(at) => *at,
            Event::Slot { start, .. } => *start,
        }
    }
}

/// Open-model users planned by `steps` in all (closed-model users are not known ahead), for
/// the console's progress bar. Computed, not counted: O(steps). A shard's are
/// [`Shard::share`] of them.
pub fn open_users(steps: &[Injection]) -> u64 {
    steps
        .iter()
        .filter_map(|s| s.shape().ok())
        .map(|shape| match shape {
            Shape::AtOnce(n) | Shape::Ramp(n, _) => u64::from(n),
            Shape::Rate(r1, r2, d) => Rate::new(r1, r2, d).count,
            Shape::Nothing(_) | Shape::Concurrent(..) | Shape::RampConcurrent(..) => 0,
        })
        .sum()
}

/// The arrival times of a rate going linearly from `r1` to `r2` users a second over a span.
#[derive(Clone, Copy, Debug)]
struct Rate {
    r1: f64,
    r2: f64,
    /// The length in seconds, and as it was given.
    span: f64,
    length: Duration,
    /// `floor(∫ rate)`: the users it plans.
    count: u64,
}

impl Rate {
    fn new(r1: f64, r2: f64, d: Duration) -> Rate {
        let span = d.as_secs_f64();
        Rate {
            r1,
            r2,
            span,
            length: d,
            count: ((r1 + r2) / 2.0 * span).floor() as u64,
        }
    }

    /// The time t (s) with ∫0^t rate = k.
    fn at(&self, k: f64) -> f64 {
        let a = (self.r2 - self.r1) / (2.0 * self.span);
        if a.abs() < 1e-12 || !a.is_finite() {
            if self.r1 > 0.0 {
                k / self.r1
            } else {
                self.span
            }
        } else {
            (-self.r1 + (self.r1 * self.r1 + 4.0 * a * k).max(0.0).sqrt()) / (2.0 * a)
        }
    }
}

/// How the users of the step in progress are spread.
#[derive(Clone, Copy, Debug)]
enum Spread {
    /// All at the step's start.
    AtOnce,
    /// Evenly over a span: user k of n at `span · k / n`.
    Even(Duration),
    /// Following a rate; `randomized` draws each within its own slot of the rate.
    Rate(Rate, bool),
    /// Closed-model slots busy from `from` to `to` concurrent users over a span: slot i is
    /// busy while `i < round(from + (to - from) · t / span)`.
    Slots { from: u32, to: u32, span: Duration },
}

/// The step in progress: event `next` of `count`, from `start`.
#[derive(Clone, Copy, Debug)]
struct Cursor {
    start: Duration,
    next: u64,
    count: u64,
    spread: Spread,
}

/// Closed-model slots planned by `steps` (each concurrent step's largest count): the slots
/// a plan's events hold. O(steps).
pub fn closed_slots(steps: &[Injection]) -> u64 {
    steps
        .iter()
        .filter_map(|s| s.shape().ok())
        .map(|shape| match shape {
            Shape::Concurrent(n, _) => u64::from(n),
            Shape::RampConcurrent(from, to, _) => u64::from(from.max(to)),
            Shape::AtOnce(..) | Shape::Ramp(..) | Shape::Rate(..) | Shape::Nothing(_) => 0,
        })
        .sum()
}

/// A scenario's injection, one event at a time, in time order.
///
/// Its state is the step in progress and a counter in it: O(1) in the number of users.
#[derive(Clone, Debug)]
pub struct Plan<'a> {
    steps: std::slice::Iter<'a, Injection>,
    /// Where the next step starts, from the scenario's start.
    phase_start: Duration,
    cursor: Option<Cursor>,
    /// The randomized arrivals' generator, shared by every step as one sequence (seeded: a
    /// scenario's arrival times are the same run after run).
    rng: fastrand::Rng,
}

impl<'a> Plan<'a> {
    /// The plan of `steps` (steps that are invalid were refused when the file was loaded;
    /// here they are skipped).
    pub fn new(steps: &'a [Injection]) -> Plan<'a> {
        Plan {
            steps: steps.iter(),
            phase_start: Duration::ZERO,
            cursor: None,
            rng: fastrand::Rng::with_seed(0x2545_F491_4F6C_DD1D),
        }
    }

    /// The events of `shard` only: see [`Sharded`].
    pub fn shard(self, shard: Shard) -> Sharded<'a> {
        self.shard_after(shard, 0, 0)
    }

    /// [`shard`](Self::shard) for a scenario after others whose plans hold `arrivals` and
    /// `slots`: its events continue their count, so that N scenarios of one user each go to
    /// N shards, not all to shard 0.
    pub fn shard_after(self, shard: Shard, arrivals: u64, slots: u64) -> Sharded<'a> {
        Sharded {
            plan: self,
            shard,
            arrivals,
            slots,
        }
    }

    /// Moves to the next step that has events; false when there is none.
    fn advance(&mut self) -> bool {
        for step in self.steps.by_ref() {
            let Ok(shape) = step.shape() else { continue };
            let start = self.phase_start;
            let (count, spread, length) = match shape {
                Shape::AtOnce(n) => (u64::from(n), Spread::AtOnce, Duration::ZERO),
                Shape::Ramp(n, d) => (u64::from(n), Spread::Even(d), d),
                Shape::Rate(r1, r2, d) => {
                    let rate = Rate::new(r1, r2, d);
                    (rate.count, Spread::Rate(rate, step.randomized), d)
                }
                Shape::Nothing(d) => (0, Spread::AtOnce, d),
                Shape::Concurrent(n, d) => (
                    u64::from(n),
                    Spread::Slots {
                        from: n,
                        to: n,
                        span: d,
                    },
                    d,
                ),
                Shape::RampConcurrent(from, to, d) => (
                    u64::from(from.max(to)),
                    Spread::Slots { from, to, span: d },
                    d,
                ),
            };
            self.phase_start = self.phase_start.saturating_add(length);
            if count > 0 {
                self.cursor = Some(Cursor {
                    start,
                    next: 0,
                    count,
                    spread,
                });
                return true;
            }
        }
        false
    }
}

/// The window of closed-model slot `i` when busy slots go from `from` to `to` over `span`:
/// slot i is busy while `i < round(from + (to - from) · t / span)`, so the count is `from`
/// at the start, `to` at the end, and moves by one at each half-way crossing.
fn slot_window(i: u32, from: u32, to: u32, span: Duration) -> (Duration, Duration) {
    let (i, a, b) = (f64::from(i), f64::from(from), f64::from(to));
    if i < a.min(b) {
        (Duration::ZERO, span)
    } else if a < b {
        // Ramp up: busy from when the count passes i + ½.
        (
            span.mul_f64(((i + 0.5 - a) / (b - a)).clamp(0.0, 1.0)),
            span,
        )
    } else {
        // Ramp down: busy until the count falls below i + ½.
        (
            Duration::ZERO,
            span.mul_f64(((a - i - 0.5) / (a - b)).clamp(0.0, 1.0)),
        )
    }
}

impl Iterator for Plan<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        loop {
            if let Some(c) = &mut self.cursor
                && c.next < c.count
            {
                let (k, n, start, spread) = (c.next, c.count, c.start, c.spread);
                c.next += 1;
                return Some(match spread {
                    Spread::AtOnce => Event::Arrival(start),
                    Spread::Even(d) => {
                        Event::Arrival(start.saturating_add(d.mul_f64(k as f64 / n as f64)))
                    }
                    Spread::Rate(rate, randomized) => {
                        // Randomized: anywhere within the user's own slot of the rate, so
                        // the count stays exact and the order stays the time order.
                        let jitter = if randomized { self.rng.f64() } else { 0.0 };
                        let t = rate.at(k as f64 + jitter).clamp(0.0, rate.span);
                        // `try_`: a rate's arithmetic is finite here, but a panic is no answer.
                        let t = Duration::try_from_secs_f64(t).unwrap_or(rate.length);
                        Event::Arrival(start.saturating_add(t))
                    }
                    Spread::Slots { from, to, span } => {
                        let i = u32::try_from(k).unwrap_or(u32::MAX);
                        let (s, e) = slot_window(i, from, to, span);
                        Event::Slot {
                            start: start.saturating_add(s),
                            end: start.saturating_add(e),
                        }
                    }
                });
            }
            if !self.advance() {
                self.cursor = None;
                return None;
            }
        }
    }
}

/// One shard's part of a [`Plan`]: the arrivals whose index among the plan's arrivals is
/// ≡ i (mod N), and the same of its closed-model slots, each at its time in the whole plan.
///
/// The N shards' events are therefore the whole plan's, each once: their arrivals add up to
/// the plan's (a `rampUsers: 10` over 3 shards is 4 + 3 + 3), and their busy slots to the
/// plan's at every moment. The whole plan is walked (randomized arrivals draw their times
/// from one sequence), which is arithmetic: a shard sleeps only to its own events.
///
/// ```
/// use volley::schedule::{Event, Plan};
/// use volley::shard::Shard;
///
/// let steps = vec![volley::scenario::Injection {
///     at_once_users: Some(10),
///     ..Default::default()
/// }];
/// let of3 = |i| Shard::parse(&format!("{i}/3"), None).unwrap();
/// let counts: Vec<usize> = (0..3).map(|i| Plan::new(&steps).shard(of3(i)).count()).collect();
/// assert_eq!(counts, [4, 3, 3]);
/// ```
#[derive(Clone, Debug)]
pub struct Sharded<'a> {
    plan: Plan<'a>,
    shard: Shard,
    /// Arrivals, and slots, of the whole plan so far.
    arrivals: u64,
    slots: u64,
}

impl Iterator for Sharded<'_> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        if self.shard.is_whole() {
            return self.plan.next();
        }
        self.plan.by_ref().find(|event| {
            let counter = match event {
                Event::Arrival(_) => &mut self.arrivals,
                Event::Slot { .. } => &mut self.slots,
            };
            let k = *counter;
            *counter += 1;
            self.shard.keeps(k)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn injection(yaml: &str) -> Vec<Injection> {
        ferrowizard_config::Loader::new()
            .load_str("test.yaml", yaml)
            .unwrap()
    }

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn open_steps_plan_exactly_their_users_in_time_order() {
        let steps = injection(
            "- atOnceUsers: 30\n- rampUsers: 20\n  during: 1s\n- nothingFor: 2s\n\
             - constantUsersPerSec: 40\n  during: 1s\n  randomized: true\n\
             - rampUsersPerSec: 10\n  to: 30\n  during: 2s\n",
        );
        let events: Vec<Event> = Plan::new(&steps).collect();
        assert_eq!(events.len(), 30 + 20 + 40 + 40);
        assert_eq!(open_users(&steps), 130);
        assert!(events.iter().all(|e| matches!(e, Event::Arrival(_))));
        assert!(
            events.windows(2).all(|w| w[0].at() <= w[1].at()),
            "in order"
        );
        assert!(events[..30].iter().all(|e| e.at() == Duration::ZERO));
        assert_eq!(events[30].at(), Duration::ZERO);
        assert_eq!(events[31].at(), secs(0.05));
        // The rate steps start after the ramp (1 s) and the pause (2 s).
        let randomized = &events[50..90];
        assert!(
            randomized
                .iter()
                .all(|e| e.at() >= secs(3.0) && e.at() <= secs(4.0))
        );
        assert!(
            randomized
                .iter()
                .any(|e| !(e.at() - secs(3.0)).as_micros().is_multiple_of(25_000)),
            "randomized arrivals are not on the even grid"
        );
        let ramp = &events[90..];
        assert!(
            ramp.iter()
                .all(|e| e.at() >= secs(4.0) && e.at() <= secs(6.0))
        );
        // From 10/s to 30/s: a quarter of the users in the first half of the ramp.
        let first_half = ramp.iter().filter(|e| e.at() < secs(5.0)).count();
        assert_eq!(first_half, 15);
    }

    #[test]
    fn closed_steps_plan_one_slot_per_user_with_its_window() {
        let steps = injection(
            "- constantConcurrentUsers: 2\n  during: 1s\n\
             - rampConcurrentUsers: 0\n  to: 4\n  during: 4s\n\
             - rampConcurrentUsers: 4\n  to: 1\n  during: 3s\n",
        );
        let events: Vec<Event> = Plan::new(&steps).collect();
        let slot = |s: f64, e: f64| Event::Slot {
            start: secs(s),
            end: secs(e),
        };
        assert_eq!(
            events,
            vec![
                slot(0.0, 1.0),
                slot(0.0, 1.0),
                // Up from 0 to 4 over 4 s: slot i busy from i + ½ s.
                slot(1.5, 5.0),
                slot(2.5, 5.0),
                slot(3.5, 5.0),
                slot(4.5, 5.0),
                // Down from 4 to 1 over 3 s: slot 0 throughout, slot i until 3.5 - i s.
                slot(5.0, 8.0),
                slot(5.0, 7.5),
                slot(5.0, 6.5),
                slot(5.0, 5.5),
            ]
        );
        assert_eq!(open_users(&steps), 0);
    }

    /// The shards of a plan are the plan: every arrival and slot once, at its time, the
    /// arrivals counted ahead as they come.
    ///
    /// Catches: arrivals and slots counted together (a plan's slots then fall to shards by
    /// how many arrivals came before them), a randomized step drawing its own times per
    /// shard (the union is then not the plan), a shard's planned users rounded the same way
    /// for every shard.
    #[test]
    fn scenarios_after_others_continue_their_count() {
        let one = injection("[{atOnceUsers: 1}]");
        let slot = injection("[{constantConcurrentUsers: 1, during: 1s}]");
        let of3 = |i| Shard::parse(&format!("{i}/3"), None).unwrap();
        // Three scenarios of one user, and three of one slot: one of each on every shard.
        for i in 0..3 {
            let users: usize = (0..3)
                .map(|s| Plan::new(&one).shard_after(of3(i), s, 0).count())
                .sum();
            let slots: usize = (0..3)
                .map(|s| Plan::new(&slot).shard_after(of3(i), 0, s).count())
                .sum();
            assert_eq!((users, slots), (1, 1), "shard {i}");
        }
    }

    #[test]
    fn the_shards_of_a_plan_add_up_to_the_plan() {
        let steps = injection(
            "- atOnceUsers: 4\n- rampUsers: 10\n  during: 1s\n\
             - constantUsersPerSec: 7\n  during: 1s\n  randomized: true\n\
             - constantConcurrentUsers: 5\n  during: 1s\n\
             - rampUsersPerSec: 2\n  to: 6\n  during: 2s\n\
             - rampConcurrentUsers: 1\n  to: 3\n  during: 2s\n",
        );
        let whole: Vec<Event> = Plan::new(&steps).collect();
        let arrivals = |events: &[Event]| {
            events
                .iter()
                .filter(|e| matches!(e, Event::Arrival(_)))
                .count() as u64
        };
        assert_eq!(arrivals(&whole), open_users(&steps));
        assert_eq!(open_users(&steps), 4 + 10 + 7 + 8);
        assert_eq!(whole.len() as u64 - arrivals(&whole), 5 + 3);
        assert_eq!(closed_slots(&steps), 5 + 3);
        assert_eq!(
            Plan::new(&steps).shard(Shard::WHOLE).collect::<Vec<_>>(),
            whole
        );
        for count in [2u32, 3, 4] {
            let shards: Vec<Vec<Event>> = (0..count)
                .map(|i| {
                    let shard = Shard::parse(&format!("{i}/{count}"), None).unwrap();
                    let events: Vec<Event> = Plan::new(&steps).shard(shard).collect();
                    assert_eq!(
                        arrivals(&events),
                        shard.share(open_users(&steps)),
                        "shard {shard}: its planned users"
                    );
                    assert!(events.windows(2).all(|w| w[0].at() <= w[1].at()));
                    events
                })
                .collect();
            // The shards' events together, in the plan's order: the plan itself.
            let mut union: Vec<Event> = shards.concat();
            union.sort_by(|a, b| a.at().cmp(&b.at()).then(key(a).cmp(&key(b))));
            let mut expected = whole.clone();
            expected.sort_by(|a, b| a.at().cmp(&b.at()).then(key(a).cmp(&key(b))));
            assert_eq!(union, expected, "{count} shards");
            // Busy slots add up at every moment: slot k is shard k mod N's.
            let slots: Vec<&Event> = whole
                .iter()
                .filter(|e| matches!(e, Event::Slot { .. }))
                .collect();
            for (i, events) in shards.iter().enumerate() {
                let own: Vec<&Event> = events
                    .iter()
                    .filter(|e| matches!(e, Event::Slot { .. }))
                    .collect();
                let expected: Vec<&Event> = slots
                    .iter()
                    .copied()
                    .skip(i)
                    .step_by(count as usize)
                    .collect();
                assert_eq!(own, expected, "shard {i}/{count}'s slots");
            }
        }
        // rampUsers: 10 over 3 shards is 4 + 3 + 3.
        let ramp = injection("- rampUsers: 10\n  during: 1s\n");
        let counts: Vec<usize> = (0..3)
            .map(|i| {
                let shard = Shard::parse(&format!("{i}/3"), None).unwrap();
                Plan::new(&ramp).shard(shard).count()
            })
            .collect();
        assert_eq!(counts, [4, 3, 3]);
    }

    /// A total order on events at one time, for comparing sets of them.
    fn key(e: &Event) -> (u8, Duration) {
        match e {
            Event::Arrival(_) => (0, Duration::ZERO),
            Event::Slot { end, .. } => (1, *end),
        }
    }

    #[test]
    fn a_long_plan_is_walked_without_being_built() {
        // 10 h at 1,000 users a second: 36 M arrivals. The plan's size does not depend on
        // them; walking it is arithmetic (see tests/plan_memory.rs for the heap).
        let steps = injection("- constantUsersPerSec: 1000\n  during: 10h\n");
        assert_eq!(open_users(&steps), 36_000_000);
        let mut plan = Plan::new(&steps);
        assert_eq!(plan.next(), Some(Event::Arrival(Duration::ZERO)));
        assert_eq!(plan.next(), Some(Event::Arrival(secs(0.001))));
        let last = plan.nth(36_000_000 - 3).unwrap();
        assert!(
            (last.at().as_secs_f64() - 36_000.0).abs() < 0.01,
            "{last:?}"
        );
        assert_eq!(plan.next(), None);
    }
}
