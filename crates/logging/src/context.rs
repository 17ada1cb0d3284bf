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
    Inline { len: u8, bytes: [u8; 32] },
    Heap(Box<str>),
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

    fn as_str(&self) -> &str {
        match self {
            // The bytes are a `&str`'s, copied whole.
            Value::Inline { len, bytes } => {
                std::str::from_utf8(&bytes[..usize::from(*len)]).unwrap_or_default()
            }
            Value::Heap(s) => s,
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

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.entries
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The entries, in the order they were first set.
    pub fn entries(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.entries.iter().map(|(k, v)| (*k, v.as_str()))
    }

    /// Runs `f` with this context as the thread's (the one before it is back afterwards, a
    /// panic included).
    pub fn scope<R>(&self, f: impl FnOnce() -> R) -> R {
        CURRENT.set(self, f)
    }

    /// The value of `key` in the thread's context, if one is in place.
    pub fn current_value(key: &str) -> Option<String> {
        current(|c| c.and_then(|c| c.get(key)).map(str::to_owned))
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
        assert_eq!(c.entries().collect::<Vec<_>>(), [("k", "2")]);
        // Inline up to 32 bytes, on the heap beyond: the same to a reader.
        let long = "é".repeat(40);
        let c = Context::new()
            .with("a", "x".repeat(32))
            .with("b", &long)
            .with("c", "");
        assert_eq!(c.get("a"), Some("x".repeat(32).as_str()));
        assert_eq!(c.get("b"), Some(long.as_str()));
        assert_eq!(c.get("c"), Some(""));
    }
}
