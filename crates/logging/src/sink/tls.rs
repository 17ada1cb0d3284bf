//! The `tls` appender's client side: rustls, trusting a PEM file of CA certificates or the
//! system's roots, checking the server's certificate and its name unless told not to.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};

/// What to trust and check.
#[derive(Clone, Debug)]
pub struct TlsSettings<'a> {
    /// PEM CA certificates; `None`: the system's roots.
    pub ca_file: Option<&'a str>,
    /// Check the server's certificate chain.
    pub validate_certs: bool,
    /// Check that the certificate names the host connected to.
    pub validate_server_hostname: bool,
    /// TLS 1.2 allowed.
    pub tls12: bool,
    /// TLS 1.3 allowed.
    pub tls13: bool,
}

/// The client configuration for `settings`.
pub fn client_config(settings: &TlsSettings<'_>) -> Result<Arc<rustls::ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut versions: Vec<&'static rustls::SupportedProtocolVersion> = Vec::new();
    if settings.tls12 {
        versions.push(&rustls::version::TLS12);
    }
    if settings.tls13 {
        versions.push(&rustls::version::TLS13);
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| format!("TLS versions: {e}"))?;
    let config = if !settings.validate_certs {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider)))
            .with_no_client_auth()
    } else {
        let roots = Arc::new(roots(settings.ca_file)?);
        if settings.validate_server_hostname {
            builder.with_root_certificates(roots).with_no_client_auth()
        } else {
            let inner = WebPkiServerVerifier::builder_with_provider(roots, provider)
                .build()
                .map_err(|e| format!("trust roots: {e}"))?;
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyName(inner)))
                .with_no_client_auth()
        }
    };
    Ok(Arc::new(config))
}

fn roots(ca_file: Option<&str>) -> Result<RootCertStore, String> {
    use rustls::pki_types::pem::PemObject;
    let mut store = RootCertStore::empty();
    match ca_file {
        Some(path) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<_, _>>())
                .map_err(|e| format!("cannot read caFile {path}: {e}"))?;
            let (added, _) = store.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!("caFile {path} holds no CA certificate"));
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            store.add_parsable_certificates(found.certs);
            if store.is_empty() {
                return Err(
                    "no system CA certificates found (give caFile, a PEM file of the CAs to trust)"
                        .to_owned(),
                );
            }
        }
    }
    Ok(store)
}

/// `validateServerHostname: false`: the chain is checked, the name is not.
#[derive(Debug)]
struct AnyName(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for AnyName {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

/// A verifier that accepts any certificate: the `tls` appender's `validateCerts: false`, and
/// volley's `http.tls.insecure`. The handshake's signatures are still checked, so the session
/// is encrypted to whoever holds the certificate's key.
///
/// ```
/// use std::sync::Arc;
/// use ferrowizard_logging::sink::tls::AnyCertificate;
/// let provider = Arc::new(rustls::crypto::ring::default_provider());
/// let config = rustls::ClientConfig::builder_with_provider(provider.clone())
///     .with_safe_default_protocol_versions()
///     .unwrap()
///     .dangerous()
///     .with_custom_certificate_verifier(Arc::new(AnyCertificate::new(provider)))
///     .with_no_client_auth();
/// # drop(config);
/// ```
#[derive(Debug)]
pub struct AnyCertificate(Arc<CryptoProvider>);

impl AnyCertificate {
    /// The verifier, checking the handshake's signatures with `provider`'s algorithms.
    pub fn new(provider: Arc<CryptoProvider>) -> AnyCertificate {
        AnyCertificate(provider)
    }
}

impl ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
