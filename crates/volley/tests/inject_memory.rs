//! Open-model users are started as they come due and forgotten once finished: the engine's
//! heap follows the users running, not the users planned. Its own test binary, as the heap
//! is counted by a global allocator (dhat's) over the whole process.

#[global_allocator]
static ALLOC: dhat::Alloc = dhat::Alloc;

/// 30,000 users of 10 ms each, one a millisecond: about ten run at once. On tokio's paused
/// clock the 30 s take no time, and the users pause without a target to send to.
///
/// Catches: `inject` keeping its finished users' tasks until the end (dropping the reaping
/// `try_join_next` loop): 30,000 finished tasks are megabytes; ten running ones are not.
#[test]
fn finished_users_are_forgotten_as_the_run_goes() {
    let simulation: volley::scenario::Simulation = ferrowizard_config::Loader::new()
        .load_str(
            "scenario.yaml",
            "baseUrl: http://127.0.0.1:1\nscenarios:\n  - name: open\n    \
             injection: [{constantUsersPerSec: 1000, during: 30s}]\n    steps: [{pause: 10ms}]\n",
        )
        .unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let _profiler = dhat::Profiler::builder().testing().build();
    let (run, before) = runtime.block_on(async {
        let run = volley::engine::prepare(&simulation, std::path::Path::new(".")).unwrap();
        (run, dhat::HeapStats::get())
    });
    let finished = runtime.block_on(volley::engine::execute(run.clone(), &simulation));
    let after = dhat::HeapStats::get();
    assert!(finished, "cut at maxDuration");
    let users = &run.users[0];
    assert_eq!(
        users.done.load(std::sync::atomic::Ordering::Relaxed),
        30_000
    );
    // The most the heap held during the run, over what it held before: ten users' tasks
    // and the timers' slabs are tens of kilobytes.
    let peak = after.max_bytes.saturating_sub(before.curr_bytes);
    dhat::assert!(
        peak < 256 * 1024,
        "the run's heap grew by {peak} bytes: {before:?} then {after:?}"
    );
}
