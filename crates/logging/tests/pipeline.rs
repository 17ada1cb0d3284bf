//! The pipeline end to end: real threads, real files, real sockets.

use std::collections::BTreeSet;
use std::io::Read;
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use ferrowizard_config::Level as ConfigLevel;
use ferrowizard_logging::config::{
    AppenderCommon, AppenderFactory, FileAppenderFactory, JsonLayoutFactory, LayoutFactory,
    LoggerConfig, SyslogAppenderFactory, SyslogProtocol, TcpAppenderFactory, TcpTarget,
};
use ferrowizard_logging::{Logging, LoggingFactory};
use tracing::Dispatch;

/// The settings every appender has, with the layout `format` and the others their defaults.
fn common(format: &str) -> AppenderCommon {
    AppenderCommon {
        log_format: Some(format.into()),
        ..Default::default()
    }
}

fn file_appender(path: &Path) -> FileAppenderFactory {
    FileAppenderFactory {
        current_log_filename: Some(path.display().to_string()),
        archive: false,
        common: common("%-5p %c %t %m%n"),
        ..Default::default()
    }
}

/// A syslog appender to `port` of 127.0.0.1 over `protocol`, with the layout `format`.
fn syslog_to(port: u16, protocol: SyslogProtocol, format: &str) -> SyslogAppenderFactory {
    SyslogAppenderFactory {
        common: common(format),
        host: "127.0.0.1".into(),
        port,
        protocol,
        ..Default::default()
    }
}

/// A TCP appender to `port` of 127.0.0.1.
fn tcp_to(port: u16) -> TcpAppenderFactory {
    TcpAppenderFactory {
        target: TcpTarget {
            host: "127.0.0.1".into(),
            port,
            ..Default::default()
        },
        ..Default::default()
    }
}

/// A port of 127.0.0.1 that nothing listens on: bound, then let go.
fn closed_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(factory: &LoggingFactory) -> (Logging, Dispatch) {
    let (logging, subscriber) = factory.build("pipeline-test").expect("build");
    (logging, Dispatch::new(subscriber))
}

/// Starts logging to `appenders`, every other setting its default.
fn start_with(appenders: Vec<AppenderFactory>) -> (Logging, Dispatch) {
    start(&LoggingFactory {
        appenders,
        ..Default::default()
    })
}

fn read_all(dir: &Path) -> Vec<String> {
    let mut lines = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let mut text = String::new();
        if path.extension().is_some_and(|e| e == "gz") {
            flate2::read::GzDecoder::new(std::fs::File::open(&path).unwrap())
                .read_to_string(&mut text)
                .unwrap();
        } else {
            text = std::fs::read_to_string(&path).unwrap();
        }
        lines.extend(text.lines().map(str::to_owned));
    }
    lines
}

/// Runs `threads` threads each emitting through `f(thread, i)` `per_thread` times.
fn hammer(dispatch: &Dispatch, threads: usize, per_thread: usize, f: fn(usize, usize)) {
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let dispatch = dispatch.clone();
            std::thread::spawn(move || {
                tracing::dispatcher::with_default(&dispatch, || {
                    (0..per_thread).for_each(|i| f(t, i))
                })
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn blocking_mode_writes_every_line_once_across_rotations() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    let current = logs.join("app.log");
    let mut appender = file_appender(&current);
    appender.archive = true;
    appender.archived_log_filename_pattern = Some(
        logs.join("app-%d{yyyy-MM-dd}-%i.log.gz")
            .display()
            .to_string(),
    );
    appender.max_file_size = Some(ferrowizard_config::Size::mebibytes(4));
    appender.archived_file_count = 0;
    appender.common.discarding_threshold = 0;
    appender.common.queue_size = 1024;
    let (logging, dispatch) = start_with(vec![AppenderFactory::File(appender)]);
    hammer(&dispatch, 4, 250_000, |t, i| {
        tracing::info!(thread = t, seq = i, "event")
    });
    let stats = logging.shutdown(Duration::from_secs(60));
    let total = stats[0].total();
    assert_eq!(
        (total.emitted, total.written, total.dropped),
        (1_000_000, 1_000_000, 0)
    );

    let lines = read_all(&logs);
    assert_eq!(lines.len(), 1_000_000);
    let mut seen = BTreeSet::new();
    for line in &lines {
        let t = field(line, "thread=");
        let i = field(line, "seq=");
        assert!(seen.insert((t, i)), "duplicate line {line}");
    }
    assert_eq!(seen.len(), 1_000_000);
    let archives = std::fs::read_dir(&logs)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "gz")
        })
        .count();
    assert!(
        archives >= 2,
        "expected rotations, found {archives} archives"
    );
}

/// Emits `n` events on another thread and fails if they do not all return within a minute:
/// a liveness bound, not a benchmark (a writer stalled on a dead destination would hang).
fn emit_or_hang(dispatch: Dispatch, event: fn(u64), n: u64) {
    let (done_tx, done_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        tracing::dispatcher::with_default(&dispatch, || (0..n).for_each(event));
        let _ = done_tx.send(());
    });
    done_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the application thread was blocked");
}

fn field(line: &str, name: &str) -> u64 {
    let start = line
        .find(name)
        .unwrap_or_else(|| panic!("{name} in {line}"))
        + name.len();
    line[start..].split(' ').next().unwrap().parse().unwrap()
}

#[test]
fn lossy_mode_accounts_for_every_event_per_level() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lossy.log");
    let mut appender = file_appender(&path);
    appender.common.queue_size = 64;
    appender.common.never_block = true;
    let factory = LoggingFactory {
        level: ConfigLevel::Trace,
        appenders: vec![AppenderFactory::File(appender)],
        ..Default::default()
    };
    let (logging, dispatch) = start(&factory);
    hammer(&dispatch, 4, 50_000, |t, i| match i % 5 {
        0 => tracing::trace!(t, i, "t"),
        1 => tracing::debug!(t, i, "d"),
        2 => tracing::info!(t, i, "i"),
        3 => tracing::warn!(t, i, "w"),
        _ => tracing::error!(t, i, "e"),
    });
    let stats = logging.shutdown(Duration::from_secs(30));
    let lines = std::fs::read_to_string(&path).unwrap();
    let mut total_written = 0;
    for (level, name) in [
        (tracing::Level::TRACE, "TRACE"),
        (tracing::Level::DEBUG, "DEBUG"),
        (tracing::Level::INFO, "INFO "),
        (tracing::Level::WARN, "WARN "),
        (tracing::Level::ERROR, "ERROR"),
    ] {
        let c = stats[0].level(level);
        assert_eq!(c.emitted, 40_000, "{name}");
        assert_eq!(c.emitted, c.written + c.dropped, "{name}: {c:?}");
        let in_file = lines.lines().filter(|l| l.starts_with(name)).count() as u64;
        assert_eq!(in_file, c.written, "{name}");
        total_written += c.written;
    }
    assert!(total_written > 0);
    assert!(
        stats[0].high_water_mark >= 1 && stats[0].high_water_mark <= 65,
        "{:?}",
        stats[0]
    );
}

#[test]
fn a_full_queue_drops_info_and_keeps_every_warn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("threshold.log");
    let mut appender = file_appender(&path);
    appender.common.queue_size = 8;
    appender.common.discarding_threshold = 8; // drop INFO as soon as one slot is taken
    let (logging, dispatch) = start_with(vec![AppenderFactory::File(appender)]);
    hammer(&dispatch, 4, 20_000, |_, i| {
        if i % 2 == 0 {
            tracing::info!(i, "droppable");
        } else {
            tracing::warn!(i, "kept");
        }
    });
    let stats = logging.shutdown(Duration::from_secs(30));
    let info = stats[0].level(tracing::Level::INFO);
    let warn = stats[0].level(tracing::Level::WARN);
    assert_eq!(info.emitted, 40_000);
    assert_eq!(info.emitted, info.written + info.dropped);
    assert!(info.dropped > 0, "{info:?}");
    assert_eq!(
        (warn.emitted, warn.written, warn.dropped),
        (40_000, 40_000, 0)
    );
    // The WARNs found the queue full and waited (INFO never waits: it is dropped), and each
    // wait is counted.
    assert!(
        stats[0].waited > 0 && stats[0].waited <= warn.emitted,
        "{:?}",
        stats[0]
    );
}

#[test]
fn loggers_route_to_their_own_appenders_and_additivity_holds() {
    let dir = tempfile::tempdir().unwrap();
    let root_path = dir.path().join("root.log");
    let quotes_path = dir.path().join("quotes.log");
    let mut loggers = std::collections::BTreeMap::new();
    loggers.insert(
        "pipeline::quotes".to_owned(),
        LoggerConfig {
            level: ConfigLevel::Debug,
            additive: false,
            appenders: vec![AppenderFactory::File(file_appender(&quotes_path))],
        },
    );
    loggers.insert(
        "pipeline::noisy".to_owned(),
        LoggerConfig::level(ConfigLevel::Warn),
    );
    let factory = LoggingFactory {
        loggers,
        appenders: vec![AppenderFactory::File(file_appender(&root_path))],
        ..Default::default()
    };
    let (logging, dispatch) = start(&factory);
    tracing::dispatcher::with_default(&dispatch, || {
        tracing::debug!(target: "pipeline::quotes::feed", "quote debug");
        tracing::info!(target: "pipeline::quotes", "quote info");
        tracing::info!(target: "pipeline::noisy", "noisy info");
        tracing::warn!(target: "pipeline::noisy", "noisy warn");
        tracing::debug!(target: "pipeline::other", "other debug");
        tracing::info!(target: "pipeline::other", "other info");
    });
    logging.shutdown(Duration::from_secs(5));
    let root = std::fs::read_to_string(&root_path).unwrap();
    let quotes = std::fs::read_to_string(&quotes_path).unwrap();
    assert_eq!(
        quotes,
        "DEBUG pipeline::quotes::feed main quote debug\nINFO  pipeline::quotes main quote info\n"
            .replace("main", &thread_name())
    );
    assert!(!root.contains("quote"), "{root}");
    assert!(
        root.contains("noisy warn") && !root.contains("noisy info"),
        "{root}"
    );
    assert!(
        root.contains("other info") && !root.contains("other debug"),
        "{root}"
    );
}

fn thread_name() -> String {
    std::thread::current().name().unwrap_or("main").to_owned()
}

/// A level change is seen at once by threads that have logged before it (long-lived ones,
/// whose call sites' interest is already cached), and a timed change reverts by itself.
///
/// The timed level lasts 60 s while the threads log under it, so that no slowness of the
/// machine ends it early; a second timed change of 300 ms replaces it, and the test waits
/// for that one to revert.
///
/// Catches: a change that does not rebuild the call sites' interest (the long-lived threads
/// keep the old level), and a revert that never comes.
#[test]
fn level_changes_are_seen_by_every_thread_and_revert() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("levels.log");
    let (logging, dispatch) = start_with(vec![AppenderFactory::File(file_appender(&path))]);
    // Four threads for the whole test, each logging once per phase at DEBUG.
    let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
    let workers: Vec<(
        std::sync::mpsc::Sender<&'static str>,
        std::thread::JoinHandle<()>,
    )> = (0..4)
        .map(|t| {
            let (tx, rx) = std::sync::mpsc::channel::<&'static str>();
            let (d, done) = (dispatch.clone(), done_tx.clone());
            let handle = std::thread::spawn(move || {
                tracing::dispatcher::with_default(&d, || {
                    for tag in rx {
                        tracing::debug!(target: "pipeline::levels", t, tag);
                        done.send(()).unwrap();
                    }
                })
            });
            (tx, handle)
        })
        .collect();
    let emit = |tag: &'static str| {
        for (tx, _) in &workers {
            tx.send(tag).unwrap();
        }
        for _ in &workers {
            done_rx.recv().unwrap();
        }
    };
    // Changes are made where the dispatcher is the default, as the admin task's are where
    // it is installed globally: with a single dispatcher, tracing-core rebuilds the call
    // sites' interest with the calling thread's default. Each returns the admin task's reply.
    let set = |level: Option<ConfigLevel>, duration: Option<Duration>| {
        tracing::dispatcher::with_default(&dispatch, || {
            logging
                .levels()
                .set("pipeline::levels", level, duration)
                .unwrap()
        })
    };
    emit("before");
    let reply = set(Some(ConfigLevel::Debug), None);
    assert_eq!(
        reply,
        "Configured logging level for pipeline::levels to DEBUG"
    );
    emit("during");
    let reply = set(None, None);
    assert_eq!(
        reply,
        "Configured logging level for pipeline::levels to the configured level"
    );
    emit("after");
    let reply = set(Some(ConfigLevel::Trace), Some(Duration::from_secs(60)));
    assert_eq!(
        reply,
        "Configured logging level for pipeline::levels to TRACE for 60000 milliseconds"
    );
    emit("timed");
    let reply = set(Some(ConfigLevel::Trace), Some(Duration::from_millis(300)));
    assert_eq!(
        reply,
        "Configured logging level for pipeline::levels to TRACE for 300 milliseconds"
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while logging
        .levels()
        .effective()
        .iter()
        .any(|(n, _)| n == "pipeline::levels")
    {
        assert!(Instant::now() < deadline, "the timed level did not revert");
        std::thread::sleep(Duration::from_millis(20));
    }
    emit("reverted");
    for (tx, handle) in workers {
        drop(tx);
        handle.join().unwrap();
    }
    logging.shutdown(Duration::from_secs(5));
    let text = std::fs::read_to_string(&path).unwrap();
    let count = |tag: &str| {
        text.lines()
            .filter(|l| l.ends_with(&format!("tag=\"{tag}\"")) || l.ends_with(tag))
            .count()
    };
    assert_eq!(
        [
            count("before"),
            count("during"),
            count("after"),
            count("timed"),
            count("reverted")
        ],
        [0, 4, 0, 4, 0],
        "{text}"
    );
}

#[test]
fn json_layout_writes_dropwizard_fields() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("json.log");
    let mut appender = file_appender(&path);
    appender.common.layout = Some(LayoutFactory::Json(JsonLayoutFactory {
        custom_field_names: [("message".to_owned(), "msg".to_owned())].into(),
        additional_fields: [("service".to_owned(), "realtime".to_owned())].into(),
        ..Default::default()
    }));
    let (logging, dispatch) = start_with(vec![AppenderFactory::File(appender)]);
    tracing::dispatcher::with_default(&dispatch, || {
        let span = tracing::info_span!("request", request_id = "r-1");
        let _e = span.enter();
        let err = std::io::Error::other("disk \"full\"");
        tracing::error!(target: "pipeline::json", error = &err as &dyn std::error::Error, symbol = "ACME", "line one\nline two");
    });
    logging.shutdown(Duration::from_secs(5));
    let text = std::fs::read_to_string(&path).unwrap();
    let v: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(v["level"], "ERROR");
    assert_eq!(v["logger"], "pipeline::json");
    assert_eq!(v["msg"], "line one\nline two");
    assert_eq!(v["exception"], "disk \"full\"");
    assert_eq!(v["mdc"]["request_id"], "r-1");
    assert_eq!(v["mdc"]["symbol"], "ACME");
    assert_eq!(v["service"], "realtime");
    assert!(v["timestamp"].as_i64().unwrap() > 1_700_000_000_000);
    assert!(v["thread"].is_string());
}

/// A thread's context (`ferrowizard_logging::context`) reaches `%X{key}` and the JSON
/// layout's `mdc` for the events logged inside its scope only; a span's field of the same name
/// wins.
///
/// Catches: the context ignored by either layout, a context left in place after its scope
/// (the last line would carry it), the context winning over a span.
#[test]
fn a_threads_context_is_the_mdc_of_the_events_inside_its_scope() {
    use ferrowizard_logging::context::Context;
    let dir = tempfile::tempdir().unwrap();
    let text_path = dir.path().join("text.log");
    let json_path = dir.path().join("json.log");
    let mut text = file_appender(&text_path);
    text.common.log_format = Some("%X{requestId}|%X{user}|%m%n".into());
    let mut json = file_appender(&json_path);
    json.common.layout = Some(LayoutFactory::Json(JsonLayoutFactory::default()));
    let (logging, dispatch) = start_with(vec![
        AppenderFactory::File(text),
        AppenderFactory::File(json),
    ]);
    tracing::dispatcher::with_default(&dispatch, || {
        let request = Context::new().with("requestId", "r-7").with("user", "ann");
        request.scope(|| {
            tracing::info!("inside");
            let span = tracing::info_span!("inner", user = "bob");
            let _e = span.enter();
            tracing::info!("in a span");
        });
        tracing::info!("outside");
    });
    logging.shutdown(Duration::from_secs(5));
    let lines: Vec<String> = std::fs::read_to_string(&text_path)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines, ["r-7|ann|inside", "r-7|bob|in a span", "||outside"]);
    let json: Vec<serde_json::Value> = std::fs::read_to_string(&json_path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(json[0]["mdc"]["requestId"], "r-7");
    assert_eq!(json[0]["mdc"]["user"], "ann");
    assert!(
        json[2]
            .get("mdc")
            .is_none_or(|m| m.get("requestId").is_none()),
        "{}",
        json[2]
    );
}

#[test]
fn time_based_rotation_by_the_second() {
    let dir = tempfile::tempdir().unwrap();
    let current = dir.path().join("t.log");
    let mut appender = file_appender(&current);
    appender.archive = true;
    appender.archived_log_filename_pattern = Some(
        dir.path()
            .join("t-%d{yyyy-MM-dd_HH-mm-ss}.log")
            .display()
            .to_string(),
    );
    appender.archived_file_count = 2;
    let (logging, dispatch) = start_with(vec![AppenderFactory::File(appender)]);
    let started = Instant::now();
    let mut n = 0u64;
    tracing::dispatcher::with_default(&dispatch, || {
        while started.elapsed() < Duration::from_millis(3500) {
            tracing::info!(n, "tick");
            n += 1;
            if n.is_multiple_of(100) {
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    });
    logging.shutdown(Duration::from_secs(5));
    let files: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    let archives = files.iter().filter(|f| f.starts_with("t-")).count();
    // At least three seconds passed: three rotations, of which archivedFileCount keeps 2.
    assert_eq!(archives, 2, "{files:?}");
    // The kept archives and the current file hold a contiguous tail of the sequence.
    let mut seqs: Vec<u64> = read_all(dir.path())
        .iter()
        .map(|l| field(l, "n="))
        .collect();
    seqs.sort();
    assert!(
        seqs.windows(2).all(|w| w[1] == w[0] + 1),
        "a line is missing or doubled"
    );
    assert_eq!(*seqs.last().unwrap(), n - 1);
}

#[test]
fn an_unwritable_file_counts_errors_and_never_blocks() {
    let mut appender = file_appender(Path::new("/dev/full"));
    appender.common.discarding_threshold = 0; // blocking mode: only a stalled writer could block us
    appender.common.queue_size = 16;
    let (logging, dispatch) = start_with(vec![AppenderFactory::File(appender)]);
    emit_or_hang(dispatch, |i| tracing::info!(i, "to /dev/full"), 100_000);
    let stats = logging.shutdown(Duration::from_secs(10));
    let total = stats[0].total();
    assert_eq!(total.emitted, 100_000);
    assert_eq!(total.written, 0);
    assert_eq!(total.dropped, 100_000);
    assert!(stats[0].write_errors > 0);
}

#[test]
fn syslog_over_udp_is_rfc_5424() {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let port = socket.local_addr().unwrap().port();
    let syslog = syslog_to(port, SyslogProtocol::Udp, "%c: %m");
    let (logging, dispatch) = start_with(vec![AppenderFactory::Syslog(syslog)]);
    tracing::dispatcher::with_default(
        &dispatch,
        || tracing::warn!(target: "pipeline::syslog", code = 7, "disk nearly full"),
    );
    logging.shutdown(Duration::from_secs(5));
    let mut buf = [0u8; 2048];
    let n = socket.recv(&mut buf).unwrap();
    let msg = String::from_utf8_lossy(&buf[..n]);
    // local0 (16) * 8 + warning (4) = 132.
    assert!(msg.starts_with("<132>1 "), "{msg}");
    assert!(
        msg.ends_with(" pipeline-test ".to_owned().trim_end()) || msg.contains(" pipeline-test "),
        "{msg}"
    );
    assert!(
        msg.ends_with("- - pipeline::syslog: disk nearly full code=7"),
        "{msg}"
    );
}

#[test]
fn syslog_over_tcp_is_octet_counted_and_a_closed_port_never_blocks() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let syslog = syslog_to(port, SyslogProtocol::Tcp, "%m");
    let (logging, dispatch) = start_with(vec![AppenderFactory::Syslog(syslog)]);
    tracing::dispatcher::with_default(&dispatch, || {
        tracing::info!("one");
        tracing::info!("two");
    });
    logging.flush(Duration::from_secs(5));
    let (mut conn, _) = listener.accept().unwrap();
    logging.shutdown(Duration::from_secs(5));
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    // RFC 6587 octet counting: LEN SP MSG, repeated.
    let mut rest = text.as_str();
    let mut frames = Vec::new();
    while !rest.is_empty() {
        let (len, after) = rest.split_once(' ').unwrap();
        let len: usize = len.parse().unwrap();
        frames.push(&after[..len]);
        rest = &after[len..];
    }
    assert_eq!(frames.len(), 2, "{text}");
    for (frame, word) in frames.iter().zip(["one", "two"]) {
        assert!(
            frame.starts_with("<134>1 ") && frame.ends_with(&format!("- - {word}")),
            "{frame}"
        );
    }
    assert!(
        text.starts_with(char::is_numeric),
        "octet count first: {text}"
    );

    // Now a TCP appender to a port nobody listens on.
    let tcp = tcp_to(closed_port());
    let (logging, dispatch) = start_with(vec![AppenderFactory::Tcp(tcp)]);
    emit_or_hang(dispatch, |i| tracing::warn!(i, "nobody listens"), 20_000);
    let stats = logging.shutdown(Duration::from_secs(10));
    let total = stats[0].total();
    assert_eq!(total.emitted, 20_000);
    assert_eq!(total.emitted, total.written + total.dropped);
    assert!(stats[0].write_errors > 0);
}

#[test]
fn a_tcp_peer_that_comes_back_gets_the_lines_again() {
    let port = closed_port();
    let tcp = TcpAppenderFactory {
        common: common("%m%n"),
        ..tcp_to(port)
    };
    let (logging, dispatch) = start_with(vec![AppenderFactory::Tcp(tcp)]);
    tracing::dispatcher::with_default(&dispatch, || tracing::warn!("while down"));
    logging.flush(Duration::from_secs(5));
    assert_eq!(logging.stats()[0].total().dropped, 1);
    // The peer comes up; the appender reconnects (at most once a second) and delivers.
    let listener = TcpListener::bind(("127.0.0.1", port)).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    tracing::dispatcher::with_default(&dispatch, || tracing::warn!("after recovery"));
    logging.flush(Duration::from_secs(5));
    let (mut conn, _) = listener.accept().unwrap();
    logging.shutdown(Duration::from_secs(5));
    let mut text = String::new();
    conn.read_to_string(&mut text).unwrap();
    assert_eq!(text, "after recovery\n");
}

#[test]
fn a_fixed_window_keeps_the_newest_archives_and_the_size_cap_holds() {
    let dir = tempfile::tempdir().unwrap();
    let current = dir.path().join("w.log");
    let mut appender = file_appender(&current);
    appender.archive = true;
    appender.archived_log_filename_pattern =
        Some(dir.path().join("w.%i.log").display().to_string());
    appender.max_file_size = Some(ferrowizard_config::Size::kibibytes(64));
    appender.archived_file_count = 3;
    appender.common.discarding_threshold = 0;
    let (logging, dispatch) = start_with(vec![AppenderFactory::File(appender)]);
    tracing::dispatcher::with_default(&dispatch, || {
        (0..20_000u64).for_each(|n| tracing::info!(n, "window"))
    });
    logging.shutdown(Duration::from_secs(10));
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["w.1.log", "w.2.log", "w.3.log", "w.log"]);
    // w.3 < w.2 < w.1 < w.log, contiguous: the newest lines were kept, in order.
    let seqs: Vec<u64> = ["w.3.log", "w.2.log", "w.1.log", "w.log"]
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(dir.path().join(f))
                .unwrap()
                .lines()
                .map(|l| field(l, "n="))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1));
    assert_eq!(*seqs.last().unwrap(), 19_999);
    for f in &names {
        assert!(
            std::fs::metadata(dir.path().join(f)).unwrap().len() <= 64 * 1024,
            "{f} is over maxFileSize"
        );
    }

    // totalSizeCap: archives beyond it are deleted, oldest first.
    let dir = tempfile::tempdir().unwrap();
    let mut appender = file_appender(&dir.path().join("c.log"));
    appender.archive = true;
    appender.archived_log_filename_pattern =
        Some(dir.path().join("c-%d{yyyy}-%i.log").display().to_string());
    appender.max_file_size = Some(ferrowizard_config::Size::kibibytes(16));
    appender.archived_file_count = 0;
    appender.total_size_cap = Some(ferrowizard_config::Size::kibibytes(40));
    appender.common.discarding_threshold = 0;
    let (logging, dispatch) = start_with(vec![AppenderFactory::File(appender)]);
    tracing::dispatcher::with_default(&dispatch, || {
        (0..5_000u64).for_each(|n| tracing::info!(n, "capped"))
    });
    logging.shutdown(Duration::from_secs(10));
    let archived: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name().to_string_lossy().starts_with("c-"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(
        archived > 0 && archived <= 40 * 1024,
        "archives hold {archived} bytes"
    );
}

/// A sink whose every write panics (a bug in a layout or sink should never happen; if it
/// does, the service must not hang).
struct Explodes;

impl ferrowizard_logging::sink::Sink for Explodes {
    fn write(&mut self, _: &[u8], _: &[usize]) -> std::io::Result<()> {
        panic!("the sink broke")
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
    fn describe(&self) -> String {
        "a sink that panics".into()
    }
}

#[test]
fn a_writer_that_panics_leaves_no_producer_waiting_and_every_event_counted() {
    use ferrowizard_logging::appender::{Appender, QueuePolicy};
    // Lossless, 8 slots: were the ring left open, the ninth WARN would wait for ever.
    let appender = Appender::start(
        "explodes",
        tracing::Level::TRACE,
        false,
        QueuePolicy::blocking(8),
        ferrowizard_logging::layout::Layout::Raw,
        Box::new(Explodes),
    )
    .unwrap();
    let started = std::time::Instant::now();
    let mut queued = 0;
    // Lines of 2 KiB: the writer's batch (256 KiB) is written, and the sink panics, before
    // the 200th line can be queued, however the threads are scheduled (with short lines the
    // writer could hold all 200 in its batch before writing any).
    let pad = "x".repeat(2048);
    for i in 0..200 {
        if appender.log(&tracing::Level::WARN, |r| {
            r.clear();
            r.set_message(|m| m.push_str(&format!("line {i} {pad}")));
        }) {
            queued += 1;
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "a producer waited"
    );
    assert!(queued < 200, "the events after the panic are refused");
    // Whatever was queued before the panic is counted as lost once the writer gave up.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let t = appender.stats().total();
        if t.emitted == 200 || std::time::Instant::now() > deadline {
            assert_eq!(t.emitted, 200, "{t:?}");
            assert_eq!(t.written, 0, "{t:?}");
            assert_eq!(t.dropped, 200, "{t:?}");
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(appender.stats().write_errors == 0);
}

/// Whether `path` holds a line containing `text` (read without flushing the appender).
fn file_has(path: &Path, text: &str) -> bool {
    std::fs::read_to_string(path).is_ok_and(|t| t.contains(text))
}

#[test]
fn lines_reach_the_file_without_a_flush_when_quiet_and_while_flowing() {
    let dir = tempfile::tempdir().unwrap();
    let current = dir.path().join("held.log");
    let (logging, dispatch) = start_with(vec![AppenderFactory::File(file_appender(&current))]);
    let within = |text: &str, limit: Duration| {
        let started = Instant::now();
        while started.elapsed() < limit {
            if file_has(&current, text) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        false
    };
    // One line, then nothing: written once the queue stays quiet.
    tracing::dispatcher::with_default(&dispatch, || tracing::info!("alone"));
    assert!(
        within("alone", Duration::from_secs(5)),
        "a quiet line was held"
    );

    // A steady trickle that never leaves the queue quiet for a nap (~1,600 short lines, ~70 KB
    // a second: a 256 KiB batch would take several seconds to fill): a marker logged
    // meanwhile still reaches the file soon, as the batch's hold is bounded.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let trickle = {
        let (dispatch, stop) = (dispatch.clone(), stop.clone());
        std::thread::spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    tracing::info!("t");
                    std::thread::sleep(Duration::from_micros(600));
                }
            })
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    tracing::dispatcher::with_default(&dispatch, || tracing::info!("marker"));
    let seen = within("marker", Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    trickle.join().unwrap();
    assert!(seen, "a line waited for the batch to fill");
    logging.shutdown(Duration::from_secs(5));
}
