//! Appender keys of the `logging:` section, each shown changing what lands in a real file or
//! on a real socket: the file appender's `archive` and `bufferSize`, every appender's
//! `includeCallerData` and `timeZone`, the JSON layout's options, and the network
//! appenders' `sendBufferSize`, `supportedProtocols` and `connectionTimeout`.
//!
//! Every configuration is written as YAML and read by the real loader, so the keys are
//! pinned as users spell them, then started with `LoggingFactory::build` on a `Dispatch` of
//! its own (no global subscriber).

use std::io::Read;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};

use ferrowizard_logging::{Logging, LoggingFactory};
use serde_json::Value;
use tracing::Dispatch;

/// Loads `yaml` (the body of `logging:`, `DIR` replaced by `dir`) with the real loader and
/// starts it.
fn build(dir: &Path, yaml: &str) -> (Logging, Dispatch) {
    let text = yaml.replace("DIR", &dir.display().to_string());
    let factory: LoggingFactory = ferrowizard_config::Loader::new()
        .load_str("logging.yaml", &text)
        .unwrap_or_else(|e| panic!("{e}\n{text}"));
    let (logging, subscriber) = factory.build("appender-keys").expect("build");
    (logging, Dispatch::new(subscriber))
}

/// Runs `f` with `dispatch` as the default subscriber.
fn with(dispatch: &Dispatch, f: impl FnOnce()) {
    tracing::dispatcher::with_default(dispatch, f);
}

/// Waits up to 20 s until appender `i` has written or dropped `n` events (the writer counts
/// a line written once its sink's `write` returned).
fn wait_taken(logging: &Logging, i: usize, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let total = logging.stats()[i].total();
        if total.written + total.dropped >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "appender {i} took {total:?} of {n} events"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_default()
}

/// A 49-character message (a 50-byte line with `%m%n`).
fn message(i: usize) -> String {
    format!("{:<49}", format!("line {i:03}"))
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// `archive` (file appender): with `archive: false` the file is never rotated, however
/// small `maxFileSize` is and whatever `archivedLogFilenamePattern` says: one file grows
/// with every line and no archive appears. With `archive: true` (the default) the same
/// settings rotate it into archives.
///
/// Catches: `archive` ignored (rotation set up whenever a pattern is given: archives would
/// appear with `archive: false`), and a default of false (no archives without the key).
#[test]
fn archive_false_keeps_one_growing_file_and_true_rotates() {
    for archive in [Some(false), None, Some(true)] {
        let dir = tempfile::tempdir().unwrap();
        let key = archive.map_or(String::new(), |a| format!("    archive: {a}\n"));
        let (logging, dispatch) = build(
            dir.path(),
            &format!(
                "appenders:\n  - type: file\n    currentLogFilename: 'DIR/app.log'\n{key}    \
                 archivedLogFilenamePattern: 'DIR/app-%i.log'\n    maxFileSize: 1KiB\n    \
                 archivedFileCount: 10\n    logFormat: '%m%n'\n"
            ),
        );
        with(&dispatch, || {
            for i in 0..100 {
                tracing::info!("{}", message(i));
            }
        });
        logging.shutdown(Duration::from_secs(10));
        let names = file_names(dir.path());
        let current = read(&dir.path().join("app.log"));
        if archive == Some(false) {
            assert_eq!(names, ["app.log"], "archive: false");
            assert_eq!(current.lines().count(), 100, "archive: false");
            assert_eq!(current.len(), 5000, "one file holds every line");
        } else {
            let archives = names.iter().filter(|n| n.starts_with("app-")).count();
            // 5000 bytes in files of at most 1 KiB (20 lines each).
            assert!(archives >= 4, "archive: {archive:?}: {names:?}");
            assert!(current.len() <= 1024, "archive: {archive:?}");
            let all: usize = names
                .iter()
                .map(|n| read(&dir.path().join(n)).lines().count())
                .sum();
            assert_eq!(all, 100, "archive: {archive:?}: {names:?}");
        }
    }
}

/// `bufferSize` (file appender, with `immediateFlush: false`): the write buffer before the
/// file. 40 lines of 50 bytes (2000 bytes) overflow a 512-byte buffer, so some are in the
/// file as soon as the writer has taken them, before any flush; a 64 KiB buffer holds them
/// all until `flush`.
///
/// Catches: `bufferSize` ignored (the 8 KiB default would hold the 2000 bytes: nothing in
/// the file with 512B), or applied as something other than the buffer's capacity.
#[test]
fn buffer_size_decides_when_unflushed_lines_reach_the_file() {
    for (size, some_before_flush) in [("512B", true), ("64KiB", false)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        let (logging, dispatch) = build(
            dir.path(),
            &format!(
                "appenders:\n  - type: file\n    currentLogFilename: 'DIR/app.log'\n    \
                 archive: false\n    immediateFlush: false\n    bufferSize: {size}\n    \
                 logFormat: '%m%n'\n"
            ),
        );
        with(&dispatch, || {
            for i in 0..40 {
                tracing::info!("{}", message(i));
            }
        });
        // Every line has been handed to the file sink (counted written), none flushed.
        wait_taken(&logging, 0, 40);
        assert_eq!(logging.stats()[0].total().written, 40, "bufferSize {size}");
        let before = read(&path).lines().count();
        if some_before_flush {
            assert!(
                before > 0,
                "bufferSize {size}: nothing in the file before a flush"
            );
        } else {
            assert_eq!(
                before, 0,
                "bufferSize {size}: lines in the file before a flush"
            );
        }
        assert!(logging.flush(Duration::from_secs(10)));
        assert_eq!(read(&path).lines().count(), 40, "bufferSize {size}");
    }
}

/// `includeCallerData`: with it, `%F:%L` prints this file and the line of the logging
/// call; without it, `?:?` (the pattern's text for an event without caller data).
///
/// Catches: caller data never recorded (`?:?` with true), or always recorded (a file and
/// line with false).
#[test]
fn include_caller_data_prints_the_file_and_line_of_the_call() {
    for include in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (logging, dispatch) = build(
            dir.path(),
            &format!(
                "appenders:\n  - type: file\n    currentLogFilename: 'DIR/app.log'\n    \
                 archive: false\n    includeCallerData: {include}\n    logFormat: '%F:%L %m%n'\n"
            ),
        );
        let mut line = 0;
        with(&dispatch, || {
            tracing::info!("called");
            line = line!() - 1;
        });
        logging.shutdown(Duration::from_secs(10));
        let text = read(&dir.path().join("app.log"));
        let want = if include {
            format!("{}:{line} called\n", file!())
        } else {
            "?:? called\n".to_owned()
        };
        assert_eq!(text, want, "includeCallerData: {include}");
        assert!(
            !include || text.contains("appender_keys.rs:"),
            "{text}: not this file"
        );
    }
}

/// `includeCallerData` is per appender: of two appenders of the same logger, the one
/// without it prints `?:?` even though the other records the caller.
///
/// Catches: caller data recorded for every appender of an event as soon as one of them
/// asks for it (an event routed to several appenders is captured once and copied).
#[test]
fn include_caller_data_is_per_appender_when_two_share_a_logger() {
    let dir = tempfile::tempdir().unwrap();
    let (logging, dispatch) = build(
        dir.path(),
        "appenders:\n  - type: file\n    currentLogFilename: 'DIR/with.log'\n    archive: false\n    \
         includeCallerData: true\n    logFormat: '%F:%L %m%n'\n  - type: file\n    \
         currentLogFilename: 'DIR/without.log'\n    archive: false\n    \
         includeCallerData: false\n    logFormat: '%F:%L %m%n'\n",
    );
    let mut line = 0;
    with(&dispatch, || {
        tracing::info!("called");
        line = line!() - 1;
    });
    logging.shutdown(Duration::from_secs(10));
    assert_eq!(
        read(&dir.path().join("with.log")),
        format!("{}:{line} called\n", file!()),
        "the appender with includeCallerData: true"
    );
    assert_eq!(
        read(&dir.path().join("without.log")),
        "?:? called\n",
        "the appender with includeCallerData: false printed the caller"
    );
}

/// Minutes since midnight of an `HH:mm` text.
fn minute_of_day(hh_mm: &str) -> i64 {
    let (h, m) = hh_mm.split_once(':').unwrap();
    h.parse::<i64>().unwrap() * 60 + m.parse::<i64>().unwrap()
}

/// `timeZone` on an application appender: `%d` without a zone of its own prints the time
/// in the appender's zone: `GMT-02:00` shows `-0200` and a wall clock two hours behind
/// UTC's, `+05:30` shows `+0530` and five and a half hours ahead, the default `+0000`.
///
/// Catches: `timeZone` ignored (every file `+0000`), or the offset printed without the
/// clock moved (or the reverse).
#[test]
fn time_zone_sets_the_offset_and_the_clock_of_dates() {
    let dir = tempfile::tempdir().unwrap();
    let appender = |name: &str, zone: &str| {
        format!(
            "  - type: file\n    currentLogFilename: 'DIR/{name}.log'\n    archive: false\n{zone}    \
             logFormat: '%d{{yyyy-MM-dd HH:mm Z}} %m%n'\n"
        )
    };
    let (logging, dispatch) = build(
        dir.path(),
        &format!(
            "appenders:\n{}{}{}",
            appender("utc", ""),
            appender("minus2", "    timeZone: GMT-02:00\n"),
            appender("plus530", "    timeZone: '+05:30'\n"),
        ),
    );
    with(&dispatch, || tracing::info!("zoned"));
    logging.shutdown(Duration::from_secs(10));
    let re = regex::Regex::new(r"^\d{4}-\d{2}-\d{2} (\d{2}:\d{2}) ([+-]\d{4}) zoned\n$").unwrap();
    let parse = |name: &str| {
        let text = read(&dir.path().join(format!("{name}.log")));
        let c = re
            .captures(&text)
            .unwrap_or_else(|| panic!("{name}: {text:?}"));
        (minute_of_day(&c[1]), c[2].to_owned())
    };
    let (utc, utc_offset) = parse("utc");
    let (minus2, minus2_offset) = parse("minus2");
    let (plus530, plus530_offset) = parse("plus530");
    assert_eq!(
        (
            utc_offset.as_str(),
            minus2_offset.as_str(),
            plus530_offset.as_str()
        ),
        ("+0000", "-0200", "+0530")
    );
    // The same event: the clocks differ by the offsets (modulo a day).
    assert_eq!((minus2 - utc).rem_euclid(1440), 1440 - 120);
    assert_eq!((plus530 - utc).rem_euclid(1440), 330);
}

/// What a file appender with `layout: {type: json, <layout>}` writes for the events `f`
/// logs (`layout` holds the layout's other keys, one per line, indented 6).
fn json_text(layout: &str, f: impl FnOnce()) -> String {
    let dir = tempfile::tempdir().unwrap();
    let (logging, dispatch) = build(
        dir.path(),
        &format!(
            "appenders:\n  - type: file\n    currentLogFilename: 'DIR/app.json'\n    \
             archive: false\n    layout:\n      type: json\n{layout}"
        ),
    );
    with(&dispatch, f);
    logging.shutdown(Duration::from_secs(10));
    read(&dir.path().join("app.json"))
}

/// The one JSON object of `text`.
fn object(text: &str) -> serde_json::Map<String, Value> {
    match serde_json::from_str(text) {
        Ok(Value::Object(o)) => o,
        other => panic!("{text:?}: {other:?}"),
    }
}

fn keys(o: &serde_json::Map<String, Value>) -> Vec<&str> {
    let mut k: Vec<&str> = o.keys().map(String::as_str).collect();
    k.sort();
    k
}

fn one_event() {
    tracing::info!(target: "keys::json", "hello");
}

/// `timestampFormat` (JSON layout): the timestamp becomes a string in that format instead
/// of the default epoch milliseconds, a number.
///
/// Catches: the format ignored (a number either way).
#[test]
fn json_timestamp_format_writes_a_formatted_string() {
    let default = object(&json_text("", one_event));
    assert!(
        default["timestamp"].as_i64().unwrap() > 1_700_000_000_000,
        "{default:?}"
    );
    let formatted = object(&json_text(
        "      timestampFormat: \"yyyy-MM-dd'T'HH:mm:ss.SSS\"\n",
        one_event,
    ));
    let ts = formatted["timestamp"].as_str().expect("a string timestamp");
    assert!(
        regex::Regex::new(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}$")
            .unwrap()
            .is_match(ts),
        "{ts}"
    );
}

/// `prettyPrint` (JSON layout): one object spans several lines (one per field) instead of
/// one line, and still parses to the same fields.
///
/// Catches: `prettyPrint` ignored (one line either way).
#[test]
fn json_pretty_print_spreads_an_object_over_lines() {
    let compact = json_text("", one_event);
    assert_eq!(compact.lines().count(), 1, "{compact}");
    let pretty = json_text("      prettyPrint: true\n", one_event);
    assert!(pretty.lines().count() >= 5, "{pretty}");
    assert!(pretty.contains("\n  \"level\":"), "{pretty}");
    assert_eq!(keys(&object(&pretty)), keys(&object(&compact)));
    assert_eq!(object(&pretty)["message"], "hello");
}

/// `appendLineSeparator: false` (JSON layout): objects follow each other with no newline
/// between them; with the default (true) each ends its line.
///
/// Catches: `appendLineSeparator` ignored (a newline after every object either way).
#[test]
fn json_append_line_separator_false_runs_objects_together() {
    let two = || {
        tracing::info!("first");
        tracing::info!("second");
    };
    let separated = json_text("", two);
    assert_eq!(separated.lines().count(), 2, "{separated}");
    assert!(separated.ends_with("}\n"), "{separated}");
    let joined = json_text("      appendLineSeparator: false\n", two);
    assert!(!joined.contains('\n'), "{joined}");
    assert!(joined.contains("}{"), "{joined}");
    let messages: Vec<Value> = serde_json::Deserializer::from_str(&joined)
        .into_iter::<Value>()
        .map(|v| v.unwrap()["message"].clone())
        .collect();
    assert_eq!(messages, ["first", "second"]);
}

/// `includes` (JSON layout): only the listed fields are written.
///
/// Catches: `includes` ignored (the default set: timestamp, level, thread, logger,
/// message).
#[test]
fn json_includes_writes_only_the_listed_fields() {
    let default = object(&json_text("", one_event));
    assert_eq!(
        keys(&default),
        ["level", "logger", "message", "thread", "timestamp"]
    );
    let picked = object(&json_text("      includes: [level, message]\n", one_event));
    assert_eq!(keys(&picked), ["level", "message"]);
    assert_eq!(
        (&picked["level"], &picked["message"]),
        (&"INFO".into(), &"hello".into())
    );
}

/// `customFieldNames` (JSON layout): fields are written under the given names.
///
/// Catches: the renames ignored (`level` and `message` under their own names).
#[test]
fn json_custom_field_names_rename_fields() {
    let renamed = object(&json_text(
        "      customFieldNames:\n        level: severity\n        message: msg\n",
        one_event,
    ));
    assert_eq!(
        keys(&renamed),
        ["logger", "msg", "severity", "thread", "timestamp"]
    );
    assert_eq!(renamed["severity"], "INFO");
    assert_eq!(renamed["msg"], "hello");
}

/// `additionalFields` (JSON layout): constant fields added to every object.
///
/// Catches: the fields ignored (absent).
#[test]
fn json_additional_fields_are_added_to_every_object() {
    let text = json_text(
        "      additionalFields:\n        service: realtime\n        region: eu-1\n",
        || {
            tracing::info!("first");
            tracing::warn!("second");
        },
    );
    let objects: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objects.len(), 2, "{text}");
    for o in &objects {
        assert_eq!(
            (&o["service"], &o["region"]),
            (&"realtime".into(), &"eu-1".into()),
            "{o}"
        );
    }
    let default = object(&json_text("", one_event));
    assert!(!default.contains_key("service"));
}

/// `flattenMdc` (JSON layout): a span's fields are written at the top level of the object
/// instead of under `mdc`.
///
/// Catches: `flattenMdc` ignored (`mdc.request_id` either way), or the fields lost when
/// flattened.
#[test]
fn json_flatten_mdc_puts_span_fields_at_the_top_level() {
    let in_span = || {
        let span = tracing::info_span!("request", request_id = "r-42");
        let _entered = span.enter();
        tracing::info!("inside");
    };
    let nested = object(&json_text("", in_span));
    assert_eq!(nested["mdc"]["request_id"], "r-42", "{nested:?}");
    assert!(!nested.contains_key("request_id"));
    let flat = object(&json_text("      flattenMdc: true\n", in_span));
    assert_eq!(flat["request_id"], "r-42", "{flat:?}");
    assert!(!flat.contains_key("mdc"), "{flat:?}");
}

/// Bytes received on `conn` until it is closed or nothing comes for 3 s.
fn drain(mut conn: TcpStream) -> usize {
    conn.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut buf = vec![0; 64 * 1024];
    let mut total = 0;
    loop {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return total,
            Ok(n) => total += n,
        }
    }
}

/// How many bytes a tcp appender with `sendBufferSize: size` gets onto a connection whose
/// receiver does not read (its receive buffer made small), before a write times out and the
/// appender drops the connection: the socket's send buffer plus the receiver's small one.
fn absorbed_by_a_stalled_receiver(size: &str) -> usize {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    // Inherited by the accepted connection: the receiving side holds little.
    socket.set_recv_buffer_size(4096).unwrap();
    socket
        .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    socket.listen(8).unwrap();
    let listener: TcpListener = socket.into();
    let port = listener.local_addr().unwrap().port();
    let dir = tempfile::tempdir().unwrap();
    let (logging, dispatch) = build(
        dir.path(),
        &format!(
            "appenders:\n  - type: tcp\n    host: 127.0.0.1\n    port: {port}\n    \
             sendBufferSize: {size}\n    logFormat: '%m%n'\n"
        ),
    );
    // 2000 lines of 1000 bytes: 2 MB, more than either buffer holds.
    let n = 2000;
    let line = "x".repeat(999);
    with(&dispatch, || {
        for _ in 0..n {
            tracing::info!("{line}");
        }
    });
    let (conn, _) = listener.accept().unwrap();
    // Later connections are refused: only the first one is measured.
    drop(listener);
    // Until a write on the stalled connection timed out (it is then closed), or everything
    // fit.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let total = logging.stats()[0].total();
        if total.dropped > 0 || total.written == n {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "sendBufferSize {size}: {total:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let received = drain(conn);
    logging.shutdown(Duration::from_secs(2));
    received
}

/// `sendBufferSize` (tcp appender): the connection's `SO_SNDBUF`. Against a receiver that
/// reads nothing, what the appender gets onto the connection before a write blocks (and
/// times out) is its send buffer plus the receiver's: with 4 KiB well under 512 KiB, with
/// 1 MiB several times more.
///
/// Catches: `sendBufferSize` ignored. Without `SO_SNDBUF` set, Linux sizes the send buffer
/// of a loopback connection itself, in megabytes (`net.ipv4.tcp_wmem`), and the 4 KiB case
/// would take in about as much as the 1 MiB one.
#[test]
fn send_buffer_size_bounds_what_a_stalled_connection_takes_in() {
    let small = absorbed_by_a_stalled_receiver("4KiB");
    let large = absorbed_by_a_stalled_receiver("1MiB");
    assert!(small > 0, "nothing arrived with 4KiB");
    assert!(
        small < 512 * 1024,
        "4KiB: {small} bytes taken in by a stalled connection"
    );
    assert!(
        large > 4 * small,
        "4KiB: {small} bytes, 1MiB: {large} bytes"
    );
}

/// How long a tcp appender with `connectionTimeout: timeout` takes, from the event to the
/// end of a flush, to give up on a listener whose accept queue is full; and its (written,
/// dropped).
fn give_up_on(port: u16, timeout: &str) -> (Duration, (u64, u64)) {
    let dir = tempfile::tempdir().unwrap();
    let (logging, dispatch) = build(
        dir.path(),
        &format!(
            "appenders:\n  - type: tcp\n    host: 127.0.0.1\n    port: {port}\n    \
             connectionTimeout: {timeout}\n    logFormat: '%m%n'\n"
        ),
    );
    let started = Instant::now();
    with(&dispatch, || tracing::info!("never connected"));
    assert!(logging.flush(Duration::from_secs(20)), "{timeout}: flush");
    let took = started.elapsed();
    let total = logging.stats()[0].total();
    logging.shutdown(Duration::from_secs(2));
    (took, (total.written, total.dropped))
}

/// `connectionTimeout` (tcp appender): how long the appender waits for a connection. A
/// listener whose accept queue is full (never accepted from) drops connection attempts, so
/// they hang until the timeout: with 100ms the line is dropped and the flush returns well
/// within 2 s; with 3s it takes at least 2.5 s.
///
/// Catches: `connectionTimeout` ignored (the default 500 ms both times: the 3s case would
/// end in about half a second).
#[test]
fn connection_timeout_bounds_the_wait_for_a_connection() {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket
        .bind(&"127.0.0.1:0".parse::<SocketAddr>().unwrap().into())
        .unwrap();
    socket.listen(1).unwrap();
    let listener: TcpListener = socket.into();
    let addr = listener.local_addr().unwrap();
    // Fill the accept queue with connections of our own, never accepted, until an attempt
    // hangs.
    let mut held = Vec::new();
    let full =
        (0..64).any(
            |_| match TcpStream::connect_timeout(&addr, Duration::from_millis(300)) {
                Ok(s) => {
                    held.push(s);
                    false
                }
                Err(_) => true,
            },
        );
    assert!(full, "the accept queue never filled");

    let (fast, counts) = give_up_on(addr.port(), "100ms");
    assert_eq!(counts, (0, 1), "100ms");
    assert!(
        fast < Duration::from_secs(2),
        "100ms: gave up after {fast:?}"
    );
    let (slow, counts) = give_up_on(addr.port(), "3s");
    assert_eq!(counts, (0, 1), "3s");
    assert!(
        slow >= Duration::from_millis(2500),
        "3s: gave up after {slow:?}"
    );
    drop(held);
}
