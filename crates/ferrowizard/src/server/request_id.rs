//! Request IDs: the client's when it sends a well-formed one (`X-Request-Id` by default), else
//! 128 random bits in hex. The observe stage ([`super::observe`]) returns it in the response,
//! and keeps it in the request's logging context while the request is handled, so that every
//! event logged meanwhile carries it (`%X{requestId}`, the JSON layout's `mdc`).

use http::HeaderValue;

/// The logging context's key, and the access log's field.
pub(crate) const KEY: &str = "requestId";

/// The longest ID taken from a client; a longer one is replaced.
const MAX_LEN: usize = 128;

/// The ID of a request that sent `given` (the configured header's first value).
pub(crate) fn id(given: Option<&HeaderValue>) -> String {
    match given.and_then(well_formed) {
        Some(id) => id.to_owned(),
        None => generate(),
    }
}

/// `id` when it is 1 to 128 characters among letters, digits and `-_.:+/=` (what UUIDs,
/// ULIDs, hex, base64 and the usual prefixed forms use), which no log line or header can be
/// broken by.
fn well_formed(id: &HeaderValue) -> Option<&str> {
    let bytes = id.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= MAX_LEN
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:+/=".contains(b));
    // ASCII only, so `to_str` cannot fail.
    ok.then(|| id.to_str().ok()).flatten()
}

/// 128 random bits as 32 lowercase hex digits. fastrand's generator is not cryptographic: an
/// ID must be unique, not secret.
fn generate() -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let bits = fastrand::u128(..);
    let mut out = [0u8; 32];
    for (i, byte) in bits.to_be_bytes().iter().enumerate() {
        out[2 * i] = HEX[usize::from(byte >> 4)];
        out[2 * i + 1] = HEX[usize::from(byte & 0xf)];
    }
    // Hex digits are ASCII: one allocation, no check needed beyond `from_utf8`'s.
    String::from_utf8(out.to_vec()).unwrap_or_default()
}

/// The configured header's name: the default one as a static name, which a response takes
/// without touching a reference count every worker shares.
pub(crate) fn header_name(configured: &str) -> Option<http::HeaderName> {
    if configured.eq_ignore_ascii_case("x-request-id") {
        Some(http::HeaderName::from_static("x-request-id"))
    } else {
        http::HeaderName::from_bytes(configured.as_bytes()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn well_formed_ids_are_kept_and_others_replaced_by_a_fresh_one() {
        let kept = |v: &str| id(Some(&HeaderValue::from_str(v).unwrap()));
        assert_eq!(kept("abc-123"), "abc-123");
        let uuid = "0b6f9c1e-8a5e-4a8f-9b1c-2d3e4f5a6b7c";
        assert_eq!(kept(uuid), uuid);
        for bad in ["", "a b", "a\"b", "<script>", &"x".repeat(129)] {
            let id = kept(bad);
            assert_ne!(id, bad);
            assert_eq!(id.len(), 32, "{id}");
        }
        let a = id(None);
        let b = id(None);
        assert_ne!(a, b);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }
}
