//! A diagnostic context for work that is not a span (logback's MDC): key-value pairs that a
//! task puts in place around each of its polls ([`Context::scope`]); every event logged
//! meanwhile on that thread carries them, as `%X{key}` in the pattern layout and under `mdc`
//! in the JSON layout, like the fields of the event's spans (a span's field of the same name
//! wins).
//!
//! Cheaper than a span, which is why ferrowizard's server keeps a request's ID here: entering
//! a scope is a thread-local write and its restore, an event reads the context only when it
//! is logged, and no subscriber sees it. Like logback's MDC, it does not follow work handed to
//! another task (a `tokio::spawn` inside a handler); give that task a scope of its own.
//!
//! ```
//! use ferrowizard_logging::context::Context;
//! let request = Context::new().with("requestId", "3f2a");
//! request.scope(|| {
//!     assert_eq!(Context::current_value("requestId").as_deref(), Some("3f2a"));
//!     tracing::info!("handled"); // `%X{requestId}` writes 3f2a
//! });
//! assert_eq!(Context::current_value("requestId"), None);
//! ```

use smallvec::SmallVec;

scoped_tls::scoped_thread_local!(static CURRENT: Context);

/// Key-value pairs for the events logged inside [`Context::scope`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Context {
    entries: SmallVec<[(&'static str, Value); 3]>,
}

/// A value: up to 32 bytes inline (a request ID of 128 bits in hex, a trace id), so that
/// a request's context takes no allocation; longer ones on the heap. By hand: the small-string
/// crates inline at most 24 bytes (`compact_str`, `smol_str`), and these ids are 32.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Value {
    Inline {
        len: u8,
        bytes: [u8; 32],
    },
    Heap(Box<str>),
    /// A number written as `digits` lowercase hex digits when it is read: the ids of every
    /// traced request are set, and most requests' events never show them.
    Hex {
        n: u128,
        digits: u8,
    },
}

/// Each byte's two lowercase hex digits.
const HEX_PAIRS: [[u8; 2]; 256] = {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut pairs = [[0; 2]; 256];
    let mut i = 0;
    while i < 256 {
        pairs[i] = [DIGITS[i >> 4], DIGITS[i & 0xf]];
        i += 1;
    }
    pairs
};

/// The low `N / 2` bytes of `n` as `N` lowercase hex digits (`N` even, at most 32). By hand, a
/// byte at a time from a table: the formatting machinery takes several times as long.
///
/// ```
/// use ferrowizard_logging::context::hex;
/// assert_eq!(&hex::<4>(0xbeef), b"beef");
/// assert_eq!(&hex::<8>(0xbeef), b"0000beef");
/// ```
pub fn hex<const N: usize>(n: u128) -> [u8; N] {
    const {
        assert!(
            N.is_multiple_of(2) && N <= 32,
            "an even number of digits, at most 32"
        )
    };
    let bytes = n.to_be_bytes();
    let mut out = [b'0'; N];
    for (pair, byte) in out.chunks_exact_mut(2).zip(&bytes[16 - N / 2..]) {
        pair.copy_from_slice(&HEX_PAIRS[usize::from(*byte)]);
    }
    out
}

impl Value {
    fn new(value: &str) -> Value {
        match u8::try_from(value.len()) {
            Ok(len) if value.len() <= 32 => {
                let mut bytes = [0; 32];
                bytes[..value.len()].copy_from_slice(value.as_bytes());
                Value::Inline { len, bytes }
            }
            _ => Value::Heap(value.into()),
        }
    }

    /// Calls `f` with the value as text.
    fn with_str<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            // The bytes are a `&str`'s, copied whole.
            Value::Inline { len, bytes } => {
                f(std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default())
            }
            Value::Heap(s) => f(s),
            Value::Hex { n, digits } => {
                let all = hex::<32>(*n);
                // Hex digits are ASCII.
                f(std::str::from_utf8(&all[32 - usize::from(*digits)..]).unwrap_or_default())
            }
        }
    }
}

impl Context {
    /// An empty context.
    pub fn new() -> Context {
        Context::default()
    }

    /// This context with `key` set to `value` (replacing an earlier value of `key`).
    pub fn with(mut self, key: &'static str, value: impl AsRef<str>) -> Context {
        self.set(key, value);
        self
    }

    /// Sets `key` to `value`.
    pub fn set(&mut self, key: &'static str, value: impl AsRef<str>) {
        let value = Value::new(value.as_ref());
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v = value,
            None => self.entries.push((key, value)),
        }
    }

    /// Sets `key` to the low `digits` hex digits of `n` (at most 32), written only when
    /// the value is read.
    ///
    /// ```
    /// use ferrowizard_logging::context::Context;
    /// let mut c = Context::new();
    /// c.set_hex("spanId", 0x00f0_67aa_0ba9_02b7, 16);
    /// assert_eq!(c.get("spanId").as_deref(), Some("00f067aa0ba902b7"));
    /// ```
    pub fn set_hex(&mut self, key: &'static str, n: u128, digits: usize) {
        let value = Value::Hex {
            n,
            digits: digits.min(32) as u8,
        };
        match self.entries.iter_mut().find(|(k, _)| *k == key) {
            Some((_, v)) => *v = value,
            None => self.entries.push((key, value)),
        }
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<String> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.with_str(str::to_owned))
    }

    /// The value of `key` when it was set as text (with [`Context::set`]), without a copy.
    ///
    /// ```
    /// use ferrowizard_logging::context::Context;
    /// let mut c = Context::new().with("requestId", "3f2a");
    /// c.set_hex("spanId", 0xb7, 16);
    /// assert_eq!(c.text("requestId"), Some("3f2a"));
    /// assert_eq!(c.text("spanId"), None);
    /// ```
    pub fn text(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| match v {
                // The bytes are a `&str`'s, copied whole.
                Value::Inline { len, bytes } => {
                    std::str::from_utf8(&bytes[..usize::from(*len)]).ok()
                }
                Value::Heap(s) => Some(s),
                Value::Hex { .. } => None,
            })
    }

    /// Calls `f` with each entry, in the order they were first set.
    pub fn for_each(&self, mut f: impl FnMut(&'static str, &str)) {
        for (k, v) in &self.entries {
            v.with_str(|v| f(k, v));
        }
    }

    /// Runs `f` with this context as the thread's (the one before it is back afterwards, a
    /// panic included).
    pub fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        CURRENT.set(self, f)
    }

    /// The value of `key` in the thread's context, if one is in place.
    pub fn current_value(key: &str) -> Option<String> {
        current(|c| c.and_then(|c| c.get(key)))
    }
}

/// Calls `f` with the thread's context (`None` outside any scope).
pub(crate) fn current<R>(f: impl FnOnce(Option<&Context>) -> R) -> R {
    if CURRENT.is_set() {
        CURRENT.with(|c| f(Some(c)))
    } else {
        f(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scopes_nest_and_restore_the_outer_one_even_after_a_panic() {
        let outer = Context::new().with("requestId", "a").with("user", "u");
        let inner = Context::new().with("requestId", "b");
        outer.scope(|| {
            assert_eq!(Context::current_value("requestId").as_deref(), Some("a"));
            let caught = std::panic::catch_unwind(|| {
                inner.scope(|| {
                    assert_eq!(Context::current_value("requestId").as_deref(), Some("b"));
                    assert_eq!(Context::current_value("user"), None);
                    panic!("inside");
                })
            });
            assert!(caught.is_err());
            assert_eq!(Context::current_value("requestId").as_deref(), Some("a"));
        });
        assert_eq!(Context::current_value("requestId"), None);
        let mut c = Context::new().with("k", "1");
        c.set("k", "2");
        let mut entries = Vec::new();
        c.for_each(|k, v| entries.push((k, v.to_owned())));
        assert_eq!(entries, [("k", "2".to_owned())]);
        // Inline up to 32 bytes, on the heap beyond: the same to a reader.
        let long = "é".repeat(40);
        let c = Context::new()
            .with("a", "x".repeat(32))
            .with("b", &long)
            .with("c", "");
        assert_eq!(c.get("a"), Some("x".repeat(32)));
        assert_eq!(c.get("b"), Some(long));
        assert_eq!(c.get("c").as_deref(), Some(""));
        // Hex written when read, as many digits as asked.
        let mut c = Context::new();
        c.set_hex("t", 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736, 32);
        c.set_hex("s", 0xb7, 16);
        assert_eq!(
            c.get("t").as_deref(),
            Some("4bf92f3577b34da6a3ce929d0e0e4736")
        );
        assert_eq!(c.get("s").as_deref(), Some("00000000000000b7"));
        c.set("s", "text");
        assert_eq!(c.get("s").as_deref(), Some("text"));
    }
}
