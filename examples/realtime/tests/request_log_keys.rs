//! The request log's appenders take the appender keys the application log's take (one
//! function builds both, `ferrowizard_logging::start_raw_appender`): shown here on the
//! realtime service, in the test's process, for each kind of destination, so that a key the
//! request log dropped on its way to that function fails here.

mod common;

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, UdpSocket};
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use common::{InProcess, Serving, connect, get, start_in_process_file, write_config};

const SERVER: &str = "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
                      adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  requestLog:\n    appenders:\n";

/// Starts realtime with these request-log appenders (a YAML list, indented by 6).
fn serve(dir: &Path, appenders: &str) -> InProcess {
    start_in_process_file(&write_config(
        dir,
        &format!("{SERVER}{appenders}logging:\n  level: WARN\n"),
    ))
}

fn requests(service: &InProcess, n: usize) {
    let mut c = connect(service.app);
    for _ in 0..n {
        assert_eq!(get(&mut c, "/realtime/quotes/ACME").unwrap(), 200);
    }
}

fn stop(service: InProcess) {
    service.shut_down();
}

fn files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("requests"))
        .collect();
    names.sort();
    names
}

/// `archive`, `archivedLogFilenamePattern`, `archivedFileCount`, `maxFileSize` and
/// `totalSizeCap` rotate the request log as they rotate the application's: each run changes
/// one of them and the files left show it.
///
/// Catches: any of the five dropped on the request log's way to the appender (archives under
/// another name, the default count of 5 kept, no rotation, a rotation despite `archive:
/// false`, or archives kept past a cap that no archive fits under).
#[test]
fn a_request_log_file_rotates_as_it_is_told() {
    let rotating = "      - type: file\n        currentLogFilename: DIR/requests.log\n        \
                    archivedLogFilenamePattern: DIR/requests-%i.log.gz\n        \
                    maxFileSize: 1KiB\n        archivedFileCount: 3\n        totalSizeCap: 1MiB\n";
    let dir = tempfile::tempdir().unwrap();
    let service = serve(dir.path(), rotating);
    requests(&service, 200);
    stop(service);
    let names = files(dir.path());
    // The current file and at most three archives, the oldest deleted.
    assert_eq!(
        names,
        [
            "requests-1.log.gz",
            "requests-2.log.gz",
            "requests-3.log.gz",
            "requests.log"
        ],
        "{names:?}"
    );
    // `archive: false`: one file, however large.
    let dir = tempfile::tempdir().unwrap();
    let service = serve(
        dir.path(),
        &rotating.replace(
            "        maxFileSize",
            "        archive: false\n        maxFileSize",
        ),
    );
    requests(&service, 200);
    stop(service);
    assert_eq!(files(dir.path()), ["requests.log"]);
    let lines = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
    assert_eq!(lines.lines().count(), 200);
    // `totalSizeCap: 1B`, below any archive's size: every archive is deleted as it is made,
    // where the count alone keeps three.
    let dir = tempfile::tempdir().unwrap();
    let service = serve(
        dir.path(),
        &rotating.replace("totalSizeCap: 1MiB", "totalSizeCap: 1B"),
    );
    requests(&service, 200);
    stop(service);
    assert_eq!(files(dir.path()), ["requests.log"]);
}

/// `immediateFlush: false` with `bufferSize`: lines wait in the buffer until it is full (or
/// the service stops); a small buffer fills and reaches the file at once.
#[test]
fn a_request_log_file_buffers_as_it_is_told() {
    for (buffer, empty_before_stop) in [("64KiB", true), ("512B", false)] {
        let dir = tempfile::tempdir().unwrap();
        let service = serve(
            dir.path(),
            &format!(
                "      - type: file\n        currentLogFilename: DIR/requests.log\n        archive: false\n        \
                 immediateFlush: false\n        bufferSize: {buffer}\n"
            ),
        );
        requests(&service, 20);
        // The writer has taken every line (it holds a batch 5 ms at most).
        std::thread::sleep(Duration::from_millis(500));
        let before = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
        assert_eq!(
            before.is_empty(),
            empty_before_stop,
            "bufferSize {buffer}: {before}"
        );
        stop(service);
        let after = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
        assert_eq!(after.lines().count(), 20, "bufferSize {buffer}");
    }
}

/// `messageRate` throttles the request log too: one line a minute.
#[test]
fn a_request_log_appender_keeps_to_its_message_rate() {
    let dir = tempfile::tempdir().unwrap();
    let service = serve(
        dir.path(),
        "      - type: file\n        currentLogFilename: DIR/requests.log\n        archive: false\n        \
         messageRate: 1 minute\n",
    );
    requests(&service, 10);
    stop(service);
    let text = std::fs::read_to_string(dir.path().join("requests.log")).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
}

/// A line from `rx`, or `None` after 10 s.
fn line(rx: &mpsc::Receiver<String>) -> Option<String> {
    rx.recv_timeout(Duration::from_secs(10)).ok()
}

/// `udp` (`host`, `port`) and `syslog` (`protocol: tcp`, `facility`) request-log appenders
/// reach their receivers, in their own framing. The receivers listen on 127.0.0.2, where
/// the default host (`localhost`, 127.0.0.1) reaches nothing.
///
/// Catches: `host`, `port`, `protocol` or `facility` dropped on the request log's way to the
/// appender (nothing received, or a PRI of local0's).
#[test]
fn request_log_lines_reach_udp_and_syslog_receivers() {
    let udp = UdpSocket::bind("127.0.0.2:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let tcp = TcpListener::bind("127.0.0.2:0").unwrap();
    let (tx, rx) = mpsc::channel();
    let tcp_port = tcp.local_addr().unwrap().port();
    std::thread::spawn(move || {
        if let Ok((s, _)) = tcp.accept() {
            let mut len = Vec::new();
            let mut r = BufReader::new(s);
            // Octet counting: `LEN SP MSG`, the first message.
            let _ = r.read_until(b' ', &mut len);
            let len: usize = String::from_utf8_lossy(&len).trim().parse().unwrap_or(0);
            let mut msg = vec![0; len];
            let _ = std::io::Read::read_exact(&mut r, &mut msg);
            let _ = tx.send(String::from_utf8_lossy(&msg).into_owned());
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let service = serve(
        dir.path(),
        &format!(
            "      - {{type: udp, host: 127.0.0.2, port: {}}}\n      \
             - {{type: syslog, host: 127.0.0.2, port: {tcp_port}, protocol: tcp, facility: user}}\n",
            udp.local_addr().unwrap().port()
        ),
    );
    requests(&service, 1);
    let mut buf = [0; 2048];
    let n = udp.recv(&mut buf).unwrap();
    let datagram = String::from_utf8_lossy(&buf[..n]).into_owned();
    assert!(
        datagram.contains("\"GET /realtime/quotes/ACME HTTP/1.1\" 200"),
        "{datagram}"
    );
    // facility user (1) * 8 + INFO (6).
    let message = line(&rx).unwrap_or_default();
    assert!(message.starts_with("<14>1 "), "{message}");
    assert!(
        message.contains("\"GET /realtime/quotes/ACME HTTP/1.1\" 200"),
        "{message}"
    );
    stop(service);
}

/// A CA, and a certificate it signs for `name`: (CA PEM, certificate, key).
fn certificates(
    name: &str,
) -> (
    String,
    rustls::pki_types::CertificateDer<'static>,
    rustls::pki_types::PrivateKeyDer<'static>,
) {
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = rcgen::CertifiedIssuer::self_signed(ca, rcgen::KeyPair::generate().unwrap()).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec![name.to_owned()])
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    (
        ca.pem(),
        cert.der().clone(),
        rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
    )
}

/// A TLS receiver (speaking TLS 1.2 and 1.3): the first line of each connection goes to the
/// channel, with the protocol version the connection took.
fn tls_receiver(
    cert: rustls::pki_types::CertificateDer<'static>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
) -> (
    u16,
    mpsc::Receiver<(Option<rustls::ProtocolVersion>, String)>,
) {
    let config = Arc::new(
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap(),
    );
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for s in listener.incoming().map_while(Result::ok) {
            let (config, tx) = (config.clone(), tx.clone());
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut r = BufReader::new(rustls::StreamOwned::new(conn, s));
                let mut text = String::new();
                if r.read_line(&mut text).is_ok() {
                    let _ = tx.send((r.get_ref().conn.protocol_version(), text));
                }
            });
        }
    });
    (port, rx)
}

/// `tls` request-log appenders: `caFile`, `validateServerHostname` and `validateCerts`
/// decide which receivers get the lines, and `supportedProtocols: [TLSv1.2]` the version they
/// arrive over (the receiver speaks 1.2 and 1.3; the default offers both, and 1.3 is taken).
///
/// Catches: `caFile`, `validateServerHostname`, `validateCerts` or `supportedProtocols`
/// dropped on the request log's way to the appender (nothing arrives, or it arrives over TLS
/// 1.3), or one of the two checks read for the other.
#[test]
fn request_log_lines_reach_a_tls_receiver_only_as_the_checks_allow() {
    let dir = tempfile::tempdir().unwrap();
    // The receiver's certificate names another host than the appenders connect to.
    let (ca, cert, key) = certificates("logs.example.com");
    std::fs::write(dir.path().join("ca.pem"), ca).unwrap();
    let (port, rx) = tls_receiver(cert, key);
    let appender = |settings: &str| {
        format!(
            "      - {{type: tls, host: localhost, port: {port}, supportedProtocols: [TLSv1.2], {settings}}}\n"
        )
    };
    // The name checked (the default): nothing arrives.
    let service = serve(dir.path(), &appender("caFile: DIR/ca.pem"));
    requests(&service, 1);
    assert_eq!(rx.recv_timeout(Duration::from_secs(2)).ok(), None);
    stop(service);
    for settings in [
        "caFile: DIR/ca.pem, validateServerHostname: false",
        "validateCerts: false",
    ] {
        let service = serve(dir.path(), &appender(settings));
        requests(&service, 1);
        let (version, got) = rx.recv_timeout(Duration::from_secs(10)).unwrap_or_default();
        assert!(
            got.contains("\"GET /realtime/quotes/ACME HTTP/1.1\" 200"),
            "{settings}: {got}"
        );
        assert_eq!(
            version,
            Some(rustls::ProtocolVersion::TLSv1_2),
            "{settings}"
        );
        stop(service);
    }
}
