//! The credentials a request carries in `Authorization`, read without trusting them.

use std::fmt;

use base64::Engine as _;
use subtle::ConstantTimeEq;

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
        let encoded = strip_scheme(value, "Basic")?;
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
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
        let token = strip_scheme(value, "Bearer")?.trim();
        (!token.is_empty()).then(|| BearerToken(token.to_owned()))
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
