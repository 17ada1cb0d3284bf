//! The open-model schedule does not allocate per planned user: a 10 h run at 1,000 users a
//! second (36 M arrivals) is walked with the heap it had before. Its own test binary, as
//! the heap is counted by a global allocator (dhat's) over the whole process.

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

#[test]
fn a_long_open_model_plan_allocates_nothing_per_user() {
    let steps: Vec<volley::scenario::Injection> = ferrowizard_config::Loader::new()
        .load_str(
            "plan.yaml",
            "- constantUsersPerSec: 1000\n  during: 10h\n  randomized: true\n\
             - rampUsersPerSec: 1000\n  to: 2000\n  during: 10h\n",
        )
        .unwrap();
    let _profiler = dhat::Profiler::builder().testing().build();
    let before = dhat::HeapStats::get();
    assert_eq!(
        volley::schedule::open_users(&steps),
        36_000_000 + 54_000_000
    );
    let mut plan = volley::schedule::Plan::new(&steps);
    let mut last = std::time::Duration::ZERO;
    for event in plan.by_ref().take(1_000_000) {
        assert!(event.at() >= last, "in time order");
        last = event.at();
    }
    // Into the second step, whose plan is made when the first is done.
    let later = plan.nth(36_000_000).unwrap();
    assert!(later.at() > std::time::Duration::from_secs(36_000));
    let after = dhat::HeapStats::get();
    // 90 M users planned, 37 M walked: not a byte each (a few stray bytes of the test
    // harness's are tolerated).
    dhat::assert!(
        after.total_bytes - before.total_bytes < 1024,
        "the plan allocated: {before:?} then {after:?}"
    );
}
