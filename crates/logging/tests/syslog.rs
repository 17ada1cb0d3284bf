//! The syslog appender's messages against RFC 5424's grammar, over UDP, TCP (RFC 6587 octet
//! counting) and a unix datagram socket, received by real sockets of this test.
//!
//! Every message is matched whole by a regex built from the RFC's ABNF, and then each header
//! field is compared with its exact expected value: PRI = facility * 8 + severity, version 1,
//! a timestamp within a minute of now, this machine's host name, the application name, this
//! process's id, and `-` for MSGID and STRUCTURED-DATA.

use std::io::Read;
use std::net::{TcpListener, TcpStream, UdpSocket};
use std::os::unix::net::UnixDatagram;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use ferrowizard_config::Level as ConfigLevel;
use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::{
    AppenderFactory, Facility, SyslogAppenderFactory, SyslogProtocol,
};
use regex::Regex;
use tracing::{Dispatch, Level};

/// The application name the pipelines are built with.
const APP_NAME: &str = "syslog-test";

/// How long a receiver waits for a message: far beyond what delivery takes, even on a loaded
/// machine, and only reached when a message never comes.
const RECEIVE_TIMEOUT: Duration = Duration::from_secs(10);

/// Every level the appender maps, with its RFC 5424 severity (§6.2.1, table 2): tracing has
/// no NOTICE, and TRACE is as DEBUG.
const LEVELS: [(Level, u32); 5] = [
    (Level::ERROR, 3),
    (Level::WARN, 4),
    (Level::INFO, 6),
    (Level::DEBUG, 7),
    (Level::TRACE, 7),
];

/// RFC 5424 §6 as a regex, its ABNF rule by rule:
///
/// ```text
/// SYSLOG-MSG      = HEADER SP STRUCTURED-DATA [SP MSG]
/// HEADER          = PRI VERSION SP TIMESTAMP SP HOSTNAME SP APP-NAME SP PROCID SP MSGID
/// PRI             = "<" PRIVAL ">"            ; PRIVAL = 1*3DIGIT
/// VERSION         = NONZERO-DIGIT 0*2DIGIT
/// TIMESTAMP       = NILVALUE / FULL-DATE "T" FULL-TIME
/// FULL-TIME       = PARTIAL-TIME TIME-OFFSET
/// PARTIAL-TIME    = TIME-HOUR ":" TIME-MINUTE ":" TIME-SECOND [TIME-SECFRAC]
/// TIME-SECFRAC    = "." 1*6DIGIT
/// TIME-OFFSET     = "Z" / TIME-NUMOFFSET      ; ("+" / "-") TIME-HOUR ":" TIME-MINUTE
/// HOSTNAME        = NILVALUE / 1*255PRINTUSASCII
/// APP-NAME        = NILVALUE / 1*48PRINTUSASCII
/// PROCID          = NILVALUE / 1*128PRINTUSASCII
/// MSGID           = NILVALUE / 1*32PRINTUSASCII
/// STRUCTURED-DATA = NILVALUE / 1*SD-ELEMENT
/// SD-ELEMENT      = "[" SD-ID *(SP SD-PARAM) "]"
/// SD-PARAM        = PARAM-NAME "=" %d34 PARAM-VALUE %d34
/// SD-NAME         = 1*32PRINTUSASCII          ; except '=', SP, ']', %d34 (")
/// PARAM-VALUE     = UTF-8-STRING              ; '"', '\' and ']' escaped with '\'
/// PRINTUSASCII    = %d33-126
/// ```
static RFC_5424: LazyLock<Regex> = LazyLock::new(|| {
    let sd_name = r#"[!#-<>-\\^-~]{1,32}"#;
    let param_value = r#"(?:[^"\\\]]|\\["\\\]])*"#;
    let sd_element = format!(r#"\[{sd_name}(?: {sd_name}="{param_value}")*\]"#);
    let timestamp = r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?(?:Z|[+-][0-9]{2}:[0-9]{2})";
    Regex::new(&format!(
        r"(?s)^<(?P<pri>[0-9]{{1,3}})>(?P<version>[1-9][0-9]{{0,2}}) (?P<timestamp>-|{timestamp}) (?P<hostname>[!-~]{{1,255}}) (?P<app_name>[!-~]{{1,48}}) (?P<procid>[!-~]{{1,128}}) (?P<msgid>[!-~]{{1,32}}) (?P<sd>-|(?:{sd_element})+)(?: (?P<msg>.*))?$"
    ))
    .expect("the RFC 5424 regex")
});

/// Checks that `message` is an RFC 5424 message with priority `pri` and body `msg`, from this
/// host, application and process, stamped within a minute of now.
///
/// Every test goes through it, so each also catches a header written wrong for every
/// transport, such as `proc_id: std::process::id().to_string()` to `proc_id: "-".into()` or a
/// `%.9f` second fraction (RFC 5424 allows six digits) in `SyslogHeader` (sink/net.rs).
fn assert_rfc_5424(message: &str, pri: u32, msg: &str) {
    let Some(c) = RFC_5424.captures(message) else {
        panic!("not RFC 5424: {message:?}");
    };
    let field = |name: &str| c.name(name).map_or("", |m| m.as_str());
    let prival: u32 = field("pri").parse().expect("PRIVAL is digits");
    assert!(
        prival <= 191,
        "PRIVAL {prival} is out of range: {message:?}"
    );
    assert_eq!(prival, pri, "PRI of {message:?}");
    assert_eq!(field("version"), "1", "VERSION of {message:?}");
    let stamp: jiff::Timestamp = field("timestamp")
        .parse()
        .unwrap_or_else(|e| panic!("TIMESTAMP of {message:?} does not parse: {e}"));
    let age = jiff::Timestamp::now().duration_since(stamp).unsigned_abs();
    assert!(
        age <= Duration::from_secs(60),
        "TIMESTAMP of {message:?} is {age:?} from now"
    );
    let hostname = gethostname::gethostname();
    assert_eq!(
        field("hostname"),
        hostname.to_str().expect("a UTF-8 host name"),
        "HOSTNAME of {message:?}"
    );
    assert_eq!(field("app_name"), APP_NAME, "APP-NAME of {message:?}");
    assert_eq!(
        field("procid"),
        std::process::id().to_string(),
        "PROCID of {message:?}"
    );
    assert_eq!(field("msgid"), "-", "MSGID of {message:?}");
    assert_eq!(field("sd"), "-", "STRUCTURED-DATA of {message:?}");
    assert_eq!(
        c.name("msg").map(|m| m.as_str()),
        Some(msg),
        "MSG of {message:?}"
    );
}

/// The body of the message logged at `level` for `facility`: the `%c: %m` of an event
/// with target `syslog_test`.
fn body(facility: &str, level: Level) -> String {
    format!("syslog_test: {level} to {facility}")
}

/// Starts a syslog appender, logs one event per level of [`LEVELS`] through it (in that
/// order, with the bodies of [`body`]) and shuts it down, every event written.
fn log_every_level(syslog: SyslogAppenderFactory, facility: &str) {
    let factory = LoggingFactory {
        level: ConfigLevel::Trace,
        appenders: vec![AppenderFactory::Syslog(SyslogAppenderFactory {
            common: ferrowizard_logging::config::AppenderCommon {
                log_format: Some("%c: %m".into()),
                discarding_threshold: 0,
                ..Default::default()
            },
            ..syslog
        })],
        ..Default::default()
    };
    let (logging, subscriber) = factory.build(APP_NAME).expect("build");
    tracing::dispatcher::with_default(&Dispatch::new(subscriber), || {
        tracing::error!(target: "syslog_test", "ERROR to {facility}");
        tracing::warn!(target: "syslog_test", "WARN to {facility}");
        tracing::info!(target: "syslog_test", "INFO to {facility}");
        tracing::debug!(target: "syslog_test", "DEBUG to {facility}");
        tracing::trace!(target: "syslog_test", "TRACE to {facility}");
    });
    let stats = logging.shutdown(Duration::from_secs(30));
    let total = stats[0].total();
    assert_eq!(
        (total.emitted, total.written, total.dropped),
        (5, 5, 0),
        "{:?}",
        stats[0]
    );
}

/// The facilities of the table, with their RFC 5424 codes (§6.2.1, table 1): the lowest
/// (kern, whose PRI has one digit) and highest (local7, whose PRI reaches 191), and the
/// usual ones between.
const FACILITIES: [(Facility, &str, u32); 6] = [
    (Facility::Kern, "kern", 0),
    (Facility::User, "user", 1),
    (Facility::Daemon, "daemon", 3),
    (Facility::Auth, "auth", 4),
    (Facility::Local0, "local0", 16),
    (Facility::Local7, "local7", 23),
];

/// Over UDP, one datagram per event: every level of [`LEVELS`] to every facility of
/// [`FACILITIES`] is a whole RFC 5424 message with PRI = facility * 8 + severity (kern ERROR
/// `<3>` to local7 TRACE `<191>`), the header fields of [`assert_rfc_5424`], and the event's
/// line as MSG, without its newline. The receiver is on 127.0.0.2, which the default host
/// (`localhost`, 127.0.0.1) does not reach.
///
/// Catches the mutation `tracing::Level::INFO => 6` to `tracing::Level::INFO => 5` in
/// `SyslogHeader::write` (sink/net.rs): INFO sent as NOTICE; and `host`, `port` or `facility`
/// ignored (nothing received, or local0's PRI for every facility).
#[test]
fn udp_messages_carry_facility_times_8_plus_severity_for_every_level() {
    for (facility, name, code) in FACILITIES {
        let receiver = UdpSocket::bind("127.0.0.2:0").expect("bind a UDP socket");
        receiver
            .set_read_timeout(Some(RECEIVE_TIMEOUT))
            .expect("a read timeout");
        let port = receiver.local_addr().expect("its address").port();
        log_every_level(
            SyslogAppenderFactory {
                host: "127.0.0.2".into(),
                port,
                facility,
                protocol: SyslogProtocol::Udp,
                ..Default::default()
            },
            name,
        );
        for (level, severity) in LEVELS {
            let mut buf = [0u8; 4096];
            let n = receiver
                .recv(&mut buf)
                .unwrap_or_else(|e| panic!("no datagram for {name} {level}: {e}"));
            let message = std::str::from_utf8(&buf[..n]).expect("a UTF-8 message");
            assert_rfc_5424(message, code * 8 + severity, &body(name, level));
        }
    }
}

/// Accepts the connection on `listener` within [`RECEIVE_TIMEOUT`].
fn accept(listener: &TcpListener) -> TcpStream {
    listener
        .set_nonblocking(true)
        .expect("a non-blocking listener");
    let deadline = Instant::now() + RECEIVE_TIMEOUT;
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).expect("a blocking stream");
                return stream;
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                assert!(Instant::now() < deadline, "the appender never connected");
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("accept: {e}"),
        }
    }
}

/// Over TCP, RFC 6587 octet counting: the stream is exactly `MSG-LEN SP SYSLOG-MSG` frames,
/// one per event, each MSG-LEN the exact byte length of its message (no newline follows it),
/// and each message is RFC 5424 with daemon's PRI for its level and the header fields of
/// [`assert_rfc_5424`].
///
/// Catches the mutation `let _ = write!(frame, "{} ", line.len());` to
/// `let _ = write!(frame, "{} ", line.len() + 1);` in `TcpSink::write` (sink/net.rs): each
/// count then takes in the first byte of the next frame.
#[test]
fn tcp_frames_are_octet_counted_rfc_5424_messages() {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind a TCP listener");
    let port = listener.local_addr().expect("its address").port();
    log_every_level(
        SyslogAppenderFactory {
            host: "127.0.0.1".into(),
            port,
            facility: Facility::Daemon,
            protocol: SyslogProtocol::Tcp,
            ..Default::default()
        },
        "daemon",
    );
    // The appender connected on its first write and closed the connection at shutdown: the
    // stream holds everything it sent, and then ends.
    let mut stream = accept(&listener);
    stream
        .set_read_timeout(Some(RECEIVE_TIMEOUT))
        .expect("a read timeout");
    let mut bytes = Vec::new();
    stream.read_to_end(&mut bytes).expect("read the stream");
    let text = String::from_utf8(bytes).expect("UTF-8 frames");
    let mut rest = text.as_str();
    let mut frames = Vec::new();
    while !rest.is_empty() {
        let (len, after) = rest
            .split_once(' ')
            .unwrap_or_else(|| panic!("no MSG-LEN in {rest:?}"));
        assert!(
            len.starts_with(|c: char| ('1'..='9').contains(&c))
                && len.bytes().all(|b| b.is_ascii_digit()),
            "MSG-LEN {len:?} is not NONZERO-DIGIT *DIGIT in {text:?}"
        );
        let len: usize = len.parse().expect("MSG-LEN");
        assert!(after.len() >= len, "a frame is cut short in {text:?}");
        frames.push(&after[..len]);
        rest = &after[len..];
    }
    assert_eq!(frames.len(), LEVELS.len(), "{text:?}");
    for (frame, (level, severity)) in frames.iter().zip(LEVELS) {
        assert_rfc_5424(frame, 3 * 8 + severity, &body("daemon", level));
    }
}

/// Over a unix datagram socket (`protocol: unix`, as to `/dev/log`), at the `socketPath`
/// configured: one datagram per event, each RFC 5424 with auth's PRI for its level and the
/// header fields of [`assert_rfc_5424`]. The receiver is a socket bound in a temporary
/// directory.
///
/// Catches the mutation `SyslogProtocol::Unix => Box::new(DatagramSink::unix(socket_path)),`
/// to `SyslogProtocol::Unix => Box::new(DatagramSink::udp(host, port)),` in `syslog_sink`
/// (sink/net.rs): the messages then go by UDP to `host:port`, and none reaches the socket.
#[test]
fn unix_socket_datagrams_are_rfc_5424_messages() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("log.sock");
    let receiver = UnixDatagram::bind(&path).expect("bind a unix datagram socket");
    receiver
        .set_read_timeout(Some(RECEIVE_TIMEOUT))
        .expect("a read timeout");
    log_every_level(
        SyslogAppenderFactory {
            facility: Facility::Auth,
            protocol: SyslogProtocol::Unix,
            socket_path: path.display().to_string(),
            ..Default::default()
        },
        "auth",
    );
    for (level, severity) in LEVELS {
        let mut buf = [0u8; 4096];
        let n = receiver
            .recv(&mut buf)
            .unwrap_or_else(|e| panic!("no datagram for auth {level}: {e}"));
        let message = std::str::from_utf8(&buf[..n]).expect("a UTF-8 message");
        assert_rfc_5424(message, 4 * 8 + severity, &body("auth", level));
    }
}
