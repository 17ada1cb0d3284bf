//! The decaying reservoir, weighted snapshots (against DropWizard's `WeightedSnapshotTest`),
//! and timers' durations.

use std::sync::Arc;
use std::time::Duration;

use ferrowizard_metrics::{
    Histogram, InvalidQuantile, ManualClock, RESERVOIR_SIZE, Snapshot, Timer,
};

#[test]
fn the_reservoir_keeps_at_most_1028_samples() {
    let histogram = Histogram::new();
    for i in 0..10_000 {
        histogram.update(i);
    }
    assert_eq!(histogram.reservoir_len(), RESERVOIR_SIZE);
    let snapshot = histogram.snapshot();
    assert_eq!(snapshot.count(), 10_000);
    assert_eq!(snapshot.size(), RESERVOIR_SIZE);
    assert!(snapshot.values().iter().all(|v| (0..10_000).contains(v)));
    assert_eq!(histogram.sum(), (0..10_000).sum::<i64>() as f64);
}

#[test]
fn a_reservoir_with_room_keeps_everything() {
    let histogram = Histogram::new();
    for i in 0..100 {
        histogram.update(i);
    }
    assert_eq!(histogram.reservoir_len(), 100);
    let snapshot = histogram.snapshot();
    assert_eq!(snapshot.min(), 0.0);
    assert_eq!(snapshot.max(), 99.0);
}

#[test]
fn recent_samples_dominate_after_rescales() {
    // Two hours of 177 at one a second (rescaled at 1 h and 2 h), then ten minutes of 9999:
    // the last ten minutes weigh e^(0.015 * 600) ≈ 8100 times the first sample of the hour, so
    // every quantile from the median up is 9999 (DropWizard's "spot lift" test, on our clock).
    let clock = ManualClock::new();
    let histogram = Histogram::with_clock(Arc::new(clock.clone()));
    for _ in 0..(2 * 3600) {
        histogram.update(177);
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(histogram.snapshot().median(), 177.0);
    for _ in 0..600 {
        histogram.update(9999);
        clock.advance(Duration::from_secs(1));
    }
    let snapshot = histogram.snapshot();
    assert_eq!(snapshot.count(), 7800);
    assert!(histogram.reservoir_len() <= RESERVOIR_SIZE);
    assert_eq!(snapshot.median(), 9999.0);
    assert_eq!(snapshot.p75(), 9999.0);
    assert_eq!(snapshot.p999(), 9999.0);
    assert!(snapshot.mean() > 9000.0, "mean {}", snapshot.mean());
}

#[test]
fn old_samples_weigh_nothing_after_a_long_idle_rescale() {
    // Fifteen idle hours, then new values: the rescale multiplies the old weights by
    // e^(-0.015 * 54000), which is 0, and the snapshot does not turn that into NaN.
    let clock = ManualClock::new();
    let histogram = Histogram::with_clock(Arc::new(clock.clone()));
    for i in 0..100 {
        histogram.update(1000 + i);
        clock.advance(Duration::from_millis(100));
    }
    clock.advance(Duration::from_secs(15 * 3600));
    for _ in 0..10 {
        histogram.update(5000);
    }
    let snapshot = histogram.snapshot();
    assert_eq!(snapshot.median(), 5000.0);
    assert_eq!(snapshot.p75(), 5000.0);
    assert!(
        (snapshot.mean() - 5000.0).abs() < 1e-9,
        "mean {}",
        snapshot.mean()
    );
    assert!(snapshot.stddev().is_finite());
}

/// DropWizard's `WeightedSnapshotTest` sample: values 5, 1, 2, 3, 4 with weights 1, 2, 3, 2, 2.
fn dropwizard_sample() -> Snapshot {
    Snapshot::from_weighted([(5, 1.0), (1, 2.0), (2, 3.0), (3, 2.0), (4, 2.0)])
}

#[test]
fn weighted_quantiles_match_dropwizard() {
    let s = dropwizard_sample();
    assert_eq!(s.value(0.0), Ok(1.0));
    assert_eq!(s.value(1.0), Ok(5.0));
    assert_eq!(s.median(), 3.0);
    assert_eq!(s.p75(), 4.0);
    assert_eq!(s.p95(), 5.0);
    assert_eq!(s.p98(), 5.0);
    assert_eq!(s.p99(), 5.0);
    assert_eq!(s.p999(), 5.0);
    assert_eq!(s.values(), &[1, 2, 3, 4, 5]);
    assert_eq!(s.size(), 5);
}

#[test]
fn weighted_min_max_mean_and_stddev_match_dropwizard() {
    let s = dropwizard_sample();
    assert_eq!(s.min(), 1.0);
    assert_eq!(s.max(), 5.0);
    assert_eq!(s.mean(), 2.7);
    assert!((s.stddev() - 1.2688).abs() < 1e-4, "stddev {}", s.stddev());
}

#[test]
fn quantiles_follow_the_weights_not_the_sample_count() {
    // Nine tenths of the weight on 1: the median is 1, where an unweighted median of the two
    // values would lie between them.
    let s = Snapshot::from_weighted([(1, 9.0), (100, 1.0)]);
    assert_eq!(s.median(), 1.0);
    assert_eq!(s.p95(), 100.0);
    assert!((s.mean() - 10.9).abs() < 1e-12);
}

#[test]
fn quantiles_outside_zero_to_one_are_errors() {
    let s = dropwizard_sample();
    assert_eq!(s.value(-0.5), Err(InvalidQuantile(-0.5)));
    assert_eq!(s.value(1.5), Err(InvalidQuantile(1.5)));
    assert!(s.value(f64::NAN).is_err());
}

#[test]
fn empty_and_singleton_snapshots_are_zeros() {
    let empty = Snapshot::from_weighted([]);
    assert_eq!(empty.min(), 0.0);
    assert_eq!(empty.max(), 0.0);
    assert_eq!(empty.mean(), 0.0);
    assert_eq!(empty.stddev(), 0.0);
    assert_eq!(empty.median(), 0.0);
    let single = Snapshot::from_weighted([(1, 1.0)]);
    assert_eq!(single.stddev(), 0.0);
}

#[test]
fn tiny_and_zero_weights_do_not_overflow_or_make_nan() {
    let tiny = f64::from_bits(1); // Java's Double.MIN_VALUE
    let s = Snapshot::from_weighted([(1, tiny), (2, tiny), (3, tiny)]);
    assert_eq!(s.mean(), 2.0);
    let zero = Snapshot::from_weighted([(1, 0.0), (2, 0.0), (3, 0.0)]);
    assert_eq!(zero.mean(), 0.0);
    assert!(!zero.stddev().is_nan());
}

#[test]
fn a_timer_records_durations_in_nanoseconds() {
    let clock = ManualClock::new();
    let timer = Timer::with_clock(Arc::new(clock.clone()));
    let answer = timer.time(|| {
        clock.advance(Duration::from_millis(250));
        42
    });
    assert_eq!(answer, 42);
    {
        let _context = timer.start();
        clock.advance(Duration::from_millis(50));
    }
    let context = timer.start();
    clock.advance(Duration::from_millis(100));
    assert_eq!(context.stop(), Duration::from_millis(100));
    timer.update(Duration::from_secs(1));

    let s = timer.snapshot();
    assert_eq!(timer.count(), 4);
    assert_eq!(s.count(), 4);
    assert_eq!(s.min(), 50e6);
    assert_eq!(s.max(), 1e9);
    assert_eq!(timer.sum(), Duration::from_millis(1400));
}

#[test]
fn a_timed_call_that_panics_is_still_recorded() {
    let clock = ManualClock::new();
    let timer = Timer::with_clock(Arc::new(clock.clone()));
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        timer.time(|| {
            clock.advance(Duration::from_millis(7));
            panic!("handler failed");
        })
    }));
    assert!(result.is_err());
    assert_eq!(timer.count(), 1);
    assert_eq!(timer.snapshot().max(), 7e6);
}

#[test]
fn sums_outgrow_64_bits() {
    let histogram = Histogram::new();
    histogram.update(i64::MAX);
    histogram.update(i64::MAX);
    assert_eq!(histogram.sum(), 2.0 * i64::MAX as f64);

    // Two 200-year calls: more nanoseconds than an i64 holds.
    let timer = Timer::new();
    let long = Duration::from_secs(200 * 365 * 24 * 3600);
    timer.update(long);
    timer.update(long);
    assert_eq!(timer.sum(), long * 2);
}
