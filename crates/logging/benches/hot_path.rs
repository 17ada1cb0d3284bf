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
use ferrowizard_logging::record::{Record, Value};
use tracing::Dispatch;

fn file_factory(dir: &std::path::Path, name: &str, lossless: bool) -> LoggingFactory {
    let appender = FileAppenderFactory {
        common: ferrowizard_logging::config::AppenderCommon {
            discarding_threshold: if lossless { 0 } else { -1 },
            ..Default::default()
        },
        current_log_filename: Some(dir.join(name).display().to_string()),
        archive: false,
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

/// How events are thrown at the pipeline.
#[derive(Clone, Copy)]
enum Pace {
    /// As fast as the caller can.
    Flat,
    /// One per request's worth of work (see [`paced`]).
    Paced,
}

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

/// Benchmarks `event` under `dispatch`.
fn run(group: &mut Group<'_>, name: &str, dispatch: &Dispatch, pace: Pace) {
    let mut i = 0u64;
    let mut next = move || {
        i += 1;
        event(black_box(i))
    };
    tracing::dispatcher::with_default(dispatch, || {
        group.bench_function(name, |b| match pace {
            Pace::Flat => b.iter(&mut next),
            Pace::Paced => b.iter_custom(|n| paced(n, &mut next)),
        });
    });
}

/// Benchmarks `event` under a pipeline built from `factory`, then prints its counters.
fn bench_pipeline(group: &mut Group<'_>, name: &str, factory: &LoggingFactory, pace: Pace) {
    let (logging, subscriber) = factory.build("bench").expect("build");
    run(group, name, &Dispatch::new(subscriber), pace);
    let t = logging.shutdown(Duration::from_secs(60))[0].total();
    eprintln!(
        "{name}: {} events, {} written, {} dropped",
        t.emitted, t.written, t.dropped
    );
}

/// Benchmarks `event` under tracing-subscriber's fmt layer writing to `file` through
/// tracing-appender's non-blocking writer (its defaults), then prints what it dropped.
fn bench_tracing_fmt(group: &mut Group<'_>, name: &str, file: &std::path::Path, pace: Pace) {
    let file = std::fs::File::create(file).expect("file");
    let (writer, guard) = tracing_appender::non_blocking(file);
    let counter = writer.error_counter();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(writer)
        .with_ansi(false)
        .finish();
    run(group, name, &Dispatch::new(subscriber), pace);
    drop(guard);
    eprintln!("{name}: {} lines dropped", counter.dropped_lines());
}

fn enabled(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("enabled_info_3_fields");

    // DropWizard's default queue, to a file: when the caller outruns the writer, INFO
    // events are dropped (logback's discardingThreshold) before they are rendered.
    let ferrowizard = file_factory(dir.path(), "ferrowizard.log", false);
    bench_pipeline(&mut group, "ferrowizard", &ferrowizard, Pace::Flat);

    // The same to /dev/null: the writer is faster, fewer are dropped.
    let mut devnull = file_factory(dir.path(), "unused.log", false);
    if let AppenderFactory::File(f) = &mut devnull.appenders[0] {
        f.current_log_filename = Some("/dev/null".into());
    }
    bench_pipeline(&mut group, "ferrowizard_devnull", &devnull, Pace::Flat);

    // Lossless: bounded by how fast the writer writes.
    let lossless = file_factory(dir.path(), "lossless.log", true);
    bench_pipeline(&mut group, "ferrowizard_lossless", &lossless, Pace::Flat);

    let path = dir.path().join("tracing.log");
    bench_tracing_fmt(&mut group, "tracing_fmt_nonblocking", &path, Pace::Flat);
    group.finish();
}

/// About 400 ns of arithmetic the compiler cannot remove: a request's own work between
/// two events, so that the writer keeps up and every event is accepted.
fn work() -> u64 {
    let mut x = black_box(0x9E37_79B9_7F4A_7C15u64);
    for _ in 0..black_box(WORK_ROUNDS) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
    }
    x
}

const WORK_ROUNDS: u32 = 400;

/// Runs `body` `n` times, each after a request's worth of `work`, and returns the time spent
/// in `body` alone (timed with the clock around each call, so that what the work loop
/// suffers from the writer running on the other core is not charged to the event).
fn paced(n: u64, mut body: impl FnMut()) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..n {
        black_box(work());
        let start = Instant::now();
        body();
        total += start.elapsed();
    }
    total
}

/// A request of the logging cost curve (`bench/logcurve.sh`): 70 events back to back, as a
/// handler logs them, then about 7 µs of the request's own work. The whole request is timed,
/// so that what the events leave behind (stores still on their way to the slots' cache
/// lines, the caches the writer on the other core took) is charged to them; `work_only` is
/// the same loop without the events: subtract it and divide by 70.
fn burst(c: &mut Criterion) {
    const LINES: u64 = 70;
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("burst_70");
    let request = || {
        for _ in 0..WORK_ROUNDS_PER_REQUEST / WORK_ROUNDS {
            black_box(work());
        }
    };
    group.bench_function("work_only", |b| b.iter(request));
    let (logging, subscriber) = file_factory(dir.path(), "burst.log", true)
        .build("bench")
        .expect("build");
    let dispatch = Dispatch::new(subscriber);
    let mut request_id = 0u64;
    tracing::dispatcher::with_default(&dispatch, || {
        group.bench_function("ferrowizard_lossless", |b| {
            b.iter(|| {
                request_id += 1;
                for line in 0..LINES {
                    tracing::info!(target: "bench", request = black_box(request_id), line, user = "ada", "handled a step");
                }
                request();
            })
        });
    });
    let t = logging.shutdown(Duration::from_secs(60))[0].total();
    eprintln!(
        "burst_70: {} events, {} written, {} dropped",
        t.emitted, t.written, t.dropped
    );
    group.finish();
}

/// Rounds of [`work`] in a request of [`burst`]: about 7 µs.
const WORK_ROUNDS_PER_REQUEST: u32 = 3600;

/// What an accepted event costs the caller. Thrown flat out (`enabled_info_3_fields`), the
/// caller outruns the writer and most events take the early-drop path; paced by a request's
/// worth of work, the writer keeps up and (the printed counters show) nothing or next to
/// nothing is dropped. `empty` is the same loop timing nothing: subtract it.
fn accepted(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut group = c.benchmark_group("accepted_paced");
    group.bench_function("empty", |b| b.iter_custom(|n| paced(n, || ())));
    let factory = file_factory(dir.path(), "paced.log", false);
    bench_pipeline(&mut group, "ferrowizard", &factory, Pace::Paced);

    // The same pipeline installed as the process's subscriber, as a service runs it
    // (`Logging::install`): tracing then skips its thread-local lookup of a scoped
    // dispatcher. It stays installed for the rest of this process, which every other
    // function overrides with its own scoped one.
    let (logging, subscriber) = file_factory(dir.path(), "global.log", false)
        .build("bench")
        .expect("build");
    if tracing::subscriber::set_global_default(subscriber).is_ok() {
        let mut i = 0u64;
        group.bench_function("ferrowizard_global", |b| {
            b.iter_custom(|n| {
                paced(n, || {
                    i += 1;
                    event(black_box(i))
                })
            })
        });
        let t = logging.stats()[0].total();
        eprintln!(
            "ferrowizard_global: {} events, {} written, {} dropped",
            t.emitted, t.written, t.dropped
        );
    }
    let path = dir.path().join("tracing-paced.log");
    bench_tracing_fmt(&mut group, "tracing_fmt_nonblocking", &path, Pace::Paced);
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
    let mut record = Record::default();
    record.set_target("realtime::quotes");
    record.set_thread("tokio-runtime-worker");
    record.stamp();
    record.set_message(|m| m.push_str("quote updated"));
    record.push_str_field("symbol", "ACME");
    record.push_value("price", Value::F64(101.25));
    record.push_value("seq", Value::U64(42));
    let mut out = Vec::with_capacity(4096);
    group.bench_function("pattern_format_default", |b| {
        b.iter(|| {
            out.clear();
            record.set_time(record.time() + Duration::from_millis(1));
            layout.format(black_box(&record), &mut out);
        })
    });
    // A busy writer's case: a thousand lines a millisecond, from one logger and thread.
    group.bench_function("pattern_format_busy", |b| {
        b.iter(|| {
            out.clear();
            record.set_time(record.time() + Duration::from_micros(1));
            layout.format(black_box(&record), &mut out);
        })
    });
    // The logging cost curve's line (`bench/logcurve`): two integers and a short text.
    let mut curve = Record::default();
    curve.set_target("bench");
    curve.set_thread("tokio-runtime-worker");
    curve.set_message(|m| m.push_str("handled a step"));
    curve.push_value("request", Value::U64(123_456));
    curve.push_value("line", Value::U64(42));
    curve.push_str_field("user", "ada");
    group.bench_function("pattern_format_curve", |b| {
        b.iter(|| {
            out.clear();
            curve.set_time(curve.time() + Duration::from_micros(1));
            layout.format(black_box(&curve), &mut out);
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

criterion_group!(
    benches,
    enabled,
    accepted,
    disabled,
    format,
    writer_throughput,
    burst
);
criterion_main!(benches);
