//! `group:` steps, as Gatling's groups: counted per execution, KO when a request in them was,
//! with their cumulated response time and their duration; nested; in the console, results.json,
//! the report, the assertions and `volley compare`. The real binary against a small server on
//! loopback.

use std::time::Duration;

use assert_cmd::Command;
use bytes::Bytes;
use http_body_util::Full;
use hyper::{Request, Response};

mod support;
use support::{results, scenario, volley};

/// `/slow` answers after 40 ms, `/fail` with 500, anything else at once.
fn serve() -> std::net::SocketAddr {
    support::serve(|req: Request<hyper::body::Incoming>| {
        let path = req.uri().path().to_owned();
        async move {
            let (wait, status) = match path.as_str() {
                "/slow" => (40, 200),
                "/fail" => (0, 500),
                _ => (0, 200),
            };
            tokio::time::sleep(Duration::from_millis(wait)).await;
            let mut response = Response::new(Full::new(Bytes::from("ok")));
            *response.status_mut() = hyper::StatusCode::from_u16(status).unwrap();
            response
        }
    })
}

/// Four users run `checkout` (home, a 100 ms pause, then `payment`: a slow request and, for
/// every other user by a feeder, one that fails). Each group is counted four times; `payment`
/// and `checkout` are KO for the two users whose request failed; the requests are named
/// under their groups; `checkout`'s cumulated time is its requests' (about 40 ms) while its
/// duration holds the pause too (over 140 ms). The console, the report, the assertions (a
/// group scope failing and one holding: exit 2) and `volley compare` show them.
///
/// Catches: a group counted per request or never, its KO not following its requests',
/// cumulated time measured as the duration (or the reverse), nested paths flattened, a group
/// scope reading a request, groups missing from an output.
#[test]
fn groups_are_counted_timed_nested_and_shown_everywhere() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve();
    std::fs::write(dir.path().join("paths.csv"), "last\nfine\nfail\n").unwrap();
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nscenarios:\n  - name: shop\n    injection: [{{atOnceUsers: 4}}]\n    steps:\n      \
             - feed: {{file: paths.csv, strategy: circular}}\n      \
             - group:\n          name: checkout\n          steps:\n            \
             - request: {{name: home, path: /home}}\n            \
             - pause: 100ms\n            \
             - group:\n                name: payment\n                steps:\n                  \
             - request: {{name: pay, path: /slow}}\n                  \
             - request: {{name: confirm, path: '/${{last}}'}}\n      \
             - request: {{name: after, path: /home}}\n\
             assertions:\n  \
             - {{scope: {{group: checkout}}, stat: failedRequests, metric: count, condition: {{lte: 0}}}}\n  \
             - {{scope: {{group: checkout / payment}}, stat: allRequests, metric: count, condition: {{gte: 4}}}}\n  \
             - {{scope: {{group: checkout}}, stat: responseTime, metric: max, condition: {{lt: 120}}}}\n"
        ),
    );
    let out = volley(dir.path(), &file, &[]).code(2);
    let stdout = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    let r = results(dir.path());
    let group = |path: &str| &r["groups"][path];
    for path in ["checkout", "checkout / payment"] {
        assert_eq!(group(path)["total"]["count"], 4, "{path}: {}", r["groups"]);
        assert_eq!(group(path)["ko"]["count"], 2, "{path}");
    }
    for name in [
        "checkout / home",
        "checkout / payment / pay",
        "checkout / payment / confirm",
        "after",
    ] {
        assert_eq!(
            r["requests"][name]["total"]["count"],
            4,
            "{name}: {:?}",
            r["requests"]
                .as_object()
                .map(|o| o.keys().collect::<Vec<_>>())
        );
    }
    let ok_cumulated = group("checkout")["ok"]["max"].as_f64().unwrap();
    let duration = group("checkout")["serviceTime"]["min"].as_f64().unwrap();
    assert!(
        (40.0..120.0).contains(&ok_cumulated),
        "cumulated {ok_cumulated} ms"
    );
    assert!(
        duration >= 140.0,
        "duration {duration} ms, the pause within"
    );
    // The console: the block's Groups rows and the summary's.
    assert!(stdout.contains("---- Groups "), "{stdout}");
    assert!(
        stdout.contains("> checkout / payment: count (OK / KO)"),
        "{stdout}"
    );
    let line = |prefix: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(
        line("Group checkout: count of failed events").contains(": false (actual : 2.0)"),
        "{stdout}"
    );
    assert!(
        line("Group checkout / payment: count of all requests").contains(": true (actual : 4.0)"),
        "{stdout}"
    );
    assert!(
        line("Group checkout: max of response time").contains(": true"),
        "{stdout}"
    );
    let html = std::fs::read_to_string(dir.path().join("out/index.html")).unwrap();
    assert!(html.contains("<table id=\"groups\">") && html.contains("<td>checkout</td>"));
    // `volley compare` has a row per group, and a threshold names one as `group: NAME`.
    let results_file = dir.path().join("out/results.json");
    let compared = Command::cargo_bin("volley")
        .unwrap()
        .arg("compare")
        .arg(&results_file)
        .arg(&results_file)
        .args(["--threshold", "group: checkout:p99=0%"])
        .timeout(Duration::from_secs(30))
        .assert()
        .code(0);
    let text = String::from_utf8_lossy(&compared.get_output().stdout).into_owned();
    assert!(
        text.contains("group: checkout: p99 at most 0% higher")
            && text.contains("group: checkout / payment"),
        "{text}"
    );
}

/// A group's name cannot hold the separator of nested paths.
#[test]
fn a_group_name_with_the_path_separator_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = scenario(
        dir.path(),
        "baseUrl: http://127.0.0.1:9\nscenarios:\n  - name: s\n    injection: [{atOnceUsers: 1}]\n    steps:\n      \
         - group: {name: a / b, steps: [{pause: 1ms}]}\n",
    );
    let e = support::check_fails(&file);
    assert!(e.contains("separates nested groups' names"), "{e}");
}
