//! The `tls` appender's client side: rustls, trusting a PEM file of CA certificates (or of the
//! server's own self-signed certificate) or the system's roots, checking the server's
//! certificate and its name unless told not to (ferrowizard-tls decides what is trusted).

use std::path::Path;
use std::sync::Arc;

use ferrowizard_tls::Trust;

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
    let provider = ferrowizard_tls::provider();
    let mut versions: Vec<&'static rustls::SupportedProtocolVersion> = Vec::new();
    if settings.tls12 {
        versions.push(&rustls::version::TLS12);
    }
    if settings.tls13 {
        versions.push(&rustls::version::TLS13);
    }
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&versions)
        .map_err(|e| format!("TLS versions: {e}"))?;
    let trust = if settings.validate_certs {
        if settings.ca_file.is_none() && !ferrowizard_tls::system_has_roots() {
            return Err(
                "no system CA certificates found (give caFile, a PEM file of the CAs to trust)"
                    .to_owned(),
            );
        }
        Trust::Checked {
            ca_file: settings.ca_file.map(Path::new),
            verify_hostname: settings.validate_server_hostname,
        }
    } else {
        Trust::Any
    };
    let verifier = ferrowizard_tls::verifier(&trust).map_err(|e| format!("caFile {e}"))?;
    Ok(Arc::new(
        builder
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth(),
    ))
}
