//! The credentials a request carries in `Authorization`, read without trusting them.

use std::fmt;

use base64::Engine as _;
use subtle::ConstantTimeEq;

/// Credentials a scheme reads from `Authorization`, and the token they were sent as: what
/// [`CachingAuthenticator`](crate::CachingAuthenticator) keys its principals by, so that a
/// request whose credentials are cached is answered without decoding them.
///
/// ```
/// use ferrowizard_auth::{BasicCredentials, BearerToken, Credentials};
///
/// let basic = BasicCredentials { username: "ada".into(), password: "s3cret".into() };
/// assert_eq!(basic.sent(), "YWRhOnMzY3JldA==");
/// assert_eq!(BasicCredentials::token("Basic YWRhOnMzY3JldA=="), Some("YWRhOnMzY3JldA=="));
/// assert_eq!(BearerToken::new("abc.def").sent(), "abc.def");
/// assert_eq!(BearerToken::token("Basic YWRhOnMzY3JldA=="), None);
/// ```
pub trait Credentials: Clone + Send + Sync + 'static {
    /// The token of an `Authorization` value of this scheme, not yet decoded (`None`: another
    /// scheme's).
    fn token(value: &str) -> Option<&str>;

    /// The token these credentials are sent as: what [`token`](Self::token) reads from a
    /// request that carries them.
    fn sent(&self) -> String;
}

impl Credentials for BasicCredentials {
    fn token(value: &str) -> Option<&str> {
        Some(strip_scheme(value, "Basic")?.trim())
    }

    fn sent(&self) -> String {
        base64::engine::general_purpose::STANDARD
            .encode(format!("{}:{}", self.username, self.password))
    }
}

impl Credentials for BearerToken {
    fn token(value: &str) -> Option<&str> {
        let token = strip_scheme(value, "Bearer")?.trim();
        (!token.is_empty()).then_some(token)
    }

    fn sent(&self) -> String {
        self.0.clone()
    }
}

/// `Authorization: Basic base64(username:password)`, decoded. `Debug` never shows the password.
///
/// ```
/// use ferrowizard_auth::BasicCredentials;
///
/// let c = BasicCredentials::parse("Basic YWRhOnMzY3JldA==").unwrap();
/// assert_eq!((c.username.as_str(), c.password.as_str()), ("ada", "s3cret"));
/// assert_eq!(format!("{c:?}"), "BasicCredentials { username: \"ada\", password: *** }");
/// assert!(BasicCredentials::parse("Basic not-base64!").is_none());
/// assert!(BasicCredentials::parse("basic YWRhOnMzY3JldA==").is_some()); // the scheme's case
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BasicCredentials {
    /// The user name.
    pub username: String,
    /// The password.
    pub password: String,
}

impl BasicCredentials {
    /// The credentials of an `Authorization` value, or `None` when it is not well-formed
    /// Basic: another scheme, bad base64, not UTF-8, no colon.
    pub fn parse(value: &str) -> Option<BasicCredentials> {
        let encoded = <BasicCredentials as Credentials>::token(value)?;
        // Decoded on the stack when it fits (a user name and password of ordinary length),
        // so that the two strings are the only allocations.
        let mut stack = [0u8; 192];
        let heap;
        let decoded =
            match base64::engine::general_purpose::STANDARD.decode_slice(encoded, &mut stack) {
                Ok(n) => &stack[..n],
                Err(base64::DecodeSliceError::OutputSliceTooSmall) => {
                    heap = base64::engine::general_purpose::STANDARD
                        .decode(encoded)
                        .ok()?;
                    &heap[..]
                }
                Err(_) => return None,
            };
        let text = std::str::from_utf8(decoded).ok()?;
        let (username, password) = text.split_once(':')?;
        Some(BasicCredentials {
            username: username.to_owned(),
            password: password.to_owned(),
        })
    }
}

impl fmt::Debug for BasicCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "BasicCredentials {{ username: {:?}, password: *** }}",
            self.username
        )
    }
}

/// `Authorization: Bearer TOKEN`. `Debug` never shows the token.
///
/// ```
/// use ferrowizard_auth::BearerToken;
///
/// let t = BearerToken::parse("Bearer abc.def").unwrap();
/// assert_eq!(t.as_str(), "abc.def");
/// assert_eq!(format!("{t:?}"), "BearerToken(***)");
/// assert!(BearerToken::parse("Bearer ").is_none());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct BearerToken(String);

impl BearerToken {
    /// The token `text`.
    pub fn new(text: impl Into<String>) -> BearerToken {
        BearerToken(text.into())
    }

    /// The token of an `Authorization` value, or `None` when it is not a Bearer one with a
    /// token.
    pub fn parse(value: &str) -> Option<BearerToken> {
        <BearerToken as Credentials>::token(value).map(|token| BearerToken(token.to_owned()))
    }

    /// The token.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(***)")
    }
}

/// `value` after `scheme` and a space, the scheme's case ignored (RFC 9110).
fn strip_scheme<'a>(value: &'a str, scheme: &str) -> Option<&'a str> {
    let (given, rest) = value.split_once(' ')?;
    given.eq_ignore_ascii_case(scheme).then_some(rest)
}

/// Whether two secrets are equal, in a time that does not depend on where they first differ
/// (only on their lengths), so that a secret cannot be guessed a byte at a time.
///
/// ```
/// use ferrowizard_auth::secrets_equal;
///
/// assert!(secrets_equal("s3cret", "s3cret"));
/// assert!(!secrets_equal("s3cret", "s3creT"));
/// assert!(!secrets_equal("s3cret", "s3cre"));
/// ```
pub fn secrets_equal(given: &str, expected: &str) -> bool {
    bool::from(given.as_bytes().ct_eq(expected.as_bytes()))
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;

    use super::BasicCredentials;

    /// Catches: credentials longer than the stack buffer refused or cut short.
    #[test]
    fn long_credentials_decode_whole() {
        let password = "p".repeat(300);
        let encoded = base64::engine::general_purpose::STANDARD.encode(format!("ada:{password}"));
        let c = BasicCredentials::parse(&format!("Basic {encoded}")).unwrap();
        assert_eq!((c.username.as_str(), c.password.len()), ("ada", 300));
        let fits = base64::engine::general_purpose::STANDARD.encode("ada:pw");
        assert_eq!(
            BasicCredentials::parse(&format!("Basic {fits}"))
                .unwrap()
                .password,
            "pw"
        );
        assert!(BasicCredentials::parse("Basic %%%%").is_none());
    }
}
