//! The logging hot path: what an event costs the thread that logs it.
//!
//! `cargo bench -p ferrowizard-logging --bench hot_path`. Each function prints, after it
//! ran, how many of its events were written and how many dropped: with DropWizard's default
//! queue a caller that logs faster than the writer writes sees INFO events dropped by
//! design (logback's discardingThreshold), and tracing-appender's default drops too.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::{AppenderFactory, FileAppenderFactory};
use ferrowizard_logging::layout::pattern::PatternLayout;
use ferrowizard_logging::record::Record;
use tracing::Dispatch;

fn file_factory(dir: &std::path::Path, name: &str, lossless: bool) -> LoggingFactory {
    let appender = FileAppenderFactory {
        current_log_filename: Some(dir.join(name).display().to_string()),
        archive: false,
        discarding_threshold: if lossless { 0 } else { -1 },
        ..Default::default()
    };
    LoggingFactory {
        appenders: vec![AppenderFactory::File(appender)],
        ..Default::default()
    }
}

fn event(i: u64) {
    tracing::info!(symbol = "ACME", price = 101.25, seq = i, "quote updated");
}

/// Benchmarks `event` under a pipeline built from `factory`, then prints its counters.
fn bench_pipeline(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    factory: &LoggingFactory,
) {
    let (logging, subscriber) = factory.build("bench").expect("build");
    let dispatch = Dispatch::new(subscriber);
    let mut i = 0u64;
    tracing::dispatcher::with_default(&dispatch, || {
        group.bench_function(name, |b| {
            b.iter(|| {
                i += 1;
                event(black_box(i))
            })
        });
    });
    let t = logging.shutdown(Duration::from_secs(60))[0].total();
    eprintln!(
        "{name}: {} events, {} written, {} dropped",
        t.emitted, t.written, t.dropped
    );
}

fn enabled(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("enabled_info_3_fields");

    // DropWizard's default queue, to a file: when the caller outruns the writer, INFO
    // events are dropped (logback's discardingThreshold) before they are rendered.
    bench_pipeline(
        &mut group,
        "ferrowizard",
        &file_factory(dir.path(), "ferrowizard.log", false),
    );

    // The same to /dev/null: the writer keeps up, (almost) nothing is dropped, so this is
    // the cost of an accepted event.
    let mut devnull = file_factory(dir.path(), "unused.log", false);
    if let AppenderFactory::File(f) = &mut devnull.appenders[0] {
        f.current_log_filename = Some("/dev/null".into());
    }
    bench_pipeline(&mut group, "ferrowizard_devnull", &devnull);

    // Lossless: bounded by how fast the writer writes.
    bench_pipeline(
        &mut group,
        "ferrowizard_lossless",
        &file_factory(dir.path(), "lossless.log", true),
    );

    let file = std::fs::File::create(dir.path().join("tracing.log")).expect("file");
    let (writer, guard) = tracing_appender::non_blocking(file);
    let counter = writer.error_counter();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .finish();
    let dispatch = Dispatch::new(subscriber);
    let mut i = 0u64;
    tracing::dispatcher::with_default(&dispatch, || {
        group.bench_function("tracing_fmt_nonblocking", |b| {
            b.iter(|| {
                i += 1;
                event(black_box(i))
            })
        });
    });
    drop(guard);
    eprintln!(
        "tracing_fmt_nonblocking: {} lines dropped",
        counter.dropped_lines()
    );
    group.finish();
}

fn disabled(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("disabled_debug");
    let (logging, subscriber) = file_factory(dir.path(), "disabled.log", false)
        .build("bench")
        .expect("build");
    let dispatch = Dispatch::new(subscriber);
    tracing::dispatcher::with_default(&dispatch, || {
        group.bench_function("ferrowizard", |b| {
            b.iter(|| {
                tracing::debug!(
                    symbol = "ACME",
                    price = 101.25,
                    seq = black_box(1u64),
                    "quote updated"
                )
            })
        });
    });
    logging.shutdown(Duration::from_secs(10));
    group.finish();
}

/// The work the writer does per line, i.e. what formatting on the caller would add to it.
fn format(c: &mut Criterion) {
    let mut group = c.benchmark_group("writer_side");
    let mut layout = PatternLayout::new(
        ferrowizard_logging::config::DEFAULT_LOG_FORMAT,
        &jiff::tz::TimeZone::UTC,
    )
    .expect("pattern");
    let mut record = Record {
        target: "realtime::quotes",
        thread: "tokio-runtime-worker",
        message: "quote updated".into(),
        ..Record::default()
    };
    record.stamp();
    record.field_text.push_str("ACME101.2542");
    record
        .fields
        .extend([("symbol", 0..4), ("price", 4..10), ("seq", 10..12)]);
    let mut out = Vec::with_capacity(4096);
    group.bench_function("pattern_format_default", |b| {
        b.iter(|| {
            out.clear();
            record.time += 1_000_000;
            layout.format(black_box(&record), &mut out);
        })
    });
    group.finish();
}

/// Lines per second one writer sustains to a file: lossless, so every line is written.
fn writer_throughput(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("writer_throughput");
    group.sample_size(10);
    let (logging, subscriber) = file_factory(dir.path(), "throughput.log", true)
        .build("bench")
        .expect("build");
    let dispatch = Dispatch::new(subscriber);
    tracing::dispatcher::with_default(&dispatch, || {
        group.bench_function("ferrowizard_line", |b| {
            b.iter_custom(|n| {
                let start = Instant::now();
                for i in 0..n {
                    event(i);
                }
                logging.flush(Duration::from_secs(60));
                start.elapsed()
            })
        });
    });
    let stats = logging.shutdown(Duration::from_secs(60));
    let t = stats[0].total();
    eprintln!(
        "writer_throughput: {} lines written, {} dropped",
        t.written, t.dropped
    );
    group.finish();
}

criterion_group!(benches, enabled, disabled, format, writer_throughput);
criterion_main!(benches);
