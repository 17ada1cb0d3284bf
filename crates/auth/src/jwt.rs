//! `JwtAuthenticator`: bearer tokens that are JSON Web Tokens, verified with the keys the
//! configuration names (HMAC secrets, RSA or EC public keys, a JWKS file), their expiry,
//! issuer and audience checked.

use ferrowizard::Config;
use ferrowizard::config::{Duration, Password, Size};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};

use crate::authenticator::{AuthError, Authenticator, Principal};
use crate::credentials::BearerToken;

/// `jwt:`: which tokens are accepted.
///
/// ```
/// use ferrowizard_auth::JwtFactory;
///
/// let yaml = "keys:\n  - {algorithm: HS256, secret: an-hmac-secret-of-32-bytes-or-more}\n\
///             issuer: https://login.example.com\naudience: [orders]\n";
/// let jwt: JwtFactory = ferrowizard::config::loader(&[]).load_str("jwt.yaml", yaml).unwrap();
/// assert_eq!(jwt.audience, ["orders"]);
/// ```
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = JwtFactory::has_keys)]
pub struct JwtFactory {
    /// The keys tokens may be signed with.
    pub keys: Vec<JwtKeyFactory>,
    /// A JWKS file (`{"keys": [...]}`, an identity provider's), its keys chosen by the
    /// token's `kid`.
    pub jwks_file: Option<String>,
    /// The `iss` every token must carry (unset: any).
    pub issuer: Option<String>,
    /// The `aud` values a token must name one of (empty: a token naming any audience is
    /// refused, as one meant for another service).
    pub audience: Vec<String>,
    /// How far past `exp` (or before `nbf`) a token is still accepted, for clocks that
    /// differ.
    #[config(default = Duration::seconds(30))]
    pub leeway: Duration,
    /// Tokens longer than this are refused unread.
    #[config(default = Size::kibibytes(8))]
    pub max_token_size: Size,
}

/// `jwt.keys[]`: one key.
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = JwtKeyFactory::one_source)]
pub struct JwtKeyFactory {
    /// The `kid` tokens signed with it carry (unset: tried for any token of its algorithm).
    pub kid: Option<String>,
    /// `HS256`, `HS384`, `HS512` (with `secret`), `RS256`, `RS384`, `RS512`, `PS256`,
    /// `PS384`, `PS512`, `ES256`, `ES384` (with `publicKeyFile`).
    pub algorithm: JwtAlgorithm,
    /// The HMAC secret: never printed. Take it from the environment (`${JWT_SECRET}`).
    pub secret: Option<Password>,
    /// A PEM file of the RSA or EC public key.
    pub public_key_file: Option<String>,
}

/// A signing algorithm.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Config)]
pub enum JwtAlgorithm {
    /// HMAC with SHA-256.
    #[default]
    #[config(rename = "HS256")]
    Hs256,
    /// HMAC with SHA-384.
    #[config(rename = "HS384")]
    Hs384,
    /// HMAC with SHA-512.
    #[config(rename = "HS512")]
    Hs512,
    /// RSA PKCS#1 v1.5 with SHA-256.
    #[config(rename = "RS256")]
    Rs256,
    /// RSA PKCS#1 v1.5 with SHA-384.
    #[config(rename = "RS384")]
    Rs384,
    /// RSA PKCS#1 v1.5 with SHA-512.
    #[config(rename = "RS512")]
    Rs512,
    /// RSA-PSS with SHA-256.
    #[config(rename = "PS256")]
    Ps256,
    /// RSA-PSS with SHA-384.
    #[config(rename = "PS384")]
    Ps384,
    /// RSA-PSS with SHA-512.
    #[config(rename = "PS512")]
    Ps512,
    /// ECDSA P-256 with SHA-256.
    #[config(rename = "ES256")]
    Es256,
    /// ECDSA P-384 with SHA-384.
    #[config(rename = "ES384")]
    Es384,
}

impl JwtAlgorithm {
    fn algorithm(self) -> Algorithm {
        match self {
            JwtAlgorithm::Hs256 => Algorithm::HS256,
            JwtAlgorithm::Hs384 => Algorithm::HS384,
            JwtAlgorithm::Hs512 => Algorithm::HS512,
            JwtAlgorithm::Rs256 => Algorithm::RS256,
            JwtAlgorithm::Rs384 => Algorithm::RS384,
            JwtAlgorithm::Rs512 => Algorithm::RS512,
            JwtAlgorithm::Ps256 => Algorithm::PS256,
            JwtAlgorithm::Ps384 => Algorithm::PS384,
            JwtAlgorithm::Ps512 => Algorithm::PS512,
            JwtAlgorithm::Es256 => Algorithm::ES256,
            JwtAlgorithm::Es384 => Algorithm::ES384,
        }
    }

    fn hmac(self) -> bool {
        matches!(
            self,
            JwtAlgorithm::Hs256 | JwtAlgorithm::Hs384 | JwtAlgorithm::Hs512
        )
    }
}

impl JwtFactory {
    fn has_keys(&self) -> Result<(), ferrowizard::config::Invalid> {
        if self.keys.is_empty() && self.jwks_file.is_none() {
            return Err(ferrowizard::config::Invalid::at(
                "keys",
                "name at least one key, or a jwksFile: no token could be verified",
            ));
        }
        Ok(())
    }
}

impl JwtKeyFactory {
    fn one_source(&self) -> Result<(), ferrowizard::config::Invalid> {
        match (self.algorithm.hmac(), &self.secret, &self.public_key_file) {
            (true, Some(s), None) if s.expose().len() >= 32 => Ok(()),
            (true, Some(_), None) => Err(ferrowizard::config::Invalid::at(
                "secret",
                "an HMAC secret of fewer than 32 bytes can be guessed: use 32 or more",
            )),
            (true, _, _) => Err(ferrowizard::config::Invalid::at(
                "secret",
                "an HS algorithm is verified with a secret, and only that (no publicKeyFile)",
            )),
            (false, None, Some(_)) => Ok(()),
            (false, _, _) => Err(ferrowizard::config::Invalid::at(
                "publicKeyFile",
                "an RS, PS or ES algorithm is verified with a public key file, and only that (no secret)",
            )),
        }
    }
}

/// Why a `jwt:` section could not be built: a key file that cannot be read.
#[derive(Debug, thiserror::Error)]
#[error("jwt: {0}")]
pub struct JwtError(String);

struct Key {
    kid: Option<String>,
    algorithm: Algorithm,
    key: DecodingKey,
}

/// A bearer-token authenticator for JSON Web Tokens: the signature checked with the key of
/// the token's `kid` (or of its algorithm), `exp` required and checked, `nbf`, `iss` and `aud`
/// checked, all with `leeway`; `alg: none`, an algorithm no key has, an unreadable or oversized
/// token are refused (401). `map` turns the verified claims into the principal (`None`:
/// refused).
///
/// ```
/// use ferrowizard_auth::{JwtAuthenticator, JwtFactory, Principal};
///
/// #[derive(Clone)]
/// struct User(String);
/// impl Principal for User {
///     fn name(&self) -> &str { &self.0 }
/// }
///
/// let yaml = "keys: [{algorithm: HS256, secret: an-hmac-secret-of-32-bytes-or-more}]\n";
/// let jwt: JwtFactory = ferrowizard::config::loader(&[]).load_str("jwt.yaml", yaml).unwrap();
/// let authenticator = JwtAuthenticator::new(&jwt, |claims| {
///     Some(User(claims.get("sub")?.as_str()?.to_owned()))
/// })
/// .unwrap();
/// ```
pub struct JwtAuthenticator<F> {
    keys: Vec<Key>,
    issuer: Option<String>,
    audience: Vec<String>,
    leeway: u64,
    max_size: usize,
    map: F,
}

/// A token's claims.
pub type Claims = serde_json::Map<String, serde_json::Value>;

impl<F> JwtAuthenticator<F> {
    /// The authenticator `factory` describes, its key files read now.
    pub fn new<P>(factory: &JwtFactory, map: F) -> Result<Self, JwtError>
    where
        F: Fn(Claims) -> Option<P>,
    {
        let mut keys = Vec::new();
        for (i, k) in factory.keys.iter().enumerate() {
            let algorithm = k.algorithm.algorithm();
            let key = match (&k.secret, &k.public_key_file) {
                (Some(secret), _) => DecodingKey::from_secret(secret.expose().as_bytes()),
                (None, Some(file)) => {
                    let pem = std::fs::read(file)
                        .map_err(|e| JwtError(format!("keys[{i}].publicKeyFile: {file}: {e}")))?;
                    let read = match k.algorithm {
                        JwtAlgorithm::Es256 | JwtAlgorithm::Es384 => DecodingKey::from_ec_pem(&pem),
                        _ => DecodingKey::from_rsa_pem(&pem),
                    };
                    read.map_err(|e| JwtError(format!("keys[{i}].publicKeyFile: {file}: {e}")))?
                }
                (None, None) => {
                    return Err(JwtError(format!(
                        "keys[{i}]: no secret and no publicKeyFile"
                    )));
                }
            };
            keys.push(Key {
                kid: k.kid.clone(),
                algorithm,
                key,
            });
        }
        if let Some(file) = &factory.jwks_file {
            let text = std::fs::read_to_string(file)
                .map_err(|e| JwtError(format!("jwksFile: {file}: {e}")))?;
            let set: jsonwebtoken::jwk::JwkSet = serde_json::from_str(&text)
                .map_err(|e| JwtError(format!("jwksFile: {file}: {e}")))?;
            for (i, jwk) in set.keys.iter().enumerate() {
                let key = DecodingKey::from_jwk(jwk)
                    .map_err(|e| JwtError(format!("jwksFile: {file}: keys[{i}]: {e}")))?;
                let algorithm = jwk
                    .common
                    .key_algorithm
                    .and_then(|a| a.to_string().parse::<Algorithm>().ok())
                    .ok_or_else(|| {
                        JwtError(format!(
                            "jwksFile: {file}: keys[{i}]: no \"alg\" this verifies"
                        ))
                    })?;
                keys.push(Key {
                    kid: jwk.common.key_id.clone(),
                    algorithm,
                    key,
                });
            }
        }
        Ok(JwtAuthenticator {
            keys,
            issuer: factory.issuer.clone(),
            audience: factory.audience.clone(),
            leeway: factory.leeway.get().as_secs(),
            max_size: usize::try_from(factory.max_token_size.to_bytes()).unwrap_or(usize::MAX),
            map,
        })
    }

    /// The claims of `token` when it verifies.
    fn verify(&self, token: &str) -> Option<Claims> {
        if token.len() > self.max_size {
            return None;
        }
        // `alg: none` is no algorithm here: the header does not read.
        let header = jsonwebtoken::decode_header(token).ok()?;
        let key = self.keys.iter().find(|k| {
            k.algorithm == header.alg
                && match (&header.kid, &k.kid) {
                    (Some(wanted), Some(kid)) => wanted == kid,
                    (Some(_), None) | (None, _) => true,
                }
        })?;
        let mut validation = Validation::new(key.algorithm);
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        // A claim that is checked must be there: jsonwebtoken checks `iss` and `aud` only when
        // a token has them.
        if let Some(issuer) = &self.issuer {
            validation.set_issuer(&[issuer]);
            validation.required_spec_claims.insert("iss".to_owned());
        }
        // With no audience configured, a token naming one is refused (jsonwebtoken's rule).
        if !self.audience.is_empty() {
            validation.set_audience(&self.audience);
            validation.required_spec_claims.insert("aud".to_owned());
        }
        jsonwebtoken::decode::<Claims>(token, &key.key, &validation)
            .ok()
            .map(|data| data.claims)
    }
}

impl<F, P> Authenticator<BearerToken> for JwtAuthenticator<F>
where
    F: Fn(Claims) -> Option<P> + Send + Sync + 'static,
    P: Principal,
{
    type Principal = P;

    async fn authenticate(&self, token: BearerToken) -> Result<Option<P>, AuthError> {
        Ok(self
            .verify(token.as_str())
            .and_then(|claims| (self.map)(claims)))
    }
}
