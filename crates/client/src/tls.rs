//! The TLS the client speaks to `https` services (`httpClient.tls`): rustls, trusting the
//! system's CAs or the ones of `caFile`.

use std::fmt;
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, Error, RootCertStore, SignatureScheme};

use crate::config::TlsConfiguration;
use crate::error::BuildError;

/// The rustls client configuration `tls` asks for (`None`: the system's CAs).
pub(crate) fn client_config(
    tls: Option<&TlsConfiguration>,
) -> Result<rustls::ClientConfig, BuildError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| BuildError::Tls(e.to_string()))?;
    let default = TlsConfiguration {
        verify_hostname: true,
        ..TlsConfiguration::default()
    };
    let tls = tls.unwrap_or(&default);
    let verifier = if tls.insecure {
        Checked {
            webpki: None,
            own: Vec::new(),
            verify_hostname: false,
            any: true,
            provider,
        }
    } else {
        let (roots, own) = match &tls.ca_file {
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
                    .map_err(|e| BuildError::Tls(e.to_string()))?,
            )
        };
        Checked {
            webpki,
            own,
            verify_hostname: tls.verify_hostname,
            any: false,
            provider,
        }
    };
    Ok(builder
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_no_client_auth())
}

/// The certificates of a PEM file, at least one.
fn read_pem(file: &str) -> Result<Vec<CertificateDer<'static>>, BuildError> {
    let unreadable = |why: String| BuildError::CaFile {
        file: file.to_owned(),
        why,
    };
    let certs = CertificateDer::pem_file_iter(file)
        .map_err(|e| unreadable(e.to_string()))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| unreadable(e.to_string()))?;
    if certs.is_empty() {
        return Err(unreadable("it holds no PEM certificate".to_owned()));
    }
    Ok(certs)
}

/// The system's CAs (rustls-native-certs); the ones that cannot be read are left out.
fn system_roots() -> RootCertStore {
    let mut roots = RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(cert);
    }
    roots
}

/// webpki's checks, with two differences a `caFile` user expects from curl: a certificate
/// given in `caFile` is trusted as itself (a self-signed server certificate, which webpki
/// refuses as "a CA used as an end entity"), and `verifyHostname: false` accepts a certificate
/// that names another host. With `insecure: true` (`any`), any certificate for any host; the
/// handshake's signatures are still checked, so the session is with whoever holds the
/// certificate's key.
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
