//! `ws:` and `sse:` steps against the real `realtime` service: its WebSocket
//! (`/realtime/stream`: a symbol named is answered with its quote, then its moves are pushed)
//! and its event stream (`/realtime/quotes/{symbol}/events`), each action timed under its
//! name in results.json, its failures in Gatling's words.

use std::path::Path;

mod support;
use support::realtime::Realtime;
use support::{results, scenario, volley};

fn run(dir: &Path, service: &Realtime, steps: &str) -> serde_json::Value {
    let file = scenario(
        dir,
        &format!(
            "baseUrl: http://{}\nmaxDuration: 60s\nscenarios:\n  - name: streams\n    \
             injection: [{{atOnceUsers: 2}}]\n    steps:\n{steps}",
            service.addr
        ),
    );
    volley(dir, &file, &[]).success();
    results(dir)
}

/// The count of OK and KO responses under `name`, and its first error.
fn counts(r: &serde_json::Value, name: &str) -> (u64, u64) {
    let q = &r["requests"][name];
    (
        q["ok"]["count"].as_u64().unwrap_or(0),
        q["ko"]["count"].as_u64().unwrap_or(0),
    )
}

fn error_count(r: &serde_json::Value, message: &str) -> u64 {
    r["errors"][message].as_u64().unwrap_or(0)
}

/// Each user connects (with its own `User-Agent`), names ACME and gets its quote (checked,
/// its symbol saved), awaits two pushed moves of the saved symbol (checked, the symbol saved
/// again by a regular expression and named again), waits in vain for a message holding NEVER
/// (KO at the await's timeout, the moves skipped), names an unknown symbol (KO: its answer
/// has no symbol), and closes; every action timed under its name, the two sockets counted as
/// connections.
///
/// Catches: a send's answer not awaited (no round trip), pushes that came before a step
/// taken as its answer, `matching` not skipping, a check that cannot fail, the connect's
/// headers not sent, a close not waiting for the server's.
#[test]
fn websocket_steps_connect_send_await_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let service = Realtime::start(dir.path(), &["ACME".to_owned(), "GLOBEX".to_owned()]);
    let r = run(
        dir.path(),
        &service,
        "      - ws: {name: connect, connect: /realtime/stream, headers: {User-Agent: volley-ws}}\n      \
         - ws:\n          name: subscribe\n          send: acme\n          \
         await: {messages: 1, timeout: 5s, check: {bodyContains: ACME, json: {pointer: /symbol, equals: ACME}}, \
         save: {jsonPointer: /symbol, name: subscribed}}\n      \
         - ws:\n          name: moves\n          \
         await: {messages: 2, timeout: 5s, matching: {bodyContains: '\"symbol\"', bodyMatches: 'price', \
         json: {pointer: /symbol, equals: '${subscribed}'}}, \
         check: {bodyMatches: '\"price\":[0-9.]+', json: {pointer: /symbol}}, save: {regex: '\"symbol\":\"(\\w+)\"', name: again}}\n      \
         - ws: {name: resubscribe, send: '${again}', await: {check: {bodyContains: '${again}'}}}\n      \
         - ws: {name: saved all, send: ACME, await: {check: {bodyContains: ACME}, save: {jsonPath: '$.symbol', all: true, name: every}}}\n      \
         - ws: {name: sent all, send: '${every}', await: {check: {bodyContains: 'unknown symbol ['}}}\n      \
         - ws: {name: quiet, await: {timeout: 300ms, matching: {bodyContains: NEVER}}}\n      \
         - ws: {name: unknown, send: NOPE, await: {timeout: 5s, check: {json: {pointer: /symbol}}}}\n      \
         - ws: {name: close, close: true}\n",
    );
    for name in [
        "connect",
        "subscribe",
        "moves",
        "resubscribe",
        "saved all",
        "sent all",
        "close",
    ] {
        assert_eq!(counts(&r, name), (2, 0), "{name}: {}", r["errors"]);
    }
    // Moves every 100 ms, none holding NEVER: the await skips them all until its timeout.
    assert_eq!(counts(&r, "quiet"), (0, 2));
    assert_eq!(
        error_count(&r, "await timed out (300ms) after 0 of 1 messages awaited"),
        2,
        "{}",
        r["errors"]
    );
    assert_eq!(counts(&r, "unknown"), (0, 2));
    assert_eq!(
        error_count(&r, "jsonPointer(/symbol).find.exists, but it was not found"),
        2,
        "{}",
        r["errors"]
    );
    assert_eq!(r["connections"]["connect"]["count"], 2);
    // A round trip is the time to the answer: moves come every 100 ms, answers at once.
    let p50 = |name: &str| r["requests"][name]["total"]["p50"].as_f64().unwrap();
    assert!(
        p50("subscribe") < p50("moves"),
        "{} {}",
        p50("subscribe"),
        p50("moves")
    );
    let paths = service.paths(2);
    assert_eq!(
        paths.iter().filter(|p| *p == "/realtime/stream").count(),
        2,
        "{paths:?}"
    );
    let log = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
    assert!(
        log.lines()
            .filter(|l| l.contains("/realtime/stream") && l.contains("\"volley-ws\""))
            .count()
            == 2,
        "{log}"
    );
}

/// Each user opens ACME's event stream and awaits two `quote` events (checked, the symbol
/// saved), then one whose symbol is the one saved (saved again by a regular expression, and
/// looked for in the next), then an event holding GLOBEX (KO: the stream is ACME's), then an event of a type the stream never
/// sends (KO at the await's timeout: `quote` events are skipped), and closes it.
///
/// Catches: the connect not sending `Accept: text/event-stream` or not reading the stream,
/// `event` not filtering, a check that cannot fail, a timeout that never ends the await.
#[test]
fn event_stream_steps_connect_await_and_close() {
    let dir = tempfile::tempdir().unwrap();
    let service = Realtime::start(dir.path(), &["ACME".to_owned(), "GLOBEX".to_owned()]);
    let r = run(
        dir.path(),
        &service,
        "      - sse:\n          name: events\n          connect: /realtime/quotes/acme/events\n          \
         headers: {User-Agent: volley-sse}\n          event: quote\n          \
         await: {messages: 2, timeout: 5s, matching: {bodyContains: ACME, bodyMatches: 'price', \
         json: {pointer: /symbol, equals: ACME}}, check: {bodyContains: price, bodyMatches: '\"price\":[0-9.]+'}, \
         save: {jsonPointer: /symbol, name: sym}}\n      \
         - sse: {name: again, await: {check: {json: {pointer: /symbol, equals: '${sym}'}}, save: {regex: '\"symbol\":\"(\\w+)\"', name: sym2}}}\n      \
         - sse: {name: third, await: {check: {bodyContains: '${sym2}'}, save: {jsonPath: '$.symbol', all: true, name: every}}}\n      \
         - if: {variable: every, equals: '[\"ACME\"]', then: [{sse: {name: saved all, await: {}}}]}\n      \
         - sse: {name: more, await: {messages: 1, timeout: 5s, check: {bodyContains: GLOBEX}}}\n      \
         - sse: {name: trades, event: trade, await: {timeout: 300ms}}\n      \
         - sse: {name: closed, close: true}\n",
    );
    for name in ["events", "again", "third", "saved all"] {
        assert_eq!(counts(&r, name), (2, 0), "{name}: {}", r["errors"]);
    }
    assert_eq!(counts(&r, "more"), (0, 2));
    assert_eq!(
        error_count(&r, "body.find.contains(\"GLOBEX\"), but it was not found"),
        2,
        "{}",
        r["errors"]
    );
    assert_eq!(counts(&r, "trades"), (0, 2));
    assert_eq!(
        error_count(&r, "await timed out (300ms) after 0 of 1 messages awaited"),
        2,
        "{}",
        r["errors"]
    );
    assert_eq!(counts(&r, "closed"), (2, 0));
    let log = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
    let lines: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("/realtime/quotes/acme/events") && l.contains("\"volley-sse\""))
        .collect();
    assert_eq!(lines.len(), 2, "{log}");
}

/// Steps that cannot mean anything are refused when the file is loaded, each with its key
/// and what to write instead.
///
/// Catches: two actions in one step run in some order, a header save on a message (which has
/// no headers) accepted, an `event` with nothing awaited, `close: false` doing nothing.
#[test]
fn meaningless_stream_steps_are_refused_with_why() {
    let dir = tempfile::tempdir().unwrap();
    let refused = |steps: &str| {
        let file = scenario(
            dir.path(),
            &format!(
                "baseUrl: http://127.0.0.1:9\nscenarios:\n  - name: s\n    \
                 injection: [{{atOnceUsers: 1}}]\n    steps:\n{steps}"
            ),
        );
        support::check_fails(&file)
    };
    let e = refused("      - ws: {name: a, connect: /x, close: true}\n");
    assert!(e.contains("give one of connect, send, close"), "{e}");
    let e = refused("      - ws: {name: a, send: x, await: {save: {header: X-A, name: a}}}\n");
    assert!(e.contains("a message has no headers"), "{e}");
    let e = refused("      - sse: {name: a, connect: /x, event: quote}\n");
    assert!(e.contains("give it with an await"), "{e}");
    let e = refused("      - sse: {name: a, close: false}\n");
    assert!(e.contains("false does nothing"), "{e}");
    let e = refused("      - ws: {name: a, send: x, headers: {X-A: a}}\n");
    assert!(e.contains("headers go with the connect request"), "{e}");
    let e = refused("      - ws: {name: a, await: {messages: 0}}\n");
    assert!(e.contains("messages"), "{e}");
}

/// A user keeps its HTTP connection while it opens a WebSocket and an event stream, with
/// `maxConnections: 2`: the sockets have connections of their own to count against, and
/// nothing waits for ever.
///
/// Catches: sockets taking their connections from the HTTP connections' count, where the
/// user's idle connection and its WebSocket hold both and the event stream waits for one
/// (the run hangs to `maxDuration`).
#[test]
fn sockets_open_beside_a_held_http_connection() {
    let dir = tempfile::tempdir().unwrap();
    let service = Realtime::start(dir.path(), &["ACME".to_owned()]);
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{}\nmaxDuration: 20s\nhttp: {{maxConnections: 2}}\nscenarios:\n  - name: s\n    \
             injection: [{{atOnceUsers: 1}}]\n    steps:\n      \
             - request: {{name: quote, path: /realtime/quotes/ACME}}\n      \
             - ws: {{name: connect, connect: /realtime/stream}}\n      \
             - sse: {{name: events, connect: /realtime/quotes/ACME/events, await: {{messages: 1}}}}\n      \
             - request: {{name: again, path: /realtime/quotes/ACME}}\n",
            service.addr
        ),
    );
    volley(dir.path(), &file, &[]).success();
    let r = results(dir.path());
    assert_eq!(r["cutAtMaxDuration"], false);
    for name in ["quote", "connect", "events", "again"] {
        assert_eq!(counts(&r, name), (1, 0), "{name}: {}", r["errors"]);
    }
}

/// A server that accepts the connection and never answers the upgrade, nor the event
/// stream's request: each step is KO at `http.requestTimeout`, in a request's words.
///
/// Catches: a connect that waits for ever (the user stalls until `maxDuration`).
#[test]
fn a_silent_server_times_the_connect_out() {
    let dir = tempfile::tempdir().unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().map_while(Result::ok) {
            held.push(s);
        }
    });
    let file = scenario(
        dir.path(),
        &format!(
            "baseUrl: http://{addr}\nmaxDuration: 20s\nhttp: {{requestTimeout: 500ms}}\nscenarios:\n  - name: s\n    \
             injection: [{{atOnceUsers: 1}}]\n    steps:\n      \
             - ws: {{name: connect, connect: /ws}}\n      \
             - sse: {{name: events, connect: /events}}\n"
        ),
    );
    volley(dir.path(), &file, &[]).success();
    let r = results(dir.path());
    assert_eq!(r["cutAtMaxDuration"], false);
    assert_eq!(counts(&r, "connect"), (0, 1));
    assert_eq!(counts(&r, "events"), (0, 1));
    assert_eq!(
        error_count(&r, "Request timeout after 500 ms"),
        2,
        "{}",
        r["errors"]
    );
}
