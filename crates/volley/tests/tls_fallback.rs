//! `http.version: 2` with `shareConnections` against an HTTPS server that offers only
//! HTTP/1.1 by ALPN (a server written here with tokio-rustls and hyper, counting its
//! connections): the users fall back to a shared HTTP/1.1 pool under `maxConnections`. And
//! `http.tls.caFile` holding the server's own certificate made the usual way, with openssl.

#[path = "../../tls/tests/support/certificates.rs"]
mod certificates;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

/// Serves HTTPS (HTTP/1.1 only) on a free port with a certificate for `localhost` written as
/// `cert.pem` in `dir`; every answer takes 100 ms. Returns the port and the connections
/// accepted.
async fn serve(dir: &std::path::Path) -> (u16, Arc<AtomicUsize>) {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.cert.pem()).unwrap();
    let key = rustls::pki_types::PrivateKeyDer::try_from(cert.signing_key.serialize_der()).unwrap();
    serve_with(cert.cert.der().clone(), key).await
}

/// Serves HTTPS (HTTP/1.1 only) on a free port with `cert` and `key`; every answer takes
/// 100 ms. Returns the port and the connections accepted.
async fn serve_with(
    cert: rustls::pki_types::CertificateDer<'static>,
    key: rustls::pki_types::PrivateKeyDer<'static>,
) -> (u16, Arc<AtomicUsize>) {
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            count.fetch_add(1, SeqCst);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(|_: http::Request<Incoming>| async {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(Bytes::from(
                        "ok",
                    ))))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    (port, accepted)
}

/// 30 users at once, three connections: HTTP/2 is asked for, the server answers HTTP/1.1,
/// and the users share the three connections as a pool: all OK, about ten rounds of 100 ms,
/// never a fourth connection.
///
/// Catches: users queued to open the shared HTTP/2 connection each opening an HTTP/1.1 one
/// while holding the queue (past the third they wait for a permit that idle pooled
/// connections hold: every later user times out).
#[test]
fn shared_http2_falls_back_to_a_pool_when_the_server_speaks_http1() {
    let dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (stats, accepted) = runtime.block_on(async {
        let (port, accepted) = serve(dir.path()).await;
        let yaml = format!(
            "baseUrl: https://localhost:{port}\nhttp: {{version: 2, shareConnections: true, maxConnections: 3, \
             requestTimeout: 20s, tls: {{caFile: cert.pem}}}}\nmaxDuration: 30s\nscenarios:\n  - name: s\n    \
             injection: [{{atOnceUsers: 30}}]\n    steps: [{{request: {{name: r, path: /}}}}]\n"
        );
        let simulation = volley::scenario::load_str("test.yaml", &yaml).unwrap();
        let run = volley::engine::prepare(&simulation, dir.path()).unwrap();
        assert!(volley::engine::execute(run.clone(), &simulation).await);
        (run.snapshot(), accepted)
    });
    let errors: Vec<_> = stats.errors.iter().collect();
    assert_eq!(stats.global.oks, 30, "{errors:?}");
    assert_eq!(accepted.load(SeqCst), 3);
    assert_eq!(stats.connect.len(), 3);
}

/// A certificate made as a user makes one (`openssl req -x509 -newkey rsa:2048 -nodes -subj
/// /CN=localhost -addext subjectAltName=IP:127.0.0.1`, which marks it a CA) given as
/// `http.tls.caFile`: every request OK, as curl --cacert accepts it.
///
/// Catches: "invalid peer certificate: CaUsedAsEndEntity" on every request.
#[test]
fn a_self_signed_certificate_made_with_openssl_is_trusted_as_the_ca_file() {
    let dir = tempfile::tempdir().unwrap();
    let (_, cert, key) = certificates::openssl_self_signed(dir.path(), "IP:127.0.0.1");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let stats = runtime.block_on(async {
        let (port, _) = serve_with(cert, key).await;
        let yaml = format!(
            "baseUrl: https://127.0.0.1:{port}\nhttp: {{tls: {{caFile: cert.pem}}}}\n\
             maxDuration: 30s\nscenarios:\n  - name: s\n    injection: [{{atOnceUsers: 3}}]\n    \
             steps: [{{request: {{name: r, path: /}}}}]\n"
        );
        let simulation = volley::scenario::load_str("test.yaml", &yaml).unwrap();
        let run = volley::engine::prepare(&simulation, dir.path()).unwrap();
        assert!(volley::engine::execute(run.clone(), &simulation).await);
        run.snapshot()
    });
    let errors: Vec<_> = stats.errors.iter().collect();
    assert_eq!(stats.global.oks, 3, "{errors:?}");
}
