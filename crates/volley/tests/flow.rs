//! Loops, extraction and bodies, as Gatling users write them: `tryMax`, `exitBlockOnFail`,
//! `asLongAs`, `foreach`, `jsonPath` checks and saves of every match, and bodies from a file,
//! form parameters and multipart parts. One user of the real binary against a plain HTTP/1.1
//! server that records every request as it came.

use std::path::Path;

mod support;
use support::http1::{Answer, Got, OK, Seen, serve};
use support::{results, scenario_for, volley};

const ITEMS: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 60\r\n\r\n{\"items\":[{\"id\":\"a\"},{\"id\":\"b\"},{\"id\":\"c\"}],\"total\":3,\"x\":1}";
const FAIL: &[u8] = b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n";
const MORE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{\"more\":\"yes\"} ";
const NO_MORE: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 15\r\n\r\n{\"more\":\"no\"}  ";
const LOGIN: &[u8] =
    b"HTTP/1.1 200 OK\r\nSet-Cookie: session=b1; Path=/\r\nContent-Length: 2\r\n\r\nok";

/// `/items` a list of three ids; `/flaky` 500 twice, then 200; `/fail` 500; `/next?page=N`
/// `more: yes` below page 2, `no` from it; anything else 200.
fn route(got: &Got, seen: &Seen) -> Answer {
    let path = got.path.as_str();
    if path == "/items" {
        return Answer::Keep(ITEMS);
    }
    if path == "/flaky" {
        let before = seen
            .requests()
            .iter()
            .filter(|g| g.path == "/flaky")
            .count();
        return Answer::Keep(if before <= 2 { FAIL } else { OK });
    }
    if path == "/fail" {
        return Answer::Keep(FAIL);
    }
    if path == "/login" {
        return Answer::Keep(LOGIN);
    }
    if let Some(page) = path.strip_prefix("/next?page=") {
        let page: u32 = page.parse().unwrap_or(99);
        return Answer::Keep(if page < 2 { MORE } else { NO_MORE });
    }
    Answer::Keep(OK)
}

fn run(dir: &Path, steps: &str) -> (serde_json::Value, Vec<Got>) {
    let (addr, seen) = serve(route);
    let file = scenario_for(
        dir,
        addr,
        &format!(
            "baseUrl: BASE\nmaxDuration: 30s\nscenarios:\n  - name: s\n    \
             injection: [{{atOnceUsers: 1}}]\n    steps:\n{steps}"
        ),
    );
    volley(dir, &file, &[]).success();
    (results(dir), seen.requests())
}

fn counts(r: &serde_json::Value, name: &str) -> (u64, u64) {
    let q = &r["requests"][name];
    (
        q["ok"]["count"].as_u64().unwrap_or(0),
        q["ko"]["count"].as_u64().unwrap_or(0),
    )
}

fn paths(seen: &[Got], prefix: &str) -> Vec<String> {
    seen.iter()
        .filter(|g| g.path.starts_with(prefix))
        .map(|g| g.path.clone())
        .collect()
}

/// A JSONPath check counts and compares; a save of every match feeds `foreach` (with its
/// counter); `tryMax` tries `/flaky` until it answers, the steps after the KO skipped in the
/// failed tries, and the tries it needed forgiven (`exitHereIfFailed` lets the user on);
/// `asLongAs` pages while the server says there is more; a `foreach` over a value that is no
/// list is KO; `exitBlockOnFail` leaves its block at the KO.
///
/// Catches: a count that cannot fail, a save of the first match only, items or counters
/// not set, a tryMax that stops after one try or runs the steps after a KO, KOs of earlier
/// tries still failing the user, asLongAs looking at its condition once, a block running on
/// after its KO.
#[test]
fn loops_and_json_paths_drive_the_user() {
    let dir = tempfile::tempdir().unwrap();
    let (r, seen) = run(
        dir.path(),
        "      - request: {name: list, path: /items, jsonPath: {path: '$.items[*].id', count: 3}, \
         save: {jsonPath: '$.items[*].id', all: true, name: ids}}\n      \
         - request: {name: first, path: /items, jsonPath: {path: '$.items[0].id', equals: a}, \
         save: {jsonPath: '$.total', name: total}}\n      \
         - foreach: {items: ids, as: id, counter: i, steps: [{request: {name: item, path: '/item/${id}?i=${i}'}}]}\n      \
         - tryMax: {times: 3, steps: [{request: {name: flaky, path: /flaky}}, {request: {name: after flaky, path: /after}}]}\n      \
         - exitHereIfFailed: true\n      \
         - request: {name: page0, path: '/next?page=0', save: {jsonPointer: /more, name: more}}\n      \
         - asLongAs: {variable: more, equals: 'yes', counter: n, steps: [{request: {name: page, path: '/next?page=${n}', \
         save: {jsonPointer: /more, name: more}}}]}\n      \
         - request: {name: wrong count, path: /items, jsonPath: {path: '$.items[*]', count: 2}}\n      \
         - foreach: {items: total, as: t, steps: [{request: {name: never, path: /never}}]}\n      \
         - exitBlockOnFail: {steps: [{request: {name: doomed, path: /fail}}, {request: {name: never, path: /never}}]}\n      \
         - request: {name: last, path: /last}\n",
    );
    assert_eq!(counts(&r, "list"), (1, 0), "{}", r["errors"]);
    assert_eq!(counts(&r, "first"), (1, 0), "{}", r["errors"]);
    assert_eq!(
        paths(&seen, "/item/"),
        ["/item/a?i=0", "/item/b?i=1", "/item/c?i=2"]
    );
    assert_eq!(counts(&r, "flaky"), (1, 2));
    assert_eq!(
        counts(&r, "after flaky"),
        (1, 0),
        "only after the try that got through"
    );
    assert_eq!(
        paths(&seen, "/next"),
        [
            "/next?page=0",
            "/next?page=0",
            "/next?page=1",
            "/next?page=2"
        ]
    );
    assert_eq!(counts(&r, "wrong count"), (0, 1));
    let errors = &r["errors"];
    assert_eq!(
        errors["jsonPath($.items[*]).count.is(2), but actually found 3"], 1,
        "{errors}"
    );
    assert_eq!(
        errors["foreach: ${total} holds no JSON array"], 1,
        "{errors}"
    );
    assert_eq!(counts(&r, "doomed"), (0, 1));
    assert!(
        paths(&seen, "/never").is_empty(),
        "the block is left at its KO"
    );
    assert_eq!(
        counts(&r, "last"),
        (1, 0),
        "the user goes on after the block"
    );
}

/// A body from a file (its `${...}` filled in, per user), form parameters (their type set,
/// the values filled in) and a multipart body (a text part, a file part with its name and
/// type, the boundary in the header).
///
/// Catches: the file sent unfilled or read per request from disk, a form sent without its
/// type or unencoded, multipart parts without their disposition or file name.
#[test]
fn bodies_come_from_files_forms_and_parts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("order.json"), "{\"symbol\":\"${symbol}\"}").unwrap();
    let (r, seen) = run(
        dir.path(),
        "      - request: {name: set, path: /set, save: {regex: '(ok)', name: symbol}}\n      \
         - request: {name: file, method: POST, path: /file, bodyFile: order.json, headers: {Content-Type: application/json}}\n      \
         - request: {name: form, method: POST, path: /form, form: {symbol: 'A&B', qty: '${symbol}'}}\n      \
         - request: {name: upload, method: POST, path: /upload, multipart: [{name: note, value: 'hi ${symbol}'}, \
         {name: doc, file: order.json, contentType: application/json}]}\n",
    );
    for name in ["set", "file", "form", "upload"] {
        assert_eq!(counts(&r, name), (1, 0), "{name}: {}", r["errors"]);
    }
    let got = |path: &str| seen.iter().find(|g| g.path == path).unwrap().clone();
    assert_eq!(got("/file").body, "{\"symbol\":\"ok\"}");
    let form = got("/form");
    assert_eq!(form.body, "qty=ok&symbol=A%26B");
    assert_eq!(
        form.header("content-type"),
        ["application/x-www-form-urlencoded"]
    );
    let upload = got("/upload");
    let content_type = upload.header("content-type")[0].to_owned();
    let boundary = content_type
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap_or_else(|| panic!("{content_type}"));
    let body = &upload.body;
    assert!(body.starts_with(&format!("--{boundary}\r\n")), "{body}");
    assert!(body.contains("Content-Disposition: form-data; name=\"note\"\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nhi ok\r\n"), "{body}");
    assert!(body.contains("Content-Disposition: form-data; name=\"doc\"; filename=\"order.json\"\r\nContent-Type: application/json\r\n\r\n{\"symbol\":\"ok\"}\r\n"), "{body}");
    assert!(body.ends_with(&format!("--{boundary}--\r\n")), "{body}");
}

/// Two bodies in one request, a part with both a value and a file, a missing body file, and
/// a malformed JSONPath are refused, each naming what and where.
#[test]
fn meaningless_bodies_and_paths_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |steps: &str| {
        let file = support::scenario(
            dir.path(),
            &format!(
                "baseUrl: http://127.0.0.1:9\nscenarios:\n  - name: s\n    \
                 injection: [{{atOnceUsers: 1}}]\n    steps:\n{steps}"
            ),
        );
        support::check_fails(&file)
    };
    let e = refused("      - request: {name: a, path: /a, body: x, form: {a: b}}\n");
    assert!(
        e.contains("give at most one of body, bodyFile, form, multipart"),
        "{e}"
    );
    let e = refused(
        "      - request: {name: a, path: /a, multipart: [{name: p, value: v, file: f}]}\n",
    );
    assert!(e.contains("give one of value, file"), "{e}");
    let e = refused("      - request: {name: a, path: /a, jsonPath: {path: '$[', count: 1}}\n");
    assert!(e.contains("not a JSONPath"), "{e}");
    let e = refused(
        "      - request: {name: a, path: /a, save: {jsonPointer: /a, all: true, name: x}}\n",
    );
    assert!(e.contains("give it with jsonPath"), "{e}");
    let file = support::scenario(
        dir.path(),
        "baseUrl: http://127.0.0.1:9\nscenarios:\n  - name: s\n    injection: [{atOnceUsers: 1}]\n    \
         steps:\n      - request: {name: a, method: POST, path: /a, bodyFile: missing.json}\n",
    );
    let out = volley(dir.path(), &file, &[]).code(1);
    let stderr = String::from_utf8_lossy(&out.get_output().stderr).into_owned();
    assert!(
        stderr.contains("cannot read the body file") && stderr.contains("missing.json"),
        "{stderr}"
    );
}

/// A request to an absolute URL goes to that host, with its own `Host`, and the cookie it
/// sets is kept by the user's jar as any other, beside the requests to `baseUrl`.
///
/// Catches: an absolute URL sent to `baseUrl`'s host (or as a path), `baseUrl`'s `Host` on
/// the other host, its cookies not kept.
#[test]
fn absolute_urls_reach_another_host() {
    let dir = tempfile::tempdir().unwrap();
    let (other, other_seen) = serve(route);
    let (r, seen) = run(
        dir.path(),
        &format!(
            "      - request: {{name: here, path: /a}}\n      \
             - request: {{name: login there, path: 'http://{other}/login'}}\n      \
             - request: {{name: there, path: 'http://{other}/b?x=${{missing:-1}}'}}\n      \
             - request: {{name: here again, path: /c}}\n"
        )
        .replace("${missing:-1}", "1"),
    );
    for name in ["here", "login there", "there", "here again"] {
        assert_eq!(counts(&r, name), (1, 0), "{name}: {}", r["errors"]);
    }
    let here: Vec<String> = seen.iter().map(|g| g.path.clone()).collect();
    assert_eq!(here, ["/a", "/c"]);
    // Cookies go by host, not port (RFC 6265): both servers are 127.0.0.1, so the cookie the
    // other set comes to baseUrl's too once set, as a browser's would.
    assert!(seen[0].header("cookie").is_empty());
    assert_eq!(seen[1].header("cookie"), ["session=b1"]);
    let there = other_seen.requests();
    let paths: Vec<&str> = there.iter().map(|g| g.path.as_str()).collect();
    assert_eq!(paths, ["/login", "/b?x=1"]);
    assert_eq!(there[1].header("host"), [other.to_string().as_str()]);
    assert_eq!(there[1].header("cookie"), ["session=b1"]);
}
