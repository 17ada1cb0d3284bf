//! The TLS the client speaks to `https` services (`httpClient.tls`): rustls, trusting what
//! ferrowizard-tls decides (the system's CAs or the ones of `caFile`, a self-signed
//! certificate there trusted as itself).

use std::path::Path;

use ferrowizard_tls::{Trust, TrustError};

use crate::config::TlsConfiguration;
use crate::error::BuildError;

/// The rustls client configuration `tls` asks for (`None`: the system's CAs).
pub(crate) fn client_config(
    tls: Option<&TlsConfiguration>,
) -> Result<rustls::ClientConfig, BuildError> {
    let trust = match tls {
        Some(tls) if tls.insecure => Trust::Any,
        Some(tls) => Trust::Checked {
            ca_file: tls.ca_file.as_deref().map(Path::new),
            verify_hostname: tls.verify_hostname,
        },
        None => Trust::Checked {
            ca_file: None,
            verify_hostname: true,
        },
    };
    let verifier = ferrowizard_tls::verifier(&trust).map_err(|e| match e {
        TrustError::CaFile { file, why } => BuildError::CaFile { file, why },
        TrustError::Rustls(why) => BuildError::Tls(why),
    })?;
    Ok(
        rustls::ClientConfig::builder_with_provider(ferrowizard_tls::provider())
            .with_safe_default_protocol_versions()
            .map_err(|e| BuildError::Tls(e.to_string()))?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth(),
    )
}
