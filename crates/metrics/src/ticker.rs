//! The background thread that keeps system-clock meters' moving averages ticking.
//!
//! One thread per process, started by the first [`Meter::new`](crate::Meter::new). Every
//! second it ticks each live meter that needs it (see `meter.rs` for why marks do not). It holds
//! meters weakly, so a dropped meter is forgotten at the next pass, and it sleeps the rest of
//! the time: a pass costs one clock read and one uncontended lock per meter.

use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};
use std::time::Duration;

/// What the ticker ticks: a meter's shared state.
pub(crate) trait Tick: Send + Sync {
    /// Folds the intervals that ended since the last tick into the moving averages.
    fn tick_if_necessary(&self);
}

/// How often the ticker looks. A meter ticks when more than 5 s passed since its last tick, so
/// a tick is at most this late, and at most this much of the next interval's events is counted
/// into the one that just ended.
const PERIOD: Duration = Duration::from_secs(1);

static METERS: OnceLock<Mutex<Vec<Weak<dyn Tick>>>> = OnceLock::new();

/// Has the ticker tick `meter` from now on.
pub(crate) fn register(meter: &Arc<dyn Tick>) {
    let meters = METERS.get_or_init(|| {
        // If the thread cannot be started, meters still tick whenever their rates are read;
        // only events of intervals nobody read get lumped into the next read's first tick.
        // Worse numbers, not wrong behaviour: carry on.
        let _ = std::thread::Builder::new()
            .name("ferrowizard-metrics-ticker".into())
            .spawn(run);
        Mutex::new(Vec::new())
    });
    let mut meters = lock(meters);
    // The ticker forgets dropped meters on every pass; should it not be running, forget them
    // here instead, now and then, so the list cannot grow with every meter ever made.
    if meters.len() >= 64 && meters.len().is_power_of_two() {
        meters.retain(|m| m.strong_count() > 0);
    }
    meters.push(Arc::downgrade(meter));
}

fn lock(meters: &Mutex<Vec<Weak<dyn Tick>>>) -> std::sync::MutexGuard<'_, Vec<Weak<dyn Tick>>> {
    meters.lock().unwrap_or_else(PoisonError::into_inner)
}

fn run() {
    loop {
        std::thread::sleep(PERIOD);
        let Some(meters) = METERS.get() else {
            continue;
        };
        // Upgrade under the lock, tick outside it, so `register` never waits on a pass.
        let live: Vec<Arc<dyn Tick>> = {
            let mut meters = lock(meters);
            meters.retain(|m| m.strong_count() > 0);
            meters.iter().filter_map(Weak::upgrade).collect()
        };
        for meter in live {
            meter.tick_if_necessary();
        }
    }
}
