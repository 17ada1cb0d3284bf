//! Meter and timer rates on a hand-moved clock, against DropWizard's `MeterTest`.

use std::sync::Arc;
use std::time::Duration;

use ferrowizard_metrics::{ManualClock, Meter, Timer};

fn close(actual: f64, expected: f64, tolerance: f64) -> bool {
    (actual - expected).abs() < tolerance
}

#[test]
fn starts_out_with_no_rates_or_count() {
    let clock = ManualClock::new();
    let meter = Meter::with_clock(Arc::new(clock.clone()));
    clock.advance(Duration::from_secs(10));
    assert_eq!(meter.count(), 0);
    assert_eq!(meter.mean_rate(), 0.0);
    assert_eq!(meter.one_minute_rate(), 0.0);
    assert_eq!(meter.five_minute_rate(), 0.0);
    assert_eq!(meter.fifteen_minute_rate(), 0.0);
}

#[test]
fn marks_events_and_updates_rates_and_count() {
    // DropWizard's MeterTest: mark() at t=0, mark(2) at t=10 s; expects mean 0.3/s, m1 0.1840,
    // m5 0.1966, m15 0.1988. There the 10 s tick happens inside mark(2) (before it counts);
    // here marks never tick, so the read at 10 s that a reader or the background ticker would
    // do stands in for it.
    let clock = ManualClock::new();
    let meter = Meter::with_clock(Arc::new(clock.clone()));
    meter.mark();
    clock.advance(Duration::from_secs(10));
    let _ = meter.one_minute_rate(); // the two 5 s intervals end: 1 event, then none
    meter.mark_n(2);

    assert_eq!(meter.count(), 3);
    assert!(close(meter.mean_rate(), 0.3, 0.001));
    assert!(
        close(meter.one_minute_rate(), 0.1840, 0.001),
        "{}",
        meter.one_minute_rate()
    );
    assert!(close(meter.five_minute_rate(), 0.1966, 0.001));
    assert!(close(meter.fifteen_minute_rate(), 0.1988, 0.001));
}

#[test]
fn a_steady_rate_converges_on_every_average() {
    // 10 events per second for 30 minutes, read just after each 5 s boundary (a tick is due
    // only once *more* than 5 s passed): every interval holds 50 events, so every average reads
    // 10/s from the first tick on.
    let clock = ManualClock::new();
    let meter = Meter::with_clock(Arc::new(clock.clone()));
    clock.advance(Duration::from_millis(1));
    for _ in 0..(30 * 12) {
        meter.mark_n(50);
        clock.advance(Duration::from_secs(5));
        let _ = meter.one_minute_rate();
    }
    assert!(close(meter.one_minute_rate(), 10.0, 1e-9));
    assert!(close(meter.five_minute_rate(), 10.0, 1e-9));
    assert!(close(meter.fifteen_minute_rate(), 10.0, 1e-9));
    assert!(close(meter.mean_rate(), 10.0, 1e-4));
}

#[test]
fn unread_intervals_are_caught_up_on_read() {
    // Nobody reads for a minute after a burst: the read ticks 12 intervals, the burst in the
    // first, so the one-minute average has decayed by (1 - alpha)^11 from the burst's rate.
    let clock = ManualClock::new();
    let meter = Meter::with_clock(Arc::new(clock.clone()));
    meter.mark_n(60);
    clock.advance(Duration::from_secs(60) + Duration::from_millis(1));
    let alpha = 1.0 - (-5.0f64 / 60.0).exp();
    let expected = 12.0 * (1.0 - alpha).powi(11);
    assert!(close(meter.one_minute_rate(), expected, 1e-9));
}

#[test]
fn a_timer_meters_its_calls() {
    let clock = ManualClock::new();
    let timer = Timer::with_clock(Arc::new(clock.clone()));
    timer.update(Duration::from_millis(10));
    clock.advance(Duration::from_secs(10));
    let _ = timer.one_minute_rate();
    timer.update(Duration::from_millis(20));
    timer.update(Duration::from_millis(30));
    assert_eq!(timer.count(), 3);
    assert!(close(timer.mean_rate(), 0.3, 0.001));
    assert!(close(timer.one_minute_rate(), 0.1840, 0.001));
    assert_eq!(timer.sum(), Duration::from_millis(60));
}

#[test]
fn a_system_clock_meter_is_ticked_in_the_background() {
    // 50 events in the interval [0, 5 s), 50 more at 7.5 s in [5 s, 10 s), no read until
    // 12.5 s. The background ticker folds each batch into its own interval: two ticks at
    // 10 events/s read 10/s. Were the meter ticked only by this late read, both batches would
    // land in the first interval (20/s) and the second tick would decay it to 20 * (1 - alpha).
    let meter = Meter::new();
    meter.mark_n(50);
    std::thread::sleep(Duration::from_millis(7500));
    meter.mark_n(50);
    std::thread::sleep(Duration::from_millis(5000));
    let rate = meter.one_minute_rate();
    assert!(close(rate, 10.0, 1e-6), "one-minute rate {rate}, not 10/s");
}
