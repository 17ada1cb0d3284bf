//! `httpClient.tls` against a real HTTPS service on loopback: a certificate from the CA in
//! `caFile` is trusted, one from elsewhere is not; a self-signed certificate given as `caFile`
//! is trusted as itself; `verifyHostname` and `insecure` do what they say.

#[path = "../../tls/tests/support/certificates.rs"]
mod certificates;

use std::sync::Arc;

use bytes::Bytes;
use ferrowizard_client::ClientError;
use http_body_util::Full;
use hyper_util::rt::TokioIo;
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// A CA, and a certificate it signs for `names`: (CA PEM, certificate, key).
fn signed(names: &[&str]) -> (String, CertificateDer<'static>, PrivateKeyDer<'static>) {
    certificates::ca_signed(names)
}

/// A self-signed certificate for `names`, as `openssl req -x509` makes one: (PEM, certificate,
/// key).
fn self_signed(names: &[&str]) -> (String, CertificateDer<'static>, PrivateKeyDer<'static>) {
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let mut params = CertificateParams::new(names).unwrap();
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let cert = params.self_signed(&key).unwrap();
    (
        cert.pem(),
        cert.der().clone(),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}

/// An HTTPS service answering `ok` on a free port; its URL.
async fn serve(cert: CertificateDer<'static>, key: PrivateKeyDer<'static>) -> String {
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![cert], key)
    .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(|_req| async {
                    Ok::<_, std::convert::Infallible>(http::Response::new(Full::new(
                        Bytes::from_static(b"ok"),
                    )))
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    format!("https://127.0.0.1:{port}/")
}

fn client(yaml: &str) -> (ferrowizard_client::HttpClient, ferrowizard::Environment) {
    let section: ferrowizard_client::HttpClientConfiguration = ferrowizard::config::loader(&[])
        .load_str("client.yaml", yaml)
        .unwrap();
    let mut environment = ferrowizard::Environment::named("orders");
    let client = section.build("quotes", &mut environment).unwrap();
    (client, environment)
}

fn pem_file(pem: &str) -> tempfile::NamedTempFile {
    let file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(file.path(), pem).unwrap();
    file
}

async fn call(client: &ferrowizard_client::HttpClient, url: &str) -> Result<String, ClientError> {
    client.get(url).await?.into_body().text().await
}

#[tokio::test]
async fn ca_file_trusts_the_certificates_its_ca_signed_and_no_others() {
    let (ca, cert, key) = signed(&["127.0.0.1", "localhost"]);
    let url = serve(cert, key).await;
    let ca = pem_file(&ca);
    let (trusting, _env) = client(&format!("tls:\n  caFile: {}\n", ca.path().display()));
    assert_eq!(call(&trusting, &url).await.unwrap(), "ok");

    // The system's CAs do not know this one.
    let (system, env) = client("timeout: 2s\n");
    let err = call(&system, &url).await.unwrap_err();
    assert!(
        matches!(
            err,
            ClientError::Connect {
                timed_out: false,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("TLS handshake"), "{err}");
    let json = env.metrics().render_json(false);
    assert!(
        json.contains(
            "org.apache.hc.client5.http.classic.HttpClient.quotes.SSLException\":{\"count\":1"
        ),
        "{json}"
    );
}

#[tokio::test]
async fn a_self_signed_certificate_given_as_ca_file_is_trusted_as_itself() {
    let (pem, cert, key) = self_signed(&["127.0.0.1"]);
    let url = serve(cert, key).await;
    let file = pem_file(&pem);
    let (quotes, _env) = client(&format!("tls:\n  caFile: {}\n", file.path().display()));
    assert_eq!(call(&quotes, &url).await.unwrap(), "ok");

    // Its name is still checked.
    let (pem, cert, key) = self_signed(&["quotes.internal"]);
    let url = serve(cert, key).await;
    let file = pem_file(&pem);
    let (quotes, _env) = client(&format!("tls:\n  caFile: {}\n", file.path().display()));
    let err = call(&quotes, &url).await.unwrap_err();
    assert!(err.to_string().contains("TLS handshake"), "{err}");
}

#[tokio::test]
async fn verify_hostname_false_accepts_a_certificate_for_another_name_from_a_trusted_ca() {
    let (ca, cert, key) = signed(&["quotes.internal"]);
    let url = serve(cert, key).await;
    let ca = pem_file(&ca);
    let (checking, _env) = client(&format!("tls:\n  caFile: {}\n", ca.path().display()));
    let err = call(&checking, &url).await.unwrap_err();
    assert!(err.to_string().contains("TLS handshake"), "{err}");
    let (lenient, _env) = client(&format!(
        "tls:\n  caFile: {}\n  verifyHostname: false\n",
        ca.path().display()
    ));
    assert_eq!(call(&lenient, &url).await.unwrap(), "ok");

    // A CA it does not know is still refused.
    let (other_ca, _, _) = signed(&["quotes.internal"]);
    let other = pem_file(&other_ca);
    let (stranger, _env) = client(&format!(
        "tls:\n  caFile: {}\n  verifyHostname: false\n",
        other.path().display()
    ));
    assert!(call(&stranger, &url).await.is_err());
}

#[tokio::test]
async fn insecure_said_twice_accepts_any_certificate() {
    let (_, cert, key) = signed(&["quotes.internal"]);
    let url = serve(cert, key).await;
    let (insecure, _env) = client("tls:\n  insecure: true\n  verifyHostname: false\n");
    assert_eq!(call(&insecure, &url).await.unwrap(), "ok");

    let once = ferrowizard::config::loader(&[])
        .load_str::<ferrowizard_client::HttpClientConfiguration>(
            "client.yaml",
            "tls:\n  insecure: true\n",
        );
    let err = once.unwrap_err().to_string();
    assert!(
        err.contains("tls.insecure") && err.contains("verifyHostname: false"),
        "{err}"
    );
}

#[tokio::test]
async fn a_ca_file_that_cannot_be_read_is_a_build_error_naming_it() {
    let section: ferrowizard_client::HttpClientConfiguration = ferrowizard::config::loader(&[])
        .load_str("client.yaml", "tls:\n  caFile: /nonexistent/ca.pem\n")
        .unwrap();
    let mut environment = ferrowizard::Environment::named("orders");
    let err = section
        .build("quotes", &mut environment)
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.contains("httpClient.tls.caFile /nonexistent/ca.pem"),
        "{err}"
    );

    let empty = pem_file("not a certificate\n");
    let section: ferrowizard_client::HttpClientConfiguration = ferrowizard::config::loader(&[])
        .load_str(
            "client.yaml",
            &format!("tls:\n  caFile: {}\n", empty.path().display()),
        )
        .unwrap();
    let err = section
        .build("quotes", &mut environment)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("no PEM certificate"), "{err}");
}
