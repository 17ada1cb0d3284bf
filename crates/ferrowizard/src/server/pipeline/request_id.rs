//! Request IDs: the client's when it sends a well-formed one (`X-Request-Id` by default), else
//! 128 random bits in hex. The observe stage ([`crate::server::pipeline::observe`]) returns it in the response,
//! and keeps it in the request's logging context while the request is handled, so that every
//! event logged meanwhile carries it (`%X{requestId}`, the JSON layout's `mdc`).

use http::HeaderValue;

/// The logging context's key, and the access log's field.
pub(crate) const KEY: &str = "requestId";

/// The longest ID taken from a client; a longer one is replaced.
const MAX_LEN: usize = 128;

/// The ID of a request that sent `given` (the configured header's first value), as the
/// header that returns it.
pub(crate) fn id(given: Option<&HeaderValue>) -> HeaderValue {
    match given.filter(|v| well_formed(v)) {
        // Shares the request's bytes: no copy.
        Some(id) => id.clone(),
        None => generate(),
    }
}

/// Whether `id` is 1 to 128 characters among letters, digits and `-_.:+/=` (what UUIDs,
/// ULIDs, hex, base64 and the usual prefixed forms use), which no log line or header can be
/// broken by.
fn well_formed(id: &HeaderValue) -> bool {
    let bytes = id.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= MAX_LEN
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || b"-_.:+/=".contains(b))
}

/// 128 random bits as 32 lowercase hex digits. fastrand's generator is not cryptographic: an
/// ID must be unique, not secret.
fn generate() -> HeaderValue {
    let hex = crate::trace::hex::<32>(fastrand::u128(..));
    // Hex digits are valid header bytes.
    HeaderValue::from_bytes(&hex).unwrap_or(HeaderValue::from_static("-"))
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
        let kept = |v: &str| {
            id(Some(&HeaderValue::from_str(v).unwrap()))
                .to_str()
                .unwrap()
                .to_owned()
        };
        assert_eq!(kept("abc-123"), "abc-123");
        let uuid = "0b6f9c1e-8a5e-4a8f-9b1c-2d3e4f5a6b7c";
        assert_eq!(kept(uuid), uuid);
        for bad in ["", "a b", "a\"b", "<script>", &"x".repeat(129)] {
            let id = kept(bad);
            assert_ne!(id, bad);
            assert_eq!(id.len(), 32, "{id}");
        }
        let a = id(None).to_str().unwrap().to_owned();
        let b = id(None).to_str().unwrap().to_owned();
        assert_ne!(a, b);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }
}
