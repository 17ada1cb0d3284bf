//! The `tls` appender against a real TLS receiver on loopback: lines arrive whole and in
//! order when the receiver's certificate checks out; a certificate from another CA, or for
//! another name, gets nothing until the check is switched off.

#[path = "../../tls/tests/support/certificates.rs"]
mod support_certificates;

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::Duration;

use ferrowizard_logging::LoggingFactory;
use ferrowizard_logging::config::{AppenderFactory, TcpTarget, TlsAppenderFactory};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};

/// A CA, and a certificate it signs for `names`: (CA PEM, certificate DER, key DER).
fn certificates(names: &[&str]) -> (String, CertificateDer<'static>, PrivateKeyDer<'static>) {
    support_certificates::ca_signed(names)
}

/// A TLS receiver on a free port: every line of every connection is sent on the channel.
fn receiver(
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
) -> (u16, mpsc::Receiver<String>) {
    receiver_speaking(cert, key, rustls::DEFAULT_VERSIONS)
}

/// [`receiver`], speaking only `versions`.
fn receiver_speaking(
    cert: CertificateDer<'static>,
    key: PrivateKeyDer<'static>,
    versions: &[&'static rustls::SupportedProtocolVersion],
) -> (u16, mpsc::Receiver<String>) {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(versions)
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().map_while(Result::ok) {
            let (config, tx) = (config.clone(), tx.clone());
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let tls = rustls::StreamOwned::new(conn, stream);
                for line in BufReader::new(tls).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (port, rx)
}

/// Logs `n` lines through a tls appender configured by `tune`; returns the lines received
/// within a few seconds and the appender's (written, dropped).
fn send(
    port: u16,
    ca: &Path,
    n: usize,
    tune: impl FnOnce(&mut TlsAppenderFactory),
    rx: &mpsc::Receiver<String>,
) -> (Vec<String>, (u64, u64)) {
    let mut appender = TlsAppenderFactory {
        common: ferrowizard_logging::config::AppenderCommon {
            log_format: Some("%-5p %c: %m%n".into()),
            ..Default::default()
        },
        target: TcpTarget {
            host: "localhost".into(),
            port,
            ..Default::default()
        },
        ca_file: Some(ca.display().to_string()),
        ..Default::default()
    };
    tune(&mut appender);
    let factory = LoggingFactory {
        appenders: vec![AppenderFactory::Tls(appender)],
        ..Default::default()
    };
    let (logging, subscriber) = factory.build("tls-test").unwrap();
    let dispatch = tracing::Dispatch::new(subscriber);
    tracing::dispatcher::with_default(&dispatch, || {
        for i in 0..n {
            tracing::info!(target: "com.example.app", "Application log {i}");
        }
    });
    logging.flush(Duration::from_secs(10));
    let total = logging.stats()[0].total();
    let mut lines = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_millis(if lines.len() < n {
        3000
    } else {
        100
    })) {
        lines.push(line);
        if lines.len() == n {
            break;
        }
    }
    (lines, (total.written, total.dropped))
}

#[test]
fn lines_arrive_over_tls_when_the_certificate_checks_out() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(&["localhost"]);
    std::fs::write(dir.path().join("ca.pem"), ca).unwrap();
    let (port, rx) = receiver(cert, key);
    let (lines, counts) = send(port, &dir.path().join("ca.pem"), 100, |_| {}, &rx);
    let want: Vec<String> = (0..100)
        .map(|i| format!("INFO  com.example.app: Application log {i}"))
        .collect();
    assert_eq!(lines, want);
    assert_eq!(counts, (100, 0));

    // TLS 1.3 only: still spoken.
    let (lines, _) = send(
        port,
        &dir.path().join("ca.pem"),
        3,
        |a| {
            a.supported_protocols = vec![ferrowizard_logging::config::TlsVersion::TlsV13];
        },
        &rx,
    );
    assert_eq!(lines.len(), 3);
}

#[test]
fn another_cas_certificate_or_another_name_gets_nothing_unless_unchecked() {
    let dir = tempfile::tempdir().unwrap();
    // The appender trusts this CA; the receiver's certificate comes from another.
    let (trusted, _, _) = certificates(&["localhost"]);
    std::fs::write(dir.path().join("trusted.pem"), trusted).unwrap();
    let (_, cert, key) = certificates(&["localhost"]);
    let (port, rx) = receiver(cert, key);
    let ca = dir.path().join("trusted.pem");
    let (lines, (written, dropped)) = send(port, &ca, 5, |_| {}, &rx);
    assert!(lines.is_empty(), "{lines:?}");
    assert_eq!((written, dropped), (0, 5));
    let (lines, _) = send(port, &ca, 5, |a| a.validate_certs = false, &rx);
    assert_eq!(lines.len(), 5);

    // The right CA, but a certificate for another name.
    let (ca_pem, cert, key) = certificates(&["logs.example.com"]);
    std::fs::write(dir.path().join("ca.pem"), ca_pem).unwrap();
    let (port, rx) = receiver(cert, key);
    let ca = dir.path().join("ca.pem");
    let (lines, (_, dropped)) = send(port, &ca, 5, |_| {}, &rx);
    assert!(lines.is_empty() && dropped == 5, "{lines:?}");
    let (lines, _) = send(port, &ca, 5, |a| a.validate_server_hostname = false, &rx);
    assert_eq!(lines.len(), 5);
}

#[test]
fn a_ca_file_that_cannot_be_read_stops_the_start() {
    let factory = LoggingFactory {
        appenders: vec![AppenderFactory::Tls(TlsAppenderFactory {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..Default::default()
        })],
        ..Default::default()
    };
    let Err(e) = factory.build("tls-test") else {
        panic!("started without its CA file")
    };
    assert!(e.to_string().contains("/nonexistent/ca.pem"), "{e}");
}

/// `supportedProtocols`: against a receiver that speaks TLS 1.2 only, an appender limited to
/// TLS 1.3 gets nothing through (the handshake fails, the lines are counted dropped), and
/// one that speaks TLS 1.2 delivers every line.
///
/// Catches: `supportedProtocols` ignored (both versions offered: TLS 1.3 only would deliver).
#[test]
fn supported_protocols_limit_the_tls_versions_offered() {
    use ferrowizard_logging::config::TlsVersion;
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates(&["localhost"]);
    std::fs::write(dir.path().join("ca.pem"), ca).unwrap();
    let (port, rx) = receiver_speaking(cert, key, &[&rustls::version::TLS12]);
    let ca = dir.path().join("ca.pem");
    let only = |v: TlsVersion| move |a: &mut TlsAppenderFactory| a.supported_protocols = vec![v];
    let (lines, counts) = send(port, &ca, 5, only(TlsVersion::TlsV13), &rx);
    assert!(lines.is_empty(), "TLS 1.3 only got through: {lines:?}");
    assert_eq!(counts, (0, 5), "TLS 1.3 only");
    let (lines, counts) = send(port, &ca, 5, only(TlsVersion::TlsV12), &rx);
    assert_eq!(lines.len(), 5, "TLS 1.2");
    assert_eq!(counts, (5, 0), "TLS 1.2");
}

/// Catches: a receiver's self-signed certificate made with openssl (a CA, which rustls's
/// WebPKI check refuses as an end entity) refused when it is the caFile itself.
#[test]
fn lines_arrive_when_the_ca_file_is_the_receivers_own_openssl_certificate() {
    let dir = tempfile::tempdir().unwrap();
    let (file, cert, key) = support_certificates::openssl_self_signed(dir.path(), "DNS:localhost");
    let (port, rx) = receiver(cert, key);
    let (lines, counts) = send(port, &file, 5, |_| {}, &rx);
    assert_eq!(lines.len(), 5, "{lines:?}");
    assert_eq!(counts, (5, 0));
}
