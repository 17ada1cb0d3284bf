//! The request thread's side of an event allocates nothing once the pipeline is warm.
//! (Its own test binary: it installs a counting global allocator.)

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::{AppenderFactory, FileAppenderFactory};

struct Counting;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

// SAFETY: every call is forwarded unchanged to the system allocator; the counter is a side effect.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as our caller's.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as our caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn burst(n: u64) {
    for i in 0..n {
        tracing::info!(
            symbol = "ACME",
            price = 101.25,
            seq = i,
            ok = true,
            "quote updated"
        );
        tracing::warn!(target: "alloc::other", "second shape {}", i);
    }
}

#[test]
fn the_steady_path_allocates_nothing_on_the_calling_thread() {
    // The counter counts.
    COUNTING.with(|c| c.set(true));
    drop(std::hint::black_box(Vec::<u8>::with_capacity(16)));
    COUNTING.with(|c| c.set(false));
    assert_eq!(ALLOCATIONS.swap(0, Ordering::Relaxed), 1);

    let dir = tempfile::tempdir().unwrap();
    let appender = FileAppenderFactory {
        common: ferrowizard_logging::config::AppenderCommon {
            discarding_threshold: 0,
            queue_size: 4,
            ..Default::default()
        },
        current_log_filename: Some(dir.path().join("alloc.log").display().to_string()),
        archive: false,
        // A small queue: sends do wait for the writer, in the counted phase too.
        ..Default::default()
    };
    let factory = LoggingFactory {
        appenders: vec![AppenderFactory::File(appender)],
        ..Default::default()
    };
    let (logging, subscriber) = factory.build("alloc-test").unwrap();
    let dispatch = tracing::Dispatch::new(subscriber);
    tracing::dispatcher::with_default(&dispatch, || {
        // Warm up: every buffer reaches its working size.
        burst(20_000);
        assert!(logging.flush(Duration::from_secs(10)));
        COUNTING.with(|c| c.set(true));
        burst(20_000);
        COUNTING.with(|c| c.set(false));
    });
    let stats = logging.shutdown(Duration::from_secs(10));
    assert_eq!(stats[0].total().written, 80_000);
    // None per event. crossbeam allocates once per thread (its waiting context) and once
    // per channel (its list of waiting senders) the first time a send has to wait, which
    // may happen in the counted phase on a busy machine: at most those two.
    let allocations = ALLOCATIONS.load(Ordering::Relaxed);
    assert!(
        allocations <= 2,
        "{allocations} allocations for 40,000 events on the calling thread"
    );
}
