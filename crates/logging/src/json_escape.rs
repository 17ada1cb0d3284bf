//! JSON's string escaping, the one every JSON line of the workspace is written with: the JSON
//! layout's fields and the request log's access-json lines.

/// Hands `put` the pieces of UTF-8 `bytes` written as a JSON string, quotes included: runs
/// copied as they are, and escapes for `"`, `\` and the control characters (`\n`, `\r` and
/// `\t` by name, the others as `\u00XX`). Every piece starts and ends at an ASCII byte, so the
/// runs of valid UTF-8 are valid UTF-8.
#[inline]
pub(crate) fn escape(bytes: &[u8], mut put: impl FnMut(&[u8])) {
    put(b"\"");
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let mut control = [b'\\', b'u', b'0', b'0', 0, 0];
        let escaped: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                control[4] = HEX[usize::from(b >> 4)];
                control[5] = HEX[usize::from(b & 0xf)];
                &control
            }
            _ => continue,
        };
        put(&bytes[start..i]);
        put(escaped);
        start = i + 1;
    }
    put(&bytes[start..]);
    put(b"\"");
}

#[cfg(test)]
mod tests {
    use super::escape;

    fn escaped(s: &str) -> String {
        let mut out = Vec::new();
        escape(s.as_bytes(), |piece| out.extend_from_slice(piece));
        String::from_utf8(out).unwrap()
    }

    /// Catches: a quote, backslash or control character written as is (invalid JSON), a
    /// control character escaped by the wrong code, or a multi-byte character split.
    #[test]
    fn quotes_backslashes_and_control_characters_are_escaped_the_rest_kept() {
        assert_eq!(escaped("plain"), "\"plain\"");
        assert_eq!(escaped("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(escaped("l1\nl2\r\t"), r#""l1\nl2\r\t""#);
        assert_eq!(
            escaped("\u{0}\u{1b}[0m\u{7f}"),
            "\"\\u0000\\u001b[0m\u{7f}\""
        );
        assert_eq!(escaped("café ✓ \"x\""), "\"café ✓ \\\"x\\\"\"");
        for s in ["", "\u{1f}", "é\n", "\"\"", "tab\there"] {
            let back: String = serde_json::from_str(&escaped(s)).unwrap();
            assert_eq!(back, s);
        }
    }
}
