//! What recording costs the thread that records: one counter increment, meter mark, histogram
//! update and timer update, each from one thread through a handle (as a service keeps them),
//! plus the same counter through the `metrics` facade's macro.
//!
//! `cargo bench -p ferrowizard-metrics --bench record`. Goal: each at most 100 ns.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use ferrowizard_metrics::{FacadeRecorder, MetricRegistry};

fn record(c: &mut Criterion) {
    let registry = MetricRegistry::new();
    let counter = registry.counter("bench.counter").unwrap();
    let meter = registry.meter("bench.meter").unwrap();
    let histogram = registry.histogram("bench.histogram").unwrap();
    let timer = registry
        .timer_with(
            "bench.timer",
            &[("method", "GET"), ("route", "/quotes/{symbol}")],
        )
        .unwrap();

    c.bench_function("counter_inc", |b| b.iter(|| black_box(&counter).inc()));
    c.bench_function("meter_mark", |b| b.iter(|| black_box(&meter).mark()));
    let mut value = 0i64;
    c.bench_function("histogram_update", |b| {
        b.iter(|| {
            // Varying values, as real ones vary; the reservoir is full after the first 1028.
            value = (value + 7919) % 100_000;
            black_box(&histogram).update(black_box(value));
        })
    });
    let mut nanos = 0u64;
    c.bench_function("timer_update", |b| {
        b.iter(|| {
            nanos = (nanos + 7919) % 10_000_000;
            black_box(&timer).update(Duration::from_nanos(black_box(nanos)));
        })
    });

    let recorder = FacadeRecorder::new(&registry);
    metrics::with_local_recorder(&recorder, || {
        c.bench_function("facade_counter_increment", |b| {
            b.iter(|| metrics::counter!("bench.facade", "method" => "GET").increment(1))
        });
    });
}

criterion_group!(benches, record);
criterion_main!(benches);
