//! The verifier against a real rustls server on loopback, with certificates made the way users
//! make them: `openssl req -x509` (a self-signed certificate, which is a CA), and a CA that
//! signs a server certificate (rcgen).

#[path = "support/certificates.rs"]
mod certificates;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;

use certificates::{ca_signed, openssl_self_signed};
use ferrowizard_tls::{Trust, provider, verifier};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// A TLS server on a free port that answers each connection's first bytes with `ok`.
fn serve(cert: CertificateDer<'static>, key: PrivateKeyDer<'static>) -> u16 {
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for tcp in listener.incoming().map_while(Result::ok) {
            let config = config.clone();
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else {
                    return;
                };
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let mut byte = [0u8; 1];
                if tls.read_exact(&mut byte).is_ok() {
                    let _ = tls.write_all(b"ok");
                    let _ = tls.flush();
                }
            });
        }
    });
    port
}

/// Whether a client with `trust` completes a handshake with the server on `port` as `name`.
fn handshakes(trust: Trust<'_>, port: u16, name: &str) -> bool {
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(verifier(&trust).unwrap())
        .with_no_client_auth();
    let name = ServerName::try_from(name.to_owned()).unwrap();
    let conn = rustls::ClientConnection::new(Arc::new(config), name).unwrap();
    let tcp = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut tls = rustls::StreamOwned::new(conn, tcp);
    if tls.write_all(b"x").and_then(|()| tls.flush()).is_err() {
        return false;
    }
    let mut answer = [0u8; 2];
    tls.read_exact(&mut answer).is_ok() && &answer == b"ok"
}

/// Catches: a self-signed certificate given as the CA file refused as a CA used as an end
/// entity (what curl --cacert accepts), or trusted for a name it does not carry.
#[test]
fn a_self_signed_certificate_made_with_openssl_is_trusted_as_itself() {
    let dir = tempfile::tempdir().unwrap();
    let (file, cert, key) = openssl_self_signed(dir.path(), "IP:127.0.0.1");
    let port = serve(cert, key);
    let trust = |verify_hostname| Trust::Checked {
        ca_file: Some(&file),
        verify_hostname,
    };
    assert!(handshakes(trust(true), port, "127.0.0.1"));
    assert!(
        !handshakes(trust(true), port, "quotes.internal"),
        "another name"
    );
    assert!(handshakes(trust(false), port, "quotes.internal"));
    let system = Trust::Checked {
        ca_file: None,
        verify_hostname: true,
    };
    assert!(
        !handshakes(system, port, "127.0.0.1"),
        "the system does not know it"
    );
    assert!(handshakes(Trust::Any, port, "quotes.internal"));
}

/// Catches: a certificate signed by the CA file's CA refused, or one from another CA accepted.
#[test]
fn a_certificate_chains_to_the_ca_files_ca_and_no_other() {
    let ca = ca_signed;
    let dir = tempfile::tempdir().unwrap();
    let (pem, cert, key) = ca(&["quotes.internal"]);
    let port = serve(cert, key);
    let file = dir.path().join("ca.pem");
    std::fs::write(&file, pem).unwrap();
    let trust = |verify_hostname| Trust::Checked {
        ca_file: Some(&file),
        verify_hostname,
    };
    assert!(handshakes(trust(true), port, "quotes.internal"));
    assert!(!handshakes(trust(true), port, "127.0.0.1"));
    assert!(handshakes(trust(false), port, "127.0.0.1"));
    let (other, _, _) = ca(&["quotes.internal"]);
    let other_file = dir.path().join("other.pem");
    std::fs::write(&other_file, other).unwrap();
    let stranger = Trust::Checked {
        ca_file: Some(&other_file),
        verify_hostname: false,
    };
    assert!(!handshakes(stranger, port, "quotes.internal"));
}

/// Catches: a CA file that is not PEM accepted as trusting nothing.
#[test]
fn a_ca_file_without_a_certificate_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("empty.pem");
    std::fs::write(&file, "not a certificate\n").unwrap();
    let trust = Trust::Checked {
        ca_file: Some(&file),
        verify_hostname: true,
    };
    let err = verifier(&trust).err().unwrap().to_string();
    assert!(
        err.contains("empty.pem") && err.contains("no PEM certificate"),
        "{err}"
    );
}
