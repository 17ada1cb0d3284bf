#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};

/// Which servers to trust.
#[derive(Clone, Copy, Debug)]
pub enum Trust<'a> {
    /// Certificates that chain to a CA of `ca_file` (a PEM file; `None`: the system's CAs) or
    /// that are in it themselves, naming the host called when `verify_hostname`.
    Checked {
        /// The PEM file of the CAs (and self-signed certificates) to trust.
        ca_file: Option<&'a Path>,
        /// Whether the certificate must name the host called.
        verify_hostname: bool,
    },
    /// Any certificate for any host, for a test server. The handshake's signature is still
    /// checked, so the session is with whoever holds the certificate's key.
    Any,
}

/// Why a verifier could not be made.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    /// The CA file cannot be read, or holds no certificate.
    #[error("{file}: {why}")]
    CaFile {
        /// The file.
        file: String,
        /// Why.
        why: String,
    },
    /// rustls refused the roots.
    #[error("{0}")]
    Rustls(String),
}

/// The crypto provider the verifiers check signatures with (ring), for the caller's
/// `ClientConfig` too.
pub fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The verifier of `trust`, for `ClientConfig::dangerous().with_custom_certificate_verifier`.
///
/// ```
/// use ferrowizard_tls::{Trust, TrustError, verifier};
///
/// let missing = verifier(&Trust::Checked { ca_file: Some("/nonexistent/ca.pem".as_ref()), verify_hostname: true });
/// assert!(matches!(missing, Err(TrustError::CaFile { .. })));
/// ```
pub fn verifier(trust: &Trust<'_>) -> Result<Arc<dyn ServerCertVerifier>, TrustError> {
    let provider = provider();
    let (ca_file, verify_hostname) = match *trust {
        Trust::Any => {
            return Ok(Arc::new(Checked {
                webpki: None,
                own: Vec::new(),
                verify_hostname: false,
                any: true,
                provider,
            }));
        }
        Trust::Checked {
            ca_file,
            verify_hostname,
        } => (ca_file, verify_hostname),
    };
    let (roots, own) = match ca_file {
        Some(file) => {
            let certs = read_pem(file)?;
            let mut roots = RootCertStore::empty();
            for cert in &certs {
                // A self-signed server certificate is not a CA webpki takes; it is still
                // trusted as itself (below).
                let _ = roots.add(cert.clone());
            }
            (roots, certs)
        }
        None => (system_roots(), Vec::new()),
    };
    let webpki = if roots.is_empty() {
        None
    } else {
        Some(
            WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider.clone())
                .build()
                .map_err(|e| TrustError::Rustls(e.to_string()))?,
        )
    };
    Ok(Arc::new(Checked {
        webpki,
        own,
        verify_hostname,
        any: false,
        provider,
    }))
}

/// Whether the system has CA certificates to trust (a client may refuse to start without).
pub fn system_has_roots() -> bool {
    !system_roots().is_empty()
}

/// The certificates of a PEM file, at least one.
fn read_pem(file: &Path) -> Result<Vec<CertificateDer<'static>>, TrustError> {
    let unreadable = |why: String| TrustError::CaFile {
        file: file.display().to_string(),
        why,
    };
    let certs = CertificateDer::pem_file_iter(file)
        .map_err(|e| unreadable(format!("cannot read: {e}")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(format!("cannot read: {e}")))?;
    if certs.is_empty() {
        return Err(unreadable("it holds no PEM certificate".to_owned()));
    }
    Ok(certs)
}

/// The system's CAs (rustls-native-certs); the ones that cannot be read are left out.
fn system_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    roots
}

/// webpki's checks, with two differences a `caFile` user expects from curl: a certificate
/// given in `caFile` is trusted as itself, and `verify_hostname: false` accepts a certificate
/// that names another host; or, `any`, every certificate.
struct Checked {
    webpki: Option<Arc<WebPkiServerVerifier>>,
    own: Vec<CertificateDer<'static>>,
    verify_hostname: bool,
    any: bool,
    provider: Arc<CryptoProvider>,
}

impl fmt::Debug for Checked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Checked")
            .field("verify_hostname", &self.verify_hostname)
            .field("any", &self.any)
            .finish_non_exhaustive()
    }
}

fn name_error(e: &Error) -> bool {
    matches!(
        e,
        Error::InvalidCertificate(
            CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. }
        )
    )
}

impl ServerCertVerifier for Checked {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, Error> {
        if self.any {
            return Ok(ServerCertVerified::assertion());
        }
        let checked = match &self.webpki {
            Some(webpki) => webpki.verify_server_cert(
                end_entity,
                intermediates,
                server_name,
                ocsp_response,
                now,
            ),
            None => Err(Error::InvalidCertificate(CertificateError::UnknownIssuer)),
        };
        match checked {
            Ok(verified) => Ok(verified),
            Err(e) if !self.verify_hostname && name_error(&e) => {
                Ok(ServerCertVerified::assertion())
            }
            Err(e) => {
                // The very certificate given in caFile: trusted as itself, its name still
                // checked when asked.
                if !self
                    .own
                    .iter()
                    .any(|own| own.as_ref() == end_entity.as_ref())
                {
                    return Err(e);
                }
                if self.verify_hostname {
                    let parsed = rustls::server::ParsedCertificate::try_from(end_entity)?;
                    rustls::client::verify_server_name(&parsed, server_name)?;
                }
                Ok(ServerCertVerified::assertion())
            }
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
