//! Scenarios as real users write them: cookies, values saved from a header or a regular
//! expression, conditions, weighted branches, loops for a duration, pause distributions,
//! `${...}` functions and JSON feeders. The real `volley` binary against a small hyper server
//! inside the test that judges every request it gets.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};
mod support;
use support::run;

/// What the server saw: every path with when it arrived.
#[derive(Default)]
struct Seen {
    paths: Mutex<Vec<(String, Instant)>>,
    sessions: AtomicU64,
}

impl Seen {
    fn paths(&self) -> Vec<(String, Instant)> {
        self.paths.lock().unwrap().clone()
    }
}

/// Serves, on a free port:
/// - `/login`: a new session `n`: `Set-Cookie: sid=sN` (path `/`), a cookie for another
///   path (`/elsewhere`) that must not come back, and `X-Token: tN`;
/// - `/form`: with cookie `sid=sN` (and no other), a form holding `name="csrf"
///   value="cN"`, else 403;
/// - `/account?csrf=cN`: 200 only when the request carries cookie `sid=sN`, no cookie of
///   `/elsewhere`, header `X-Token: tN` and that csrf (all of one session), else 403;
/// - `/fail`: 500; anything else: 200 `ok`.
fn serve() -> (SocketAddr, Arc<Seen>) {
    let seen = Arc::new(Seen::default());
    let shared = seen.clone();
    let addr = support::serve(move |req: Request<hyper::body::Incoming>| {
        let answer = respond(&req, &shared);
        async move { answer }
    });
    (addr, seen)
}

fn respond(req: &Request<hyper::body::Incoming>, seen: &Seen) -> Response<Full<Bytes>> {
    let path = req.uri().path().to_owned();
    seen.paths
        .lock()
        .unwrap()
        .push((req.uri().to_string(), Instant::now()));
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned()
    };
    match path.as_str() {
        "/login" => {
            let n = seen.sessions.fetch_add(1, Relaxed);
            Response::builder()
                .header("set-cookie", format!("sid=s{n}; Path=/; HttpOnly"))
                .header("set-cookie", "far=away; Path=/elsewhere")
                .header("x-token", format!("t{n}"))
                .body(Full::new(Bytes::from("welcome")))
                .unwrap()
        }
        "/account" => {
            let cookie = header("cookie");
            let token = header("x-token");
            let csrf = req
                .uri()
                .query()
                .and_then(|q| q.strip_prefix("csrf="))
                .unwrap_or_default()
                .to_owned();
            let n = token.strip_prefix('t').unwrap_or("?");
            let ok = cookie == format!("sid=s{n}") && csrf == format!("c{n}");
            Response::builder()
                .status(if ok { 200 } else { 403 })
                .body(Full::new(Bytes::from(format!("cookie={cookie:?}"))))
                .unwrap()
        }
        "/form" => {
            let cookie = header("cookie");
            match cookie.strip_prefix("sid=s") {
                Some(n) if !cookie.contains("far=") => Response::new(Full::new(Bytes::from(
                    format!(r#"<form><input type="hidden" name="csrf" value="c{n}"></form>"#),
                ))),
                _ => Response::builder()
                    .status(403)
                    .body(Full::new(Bytes::from(format!("cookie={cookie:?}"))))
                    .unwrap(),
            }
        }
        "/fail" => Response::builder()
            .status(500)
            .body(Full::new(Bytes::from("no")))
            .unwrap(),
        _ => Response::new(Full::new(Bytes::from("ok"))),
    }
}

/// The responses of request `name` with `outcome` (`ok`, `ko`) in results.json. A missing
/// field fails, naming it: a field the results rename must not read as no responses.
fn count(results: &serde_json::Value, name: &str, outcome: &str) -> u64 {
    support::count_at(results, &["requests", name, outcome, "count"])
}

/// All the responses of request `name`, OK and KO: none when results.json's `requests`
/// (which must be there) does not list the name, as it lists only names that were answered.
fn responses(results: &serde_json::Value, name: &str) -> u64 {
    let requests = support::field(results, &["requests"])
        .as_object()
        .expect("results.json's requests is an object");
    if requests.contains_key(name) {
        count(results, name, "ok") + count(results, name, "ko")
    } else {
        0
    }
}

/// A login kept across requests: each user's cookie jar returns its own session cookie
/// (not another path's), the token saved from a header and the csrf saved from the HTML by
/// a regular expression's group go out on the next requests.
///
/// Catches: no cookie jar (`/form` refuses a request without the session cookie), one jar
/// shared by the users (another session's cookie: the pause after the login keeps about
/// eight users' sessions open at once), a cookie sent outside its path
/// (`far=away` in the header: 403), `save` from a header or a regex ignored (an unknown
/// variable: KO), the whole match kept instead of the group (a csrf of `name="csrf"...`).
#[test]
fn a_login_session_is_kept_by_cookies_and_saved_values() {
    let (addr, _seen) = serve();
    let dir = tempfile::tempdir().unwrap();
    let r = run(
        dir.path(),
        addr,
        r#"baseUrl: BASE
http: {shareConnections: true}
scenarios:
  - name: login
    injection: [{rampUsers: 40, during: 1s}]
    steps:
      - request: {name: login, path: /login, save: {header: X-Token, name: token}}
      - pause: 200ms
      - request: {name: form, path: /form, status: [200], save: {regex: 'name="csrf" value="(\w+)"', name: csrf}}
      - request:
          name: account
          path: '/account?csrf=${csrf}'
          headers: {X-Token: '${token}'}
          status: [200]
"#,
    );
    assert_eq!(count(&r, "login", "ok"), 40, "{}", r["errors"]);
    assert_eq!(count(&r, "form", "ok"), 40, "{}", r["errors"]);
    assert_eq!(count(&r, "account", "ok"), 40, "{}", r["errors"]);
}

/// A value that is not there is the request's KO, in Gatling's words, and a user whose
/// request failed stops at `exitHereIfFailed`.
///
/// Catches: a missing header or regex match kept silently, `exitHereIfFailed` ignored
/// (`after` sent), a user stopped although nothing failed (`reached` missing).
#[test]
fn missing_values_are_ko_and_failed_users_exit_here() {
    let (addr, seen) = serve();
    let dir = tempfile::tempdir().unwrap();
    let r = run(
        dir.path(),
        addr,
        r#"baseUrl: BASE
scenarios:
  - name: missing
    injection: [{atOnceUsers: 3}]
    steps:
      - request: {name: no-header, path: /plain, save: {header: X-Token, name: token}}
      - request: {name: no-match, path: /plain, save: {regex: 'csrf=(\w+)', name: csrf}}
      - exitHereIfFailed: true
      - request: {name: after, path: /after}
  - name: fine
    injection: [{atOnceUsers: 2}]
    steps:
      - request: {name: fine, path: /plain}
      - exitHereIfFailed: true
      - request: {name: reached, path: /reached}
"#,
    );
    assert_eq!(
        r["errors"]["header(X-Token).find.exists, but it was not found"], 3,
        "{}",
        r["errors"]
    );
    assert_eq!(
        r["errors"][r#"regex("csrf=(\\w+)").find.exists, but it was not found"#], 3,
        "{}",
        r["errors"]
    );
    assert!(seen.paths().iter().all(|(p, _)| p != "/after"));
    assert_eq!(count(&r, "reached", "ok"), 2);
}

/// `if` runs `then` when its variable exists or has the value, `else` otherwise;
/// `randomSwitch` picks branches by weight over 10,000 users, the rest falling through. The
/// circular feeder makes two of the three users `gold` and one `plain`, so that `then` and
/// `else` run different numbers of times.
///
/// Catches: a condition inverted or ignored, `then` and `else` swapped, `equals` not
/// compared or compared the wrong way round (one `gold` and two `other`), weights misread
/// (each branch's count is within 4.5 standard deviations of its binomial mean), the
/// remainder given to a branch instead of falling through.
#[test]
fn conditions_and_weighted_branches_choose_what_users_do() {
    let (addr, _seen) = serve();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("kinds.json"),
        r#"[{"kind": "gold", "n": 1}, {"kind": "plain", "n": 2}]"#,
    )
    .unwrap();
    let r = run(
        dir.path(),
        addr,
        r#"baseUrl: BASE
http: {shareConnections: true}
scenarios:
  - name: branches
    injection: [{rampUsers: 10000, during: 2s}]
    steps:
      - randomSwitch:
          - {weight: 60, steps: [{request: {name: a, path: /a}}]}
          - {weight: 30, steps: [{request: {name: b, path: /b}}]}
      - request: {name: end, path: /end}
  - name: conditions
    injection: [{atOnceUsers: 3}]
    steps:
      - feed: {file: kinds.json, strategy: circular}
      - if:
          variable: kind
          equals: gold
          then: [{request: {name: gold, path: /gold}}]
          else: [{request: {name: other, path: /other}}]
      - if:
          variable: nothing
          then: [{request: {name: never, path: /never}}]
      - if:
          variable: n
          then: [{request: {name: numbered, path: '/n/${n}'}}]
"#,
    );
    let (a, b, end) = (
        count(&r, "a", "ok"),
        count(&r, "b", "ok"),
        count(&r, "end", "ok"),
    );
    assert_eq!(end, 10_000, "{}", r["errors"]);
    let within = |got: u64, p: f64| {
        let (mean, sd) = (10_000.0 * p, (10_000.0 * p * (1.0 - p)).sqrt());
        (got as f64 - mean).abs() <= 4.5 * sd
    };
    assert!(within(a, 0.6), "a: {a} of 10,000 at 60%");
    assert!(within(b, 0.3), "b: {b} of 10,000 at 30%");
    assert!(
        within(10_000 - a - b, 0.1),
        "fell through: {}",
        10_000 - a - b
    );
    assert_eq!(count(&r, "gold", "ok"), 2);
    assert_eq!(count(&r, "other", "ok"), 1);
    assert_eq!(responses(&r, "never"), 0);
    assert_eq!(count(&r, "numbered", "ok"), 3);
}

/// `during` repeats its steps until its time is up; a pass under way finishes.
///
/// Catches: `during` run once or forever (the run is cut at maxDuration), a pass started
/// after the time is up.
#[test]
fn during_repeats_for_its_duration() {
    let (addr, _seen) = serve();
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let r = run(
        dir.path(),
        addr,
        r#"baseUrl: BASE
maxDuration: 20s
scenarios:
  - name: loop
    injection: [{atOnceUsers: 2}]
    steps:
      - during:
          duration: 1s
          steps:
            - request: {name: tick, path: /tick}
            - pause: 200ms
      - request: {name: after, path: /after}
"#,
    );
    assert!(started.elapsed() >= Duration::from_secs(1));
    assert_eq!(r["cutAtMaxDuration"], false);
    let ticks = count(&r, "tick", "ok");
    // Two users, a pass every 200 ms and a little: 5 passes each at most, 3 at least.
    assert!((6..=10).contains(&ticks), "{ticks} ticks");
    assert_eq!(count(&r, "after", "ok"), 2);
}

/// Pauses drawn from the exponential and the normal distributions: the mean of the gaps
/// the server sees between each user's two requests is the mean asked (300 ms for the
/// exponential, 200 ms for the normal: each key's value its own), plus what a request takes
/// on this machine (measured with a fixed pause of 300 ms in the same run); their spread is
/// the distribution's, far from a fixed pause's. JSON feeders give each user its own id,
/// and `${...}` functions fill a path.
///
/// Catches: a distribution's mean wrong (an exponential drawn with the rate for the mean, a
/// normal without its mean, or with the exponential's), a distribution drawn as a fixed
/// pause of its mean or as the other distribution (the spread), a pause not taken, a JSON
/// feeder's records mixed up.
#[test]
fn pause_distributions_have_their_means() {
    let (addr, seen) = serve();
    let dir = tempfile::tempdir().unwrap();
    let ids: Vec<String> = (0..900).map(|i| format!(r#"{{"id": {i}}}"#)).collect();
    std::fs::write(dir.path().join("ids.json"), format!("[{}]", ids.join(","))).unwrap();
    let scenario = |name: &str, pause: &str| {
        format!(
            "  - name: {name}
    injection: [{{rampUsers: 300, during: 1s}}]
    steps:
                   - feed: {{file: ids.json}}
                   - request: {{name: {name}-1, path: '/{name}/${{id}}'}}
                   - pause: {pause}
                   - request: {{name: {name}-2, path: '/{name}/${{id}}'}}
"
        )
    };
    let yaml = format!(
        "baseUrl: BASE
http: {{shareConnections: true}}
scenarios:
{}{}{}",
        scenario("fixed", "300ms"),
        scenario("exponential", "{exponential: 300ms}"),
        scenario("normal", "{normal: {mean: 200ms, stdDev: 60ms}}"),
    );
    let r = run(dir.path(), addr, &yaml);
    assert_eq!(r["global"]["ko"]["count"], 0, "{}", r["errors"]);
    let mut first: HashMap<String, Instant> = HashMap::new();
    let mut gaps: HashMap<&str, Vec<f64>> = HashMap::new();
    for (path, at) in seen.paths() {
        let kind = path.split('/').nth(1).unwrap_or_default().to_owned();
        match first.remove(&path) {
            None => {
                first.insert(path, at);
            }
            Some(before) => {
                let kind = ["fixed", "exponential", "normal"]
                    .into_iter()
                    .find(|k| *k == kind)
                    .unwrap();
                gaps.entry(kind)
                    .or_default()
                    .push(at.duration_since(before).as_secs_f64() * 1000.0);
            }
        }
    }
    let mean = |k: &str| {
        let g = &gaps[k];
        assert_eq!(g.len(), 300, "{k}: every user's two requests");
        g.iter().sum::<f64>() / g.len() as f64
    };
    // The fixed pause's gaps are 300 ms plus what a request and the scheduler add here.
    let overhead = mean("fixed") - 300.0;
    assert!(
        overhead >= 0.0,
        "a fixed pause of 300 ms took {}",
        mean("fixed")
    );
    // The sample mean of 300 exponential draws of mean 300 ms has a standard deviation of
    // 300/√300 ≈ 17 ms (5.8%), a normal's of deviation 60 ms 60/√300 ≈ 3.5 ms: 3.5 of them
    // for the former, 15 ms for the latter.
    for (k, asked, allowed) in [("exponential", 300.0, 3.5 * 17.3), ("normal", 200.0, 15.0)] {
        let drawn = mean(k) - overhead;
        assert!(
            (drawn - asked).abs() <= allowed,
            "{k}: mean pause {drawn:.1} ms, asked {asked} ms (overhead {overhead:.1} ms)"
        );
    }
    // The interquartile range of the gaps: an exponential's of mean 300 ms is 300·ln 3 ≈
    // 330 ms, a normal's of deviation 60 ms 1.35 × 60 ≈ 81 ms, a fixed pause's only what
    // the machine adds to it. That of 300 draws has a standard deviation of 28 ms for the
    // former, 5.5 ms for the latter: each bound is more than 4.5 of them away.
    let spread = |k: &str| {
        let mut g = gaps[k].clone();
        g.sort_by(f64::total_cmp);
        g[g.len() * 3 / 4] - g[g.len() / 4]
    };
    let exponential = spread("exponential");
    assert!(
        (200.0..500.0).contains(&exponential),
        "exponential: gaps spread over {exponential:.1} ms"
    );
    let normal = spread("normal");
    assert!(
        (50.0..150.0).contains(&normal),
        "normal: gaps spread over {normal:.1} ms (a fixed pause's over {:.1} ms)",
        spread("fixed")
    );
}

/// `${randomInt(a,b)}`, `${uuid()}`, `${nowMillis()}` and `${urlEncode(name)}` fill a path
/// the server sees; a JSON feeder's non-string values arrive as their JSON text.
///
/// Catches: a function left as text, urlEncode not encoding, randomInt out of bounds,
/// one uuid shared by the users.
#[test]
fn functions_fill_requests() {
    let (addr, seen) = serve();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("q.json"),
        r#"[{"q": "a b/c&d", "n": 7, "flag": true}]"#,
    )
    .unwrap();
    let before = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let r = run(
        dir.path(),
        addr,
        r#"baseUrl: BASE
scenarios:
  - name: functions
    injection: [{atOnceUsers: 20}]
    steps:
      - feed: {file: q.json, strategy: circular}
      - request: {name: f, path: '/f/${randomInt(1,4)}/${uuid()}/${nowMillis()}/${urlEncode(q)}/${n}/${flag}'}
"#,
    );
    assert_eq!(count(&r, "f", "ok"), 20, "{}", r["errors"]);
    let paths = seen.paths();
    let mut uuids = std::collections::HashSet::new();
    for (path, _) in &paths {
        let parts: Vec<&str> = path.split('/').collect();
        assert_eq!(parts.len(), 8, "{path}");
        let n: i64 = parts[2].parse().unwrap();
        assert!((1..4).contains(&n), "{path}");
        assert_eq!(parts[3].len(), 36, "{path}");
        uuids.insert(parts[3].to_owned());
        let now: u128 = parts[4].parse().unwrap();
        assert!(now >= before && now < before + 120_000, "{path}");
        assert_eq!(parts[5], "a%20b%2Fc%26d");
        assert_eq!((parts[6], parts[7]), ("7", "true"));
    }
    assert_eq!(uuids.len(), 20);
}

/// Mistakes in the new forms are load errors naming the line and column.
///
/// Catches: weights over 100 accepted, a save with two sources or a regex without a group
/// accepted, an unknown function or a bad bound found only at run time, a malformed JSON
/// feeder accepted or reported without its position.
#[test]
fn mistakes_are_reported_where_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let check = |body: &str| {
        let file = dir.path().join("bad.yaml");
        std::fs::write(
            &file,
            format!(
                "baseUrl: http://127.0.0.1:1
scenarios:
  - name: s
    injection: [{{atOnceUsers: 1}}]
    steps:
{body}"
            ),
        )
        .unwrap();
        support::check_fails(&file)
    };
    let err = check(
        "      - randomSwitch:
          - {weight: 70, steps: [{pause: 1s}]}
          - {weight: 40, steps: [{pause: 1s}]}
",
    );
    assert!(
        err.contains("bad.yaml:7:") && err.contains("add up to 110"),
        "{err}"
    );
    let err = check(
        "      - request: {name: r, path: /, save: {header: X, jsonPointer: /a, name: x}}
",
    );
    assert!(
        err.contains("bad.yaml:6:")
            && err.contains("exactly one of jsonPointer, jsonPath, header, regex"),
        "{err}"
    );
    let err = check("      - request: {name: r, path: /, save: {regex: 'csrf=\\w+', name: x}}\n");
    assert!(err.contains("no capture group"), "{err}");
    let err = check(
        "      - request: {name: r, path: '/${randint(1,2)}'}
",
    );
    assert!(
        err.contains("bad.yaml:6:") && err.contains("unknown function \"randint\""),
        "{err}"
    );
    let err = check(
        "      - request: {name: r, path: '/${randomInt(5,1)}'}
",
    );
    assert!(err.contains("must be below"), "{err}");
    let err = check(
        "      - pause: {exponential: 1s, min: 1s}
",
    );
    assert!(err.contains("bad.yaml:6:"), "{err}");
    // A normal pause without its mean or deviation would be no pause at all.
    for normal in ["{}", "{mean: 1s}", "{stdDev: 1s}"] {
        let err = check(&format!("      - pause: {{normal: {normal}}}\n"));
        assert!(
            err.contains("bad.yaml:6:") && err.contains("needs both mean and stdDev"),
            "{normal}: {err}"
        );
    }
    let err = check(
        "      - exitHereIfFailed: false
",
    );
    assert!(err.contains("false does nothing"), "{err}");
    std::fs::write(dir.path().join("bad.json"), "[{\"a\": 1},\n {\"a\": }]").unwrap();
    let file = dir.path().join("feed.yaml");
    std::fs::write(
        &file,
        "baseUrl: http://127.0.0.1:1
scenarios:
  - name: s
    injection: [{atOnceUsers: 1}]
    steps: [{feed: {file: bad.json}}]
",
    )
    .unwrap();
    let out = support::volley(dir.path(), &file, &[]).code(1);
    let err = String::from_utf8_lossy(&out.get_output().stderr);
    assert!(
        err.contains("bad.json") && err.contains("line 2 column"),
        "{err}"
    );
}
