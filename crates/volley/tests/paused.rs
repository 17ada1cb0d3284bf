//! The engine on tokio's paused clock: the tests that judge timing (users per second, the
//! throttle's rate, a stall's response times) get exact answers, whatever the load on the
//! machine.
//!
//! The target is a real hyper server on a real loopback socket, in the same single-threaded
//! runtime as the engine. Loopback delivers a write to the peer's socket before `write`
//! returns, so the runtime is idle only when every task waits on a timer: the clock then
//! jumps to the next timer, and no virtual time passes on the wire. Every time below is
//! therefore a sum of the scenario's and the server's own durations.

mod support;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};
use volley::stats::Stats;

/// How long `/hold` takes: not a whole second, so that no response of a test below is due
/// at the same instant as a closed-model slot's start.
const HOLD: Duration = Duration::from_millis(900);

/// How long the server takes over `/varied`, in ms, by the order the requests come in;
/// [`VARIED_AFTER`] for every request past these.
const VARIED: [u64; 3] = [10, 30, 1_000];
const VARIED_AFTER: u64 = 10;

/// Serves `/ok` (at once), `/hold` (after [`HOLD`]), `/varied` (after [`VARIED`]'s time for
/// its place among the `/varied` requests) and `/stalled` (at once, except that the whole
/// server stalls from 505 ms to 1,505 ms after the first request; `/stalled10` takes 10 ms
/// first) on a free port, on the current runtime.
async fn serve() -> SocketAddr {
    let stall = support::Stall::new(Duration::from_millis(505));
    let varied = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    support::serve_here(move |req: Request<hyper::body::Incoming>| {
        let (stall, varied) = (stall.clone(), varied.clone());
        async move {
            match req.uri().path() {
                "/hold" => tokio::time::sleep(HOLD).await,
                "/varied" => {
                    let n = varied.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let ms = VARIED.get(n).copied().unwrap_or(VARIED_AFTER);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                path @ ("/stalled" | "/stalled10") => {
                    if path == "/stalled10" {
                        tokio::time::sleep(Duration::from_millis(10)).await;
                    }
                    stall.pass().await;
                }
                _ => {}
            }
            Response::new(Full::new(Bytes::from("ok")))
        }
    })
    .await
}

/// Runs the scenario `body` (with `BASE` replaced by the server's URL) on a paused clock
/// against [`serve`], and returns its merged measurements.
fn run(body: &str) -> Stats {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    runtime.block_on(async {
        let addr = serve().await;
        let yaml = body.replace("BASE", &format!("http://{addr}"));
        let simulation: volley::scenario::Simulation = ferrowizard_config::Loader::new()
            .load_str("scenario.yaml", &yaml)
            .unwrap();
        let run = volley::engine::prepare(&simulation, std::path::Path::new(".")).unwrap();
        assert!(
            volley::engine::execute(run.clone(), &simulation).await,
            "cut at maxDuration"
        );
        run.snapshot()
    })
}

/// `(second, responses, active users)` of each entry of the per-second series.
fn series(stats: &Stats) -> Vec<(u64, u64, u64)> {
    stats
        .series
        .iter()
        .map(|e| (e.second, e.requests, e.active_users))
        .collect()
}

fn millis(micros: u64) -> f64 {
    micros as f64 / 1000.0
}

/// Whether `micros` is `expected_ms` to the three significant digits a histogram keeps.
fn near(micros: u64, expected_ms: f64) -> bool {
    (millis(micros) - expected_ms).abs() <= expected_ms / 500.0 + 0.001
}

/// `rampConcurrentUsers` keeps as many users busy as the ramp says, second by second, and
/// each runs to completion.
///
/// Up from 0 to 4 over 4 s: slot i is busy from i + 0.5 s to 4 s, and starts a user of
/// 0.9 s whenever its last one has finished: 4 + 3 + 2 + 1 users, whose responses come at
/// 1.4 s; 2.3 and 2.4 s; 3.2, 3.3 and 3.4 s; 4.1 to 4.4 s. An entry's active users are
/// counted when the next second's first response arrives. Down from 4 to 0: slot i is busy
/// from 0 to 3.5 - i s; the four first users answer at 0.9 s, then 3, 2 and 1 users.
///
/// Catches: a slot that starts one user too many or too few, a ramp's windows off by half a
/// slot (`i + 0.5` in `slot_window`), users counted active after they finished.
#[test]
fn ramp_concurrent_users_follow_the_ramp_up_and_down() {
    let scenario = |from: u32, to: u32| {
        format!(
            "baseUrl: BASE\nscenarios:\n  - name: ramp\n    injection: [{{rampConcurrentUsers: {from}, to: {to}, during: 4s}}]\n    \
             steps: [{{request: {{name: hold, path: /hold}}}}]\n"
        )
    };
    let up = run(&scenario(0, 4));
    assert_eq!(up.global.all.len(), 10);
    assert_eq!(up.global.ko.len(), 0, "{:?}", up.errors);
    assert_eq!(
        series(&up),
        [(1, 1, 2), (2, 2, 3), (3, 3, 4), (4, 4, 0)],
        "(second, responses, active users)"
    );
    // Closed-model users start when due: every response time is the server's 0.9 s.
    let all = &up.global.all;
    assert!(
        near(all.min(), 900.0) && near(all.max(), 900.0),
        "{} to {} ms",
        millis(all.min()),
        millis(all.max())
    );

    let down = run(&scenario(4, 0));
    assert_eq!(down.global.all.len(), 10);
    assert_eq!(
        series(&down),
        [(0, 4, 3), (1, 3, 2), (2, 2, 1), (3, 1, 0)],
        "(second, responses, active users)"
    );
}

/// `pause: {min, max}` draws each pause uniformly between its bounds. One closed-model slot
/// for 10 s, each of its users sending `/ok` (answered at once) and then pausing 400 to
/// 600 ms: a user starts every 500 ms on average, so the slot starts 18 to 23 users (user k
/// starts after k - 1 pauses, whose sum has a standard deviation of 58 ms × √(k - 1): 17
/// or 24 is more than 5 of them away). Pauses of `max` alone start 17 users, of `min`
/// alone 25, and a `min` of 0 about 34.
///
/// Catches: `min` read as `max` or `max` as `min` (the real-time test in tests/keys.rs sees
/// each gap with the machine's latency added, and cannot tell a pause of 600 ms from one
/// drawn up to it), and `min` ignored.
#[test]
fn a_uniform_pause_starts_users_at_its_mean_rate() {
    let stats = run("baseUrl: BASE\nscenarios:\n  - name: u\n    \
         injection: [{constantConcurrentUsers: 1, during: 10s}]\n    \
         steps: [{request: {name: r, path: /ok}}, {pause: {min: 400ms, max: 600ms}}]\n");
    assert_eq!(stats.global.kos, 0, "{:?}", stats.errors);
    let users = stats.global.requests;
    assert!((18..=23).contains(&users), "{users} users in 10 s");
}

/// Ten users for 2 s, each sending `/ok` as fast as it is let, under `throttle`.
fn throttled(throttle: &str) -> Stats {
    run(&format!(
        "baseUrl: BASE\nthrottle: {throttle}\nscenarios:\n  - name: t\n    \
         injection: [{{constantConcurrentUsers: 10, during: 2s}}]\n    steps: [{{request: {{name: r, path: /ok}}}}]\n"
    ))
}

/// `(second, requests)` of each entry of the per-second series.
fn requests_per_second(stats: &Stats) -> Vec<(u64, u64)> {
    series(stats).iter().map(|&(s, n, _)| (s, n)).collect()
}

/// The throttle sends the k-th request of the run k / 50 s after the start at 50 requests a
/// second, whatever the users would do: ten users that would send thousands send 50 a
/// second. The users started before the injection's end (2 s) each send their request at
/// its slot: ten more in the third second.
///
/// Catches: a limiter that lets requests through early or late, or counts from 1; a slot
/// that starts a user at its end (`<` turned `<=` in `slot`'s loop: the response at 2 s
/// would start an eleventh late user).
#[test]
fn the_throttle_sends_requests_at_its_rate() {
    let stats = throttled("[{jumpToRps: 50}, {holdFor: 2s}]");
    assert_eq!(
        requests_per_second(&stats),
        [(0, 50), (1, 50), (2, 10)],
        "(second, requests)"
    );
    // A throttled request is due at its slot: it waited for nothing else.
    assert_eq!(stats.global.all.max(), stats.global.all.min());

    // A ramp from 0 to 100 a second over 2 s: request k at √k / 5 s, a quarter of the
    // hundred in the first second.
    let stats = throttled("[{reachRps: 100, in: 2s}]");
    assert_eq!(
        requests_per_second(&stats),
        [(0, 25), (1, 75), (2, 10)],
        "(second, requests)"
    );
}

/// Coordinated omission: an open model keeps arriving on schedule during a stall, and each
/// response time counts from when its request was due. 100 users a second for 2 s, the
/// server stalled from 505 to 1,505 ms: the 100 users due at 510 ms to 1,500 ms are answered
/// at 1,505 ms, after 995 ms down to 5 ms; the other 100 at once.
///
/// Catches: response times counted from when the request was sent (a generator that fell
/// behind would then hide the stall), or a user started late losing its due time.
#[test]
fn a_stalled_server_shows_in_the_percentiles() {
    let stats = run(
        "baseUrl: BASE\nscenarios:\n  - name: co\n    injection: [{constantUsersPerSec: 100, during: 2s}]\n    \
         steps: [{request: {name: r, path: /stalled}}]\n",
    );
    let all = &stats.global.all;
    assert_eq!(all.len(), 200);
    // HDR histograms keep three significant digits.
    let near = |value: u64, expected_ms: f64| {
        (millis(value) - expected_ms).abs() <= expected_ms / 500.0 + 0.001
    };
    assert!(near(all.max(), 995.0), "max {}", millis(all.max()));
    assert!(
        near(all.value_at_quantile(0.75), 495.0),
        "p75 {}",
        millis(all.value_at_quantile(0.75))
    );
    assert!(
        near(all.value_at_quantile(0.5), 0.0),
        "p50 {}",
        millis(all.value_at_quantile(0.5))
    );
    // The service time starts at the send: during the stall it is the response time, as
    // every request was sent when due.
    assert_eq!(stats.global.service.max(), all.max());
}

/// Coordinated omission in a throttled closed model: 20 users sending as fast as a throttle
/// of 100 requests a second lets them, the server stalled from 505 to 1,505 ms. Every user
/// is caught in the stall within 200 ms; the slots from 510 to 1,500 ms are taken when the
/// users come back at 1,505 ms, each due at its own slot: 100 requests waited 995 ms down
/// to 5 ms, the other 100 nothing (the truth: p75 ≈ 500 ms, p99 ≈ 975 ms).
///
/// Catches: a throttled closed-model request timed from when its user got to it (the
/// backlog the stall left would then look instant: p75 0).
#[test]
fn a_stall_shows_in_a_throttled_closed_model() {
    let stats = run(
        "baseUrl: BASE\nthrottle: [{jumpToRps: 100}, {holdFor: 2s}]\nscenarios:\n  - name: co\n    \
         injection: [{constantConcurrentUsers: 20, during: 2s}]\n    steps: [{request: {name: r, path: /stalled}}]\n",
    );
    let all = &stats.global.all;
    let at = |q: f64| millis(all.value_at_quantile(q));
    assert!(near(all.max(), 995.0), "max {}", millis(all.max()));
    // Half the requests waited uniformly 5 to 995 ms: p75 is the middle of them.
    assert!((at(0.75) - 500.0).abs() <= 0.2 * 500.0, "p75 {}", at(0.75));
    assert!((at(0.99) - 975.0).abs() <= 0.2 * 975.0, "p99 {}", at(0.99));
    assert!(near(all.value_at_quantile(0.4), 0.0), "p40 {}", at(0.4));
}

/// The closed model's correction for coordinated omission: 20 users, each sending its next
/// request when the last is answered (10 ms), the server stalled from 505 to 1,505 ms. The
/// truth, for requests sent at the users' normal pace (2,000 a second): half of them come
/// during the stall and wait a uniform 0 to 1,000 ms more, so p75 ≈ 510 ms and p99 ≈ 990 ms.
/// As sent, the users sent one request each into the stall and measured nothing else of
/// it: p75 10 ms.
///
/// Catches: no correction (`average` and `minimum` then read like `off`), a correction not
/// bounded by the response (p99 far above 1 s), and the raw service times lost.
#[test]
fn the_closed_model_is_corrected_for_coordinated_omission() {
    let yaml = |mode: &str| {
        format!(
            "baseUrl: BASE\ncoordinatedOmission: {mode}\nscenarios:\n  - name: co\n    \
             injection: [{{constantConcurrentUsers: 20, during: 2s}}]\n    steps: [{{request: {{name: r, path: /stalled10}}}}]\n"
        )
    };
    // The console's one line, when the corrected p99 is far above the raw one.
    let note = |mode: &str, stats: &Stats| {
        let simulation: volley::scenario::Simulation = ferrowizard_config::Loader::new()
            .substitution(false)
            .load_str(
                "scenario.yaml",
                &yaml(mode).replace("BASE", "http://127.0.0.1:9"),
            )
            .unwrap();
        volley::console::omission_note(stats, &simulation)
    };
    let closed = |mode: &str| run(&yaml(mode));
    for mode in ["average", "minimum"] {
        let stats = closed(mode);
        let all = &stats.global.all;
        let at = |q: f64| millis(all.value_at_quantile(q));
        assert!(
            (at(0.75) - 510.0).abs() <= 0.2 * 510.0,
            "{mode}: p75 {}",
            at(0.75)
        );
        assert!(
            (at(0.99) - 990.0).abs() <= 0.2 * 990.0,
            "{mode}: p99 {}",
            at(0.99)
        );
        let said = note(mode, &stats).unwrap_or_default();
        assert!(
            said.starts_with("Coordinated omission: p99 985 ms corrected")
                && said.contains("10 ms as sent")
                && said.contains("an open model"),
            "{said}"
        );
        // The responses are counted as sent; the raw times are kept beside.
        assert_eq!(stats.global.requests, stats.global.service.len(), "{mode}");
        assert!(
            millis(stats.global.service.value_at_quantile(0.75)) < 20.0,
            "{mode}"
        );
    }
    let stats = closed("off");
    let p75 = millis(stats.global.all.value_at_quantile(0.75));
    assert!(p75 < 20.0, "off: p75 {p75}");
    assert_eq!(note("off", &stats), None);
    assert_eq!(stats.global.requests, stats.global.all.len());
}

/// `coordinatedOmission: minimum` expects a closed-model slot's next request after the
/// shortest interval between its sends so far, `average` after their mean. One slot's users,
/// one after another, send `/varied`: answered in 10 ms, 30 ms, then 1,000 ms, then 10 ms
/// each time, so the sends are 10 ms, 30 ms, 1,000 ms, 10 ms... apart. The 30 ms response,
/// expected after the one 10 ms interval there is so far, stands for 2 more (20 and 10 ms)
/// under both. The 1,000 ms one is sent after intervals of 10 and 30 ms: expected every
/// 10 ms under `minimum`, it stands for 99 more (990, 980 ... 10 ms); every 20 ms under
/// `average`, for 49 more (980, 960 ... 20 ms). Every later 10 ms response is within the
/// interval expected: it adds nothing. `off` adds nothing at all.
///
/// Catches: `minimum` computing the mean, or `average` the minimum (a steady server's
/// intervals are all alike, and the two then give the same numbers), an interval taken from
/// other than the slot's own sends, and `off` correcting.
#[test]
fn minimum_expects_the_shortest_interval_and_average_the_mean() {
    // The values the correction adds (those in the histogram beyond the responses), and the
    // highest value below the longest response (ms).
    let corrected = |mode: &str| -> (u64, f64) {
        let stats = run(&format!(
            "baseUrl: BASE\ncoordinatedOmission: {mode}\nscenarios:\n  - name: co\n    \
             injection: [{{constantConcurrentUsers: 1, during: 2s}}]\n    \
             steps: [{{request: {{name: r, path: /varied}}}}]\n"
        ));
        let all = &stats.global.all;
        assert_eq!(stats.global.kos, 0, "{mode}: {:?}", stats.errors);
        assert!(
            stats.global.requests > 3,
            "{mode}: {} requests",
            stats.global.requests
        );
        assert!(
            near(all.max(), 1_000.0),
            "{mode}: max {}",
            millis(all.max())
        );
        let next = all
            .iter_recorded()
            .map(|v| v.value_iterated_to())
            .filter(|&v| !near(v, 1_000.0))
            .max()
            .unwrap_or_else(|| panic!("{mode}: nothing below the longest response"));
        (all.len() - stats.global.requests, millis(next))
    };
    // Next to the longest response: itself less one interval expected.
    let (added, next) = corrected("minimum");
    assert_eq!(added, 2 + 99, "minimum: values added");
    assert!(
        (next - 990.0).abs() <= 2.0,
        "minimum: {next} ms next to the longest"
    );
    let (added, next) = corrected("average");
    assert_eq!(added, 2 + 49, "average: values added");
    assert!(
        (next - 980.0).abs() <= 2.0,
        "average: {next} ms next to the longest"
    );
    assert_eq!(corrected("off").0, 0, "off: values added");
}

/// An open model the target cannot keep up with: users due while every connection
/// `http.maxConnections` allows is busy are started only as room comes, at most
/// `USERS_PER_CONNECTION` per connection running at once (memory and connection attempts
/// stay bounded however far behind the plan falls), and each keeps the time it was due.
/// 20 users over 1 s, one connection, 900 ms a request: the last is answered at 18 s,
/// ~17 s after it was due.
///
/// Catches: a user per arrival started regardless (24 users would run at once), and a
/// user started late timed from its start.
#[test]
fn users_the_plan_cannot_start_wait_their_turn_and_keep_their_due_time() {
    let stats = run(
        "baseUrl: BASE\nhttp: {maxConnections: 1}\nmaxDuration: 60s\nscenarios:\n  - name: behind\n    \
         injection: [{rampUsers: 20, during: 1s}]\n    steps: [{request: {name: r, path: /hold}}]\n",
    );
    let most = series(&stats).iter().map(|&(_, _, a)| a).max().unwrap_or(0);
    assert!(
        most as usize <= volley::engine::USERS_PER_CONNECTION,
        "{most} users running at once"
    );
    assert_eq!(stats.global.requests, 20);
    let max = millis(stats.global.all.max());
    assert!((16_000.0..18_100.0).contains(&max), "max {max} ms");
}

/// The same plan, fallen behind, under `maxDuration: 5s`: the run is cut at 5 s of the
/// paused clock (never later: in-flight requests do not hold it past `maxDuration` plus
/// `requestTimeout`, 60 s by default), says so, and keeps what was answered by then: five of
/// the 900 ms requests on the one connection.
///
/// Catches: a run that waits for every planned user (18 s), and one that waits for the users
/// still queued for a connection.
#[test]
fn a_plan_fallen_behind_ends_at_max_duration() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let (finished, took, stats) = runtime.block_on(async {
        let addr = serve().await;
        let yaml = format!(
            "baseUrl: http://{addr}\nhttp: {{maxConnections: 1}}\nmaxDuration: 5s\n\
             scenarios:\n  - name: behind\n    injection: [{{rampUsers: 20, during: 1s}}]\n    \
             steps: [{{request: {{name: r, path: /hold}}}}]\n"
        );
        let simulation: volley::scenario::Simulation = ferrowizard_config::Loader::new()
            .load_str("scenario.yaml", &yaml)
            .unwrap();
        let run = volley::engine::prepare(&simulation, std::path::Path::new(".")).unwrap();
        let start = tokio::time::Instant::now();
        let finished = volley::engine::execute(run.clone(), &simulation).await;
        (finished, start.elapsed(), run.snapshot())
    });
    assert!(!finished, "the plan cannot finish in 5 s");
    assert!(
        took <= std::time::Duration::from_secs(5) + std::time::Duration::from_millis(1),
        "took {took:?}"
    );
    assert_eq!((stats.global.oks, stats.global.kos), (5, 0));
}
