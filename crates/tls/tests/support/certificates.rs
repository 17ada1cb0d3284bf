//! Certificates as users make them, for the tests of every TLS client in the workspace
//! (`#[path]`-included): a self-signed one from openssl, and a CA that signs a server's.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

/// `openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -addext
/// subjectAltName=SAN` (a CA, as openssl makes it) in `dir`: (`cert.pem`, certificate, key).
pub fn openssl_self_signed(
    dir: &Path,
    san: &str,
) -> (PathBuf, CertificateDer<'static>, PrivateKeyDer<'static>) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let made = std::process::Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=localhost", "-addext"])
        .arg(format!("subjectAltName={san}"))
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .output()
        .expect("openssl (Debian's openssl package; .ci/run installs it)");
    assert!(made.status.success(), "{made:?}");
    let der = CertificateDer::from_pem_file(&cert).unwrap();
    let key = PrivateKeyDer::from_pem_file(&key).unwrap();
    (cert, der, key)
}

/// A CA, and a certificate it signs for `names`: (the CA's PEM, certificate, key).
pub fn ca_signed(names: &[&str]) -> (String, CertificateDer<'static>, PrivateKeyDer<'static>) {
    let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = CertifiedIssuer::self_signed(ca, KeyPair::generate().unwrap()).unwrap();
    let key = KeyPair::generate().unwrap();
    let names: Vec<String> = names.iter().map(|n| (*n).to_owned()).collect();
    let cert = CertificateParams::new(names)
        .unwrap()
        .signed_by(&key, &ca)
        .unwrap();
    (
        ca.pem(),
        cert.der().clone(),
        PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
    )
}
