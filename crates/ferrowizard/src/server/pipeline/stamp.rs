//! A request-log timestamp in a configured format (access-json's `timestampFormat`, the
//! pattern's `%t{...}`), written on the request's thread: each thread keeps its own copy of the
//! formatter (and of the second it has cached), so that request threads never wait on each
//! other for it, and its own buffer, so that a line's timestamp allocates nothing.

use std::cell::RefCell;

use ferrowizard_logging::layout::time::DateFormat;
use thread_local::ThreadLocal;

/// A timestamp format shared by the request threads, a copy each.
pub(crate) struct Stamp {
    template: DateFormat,
    threads: ThreadLocal<RefCell<(DateFormat, Vec<u8>)>>,
}

impl Stamp {
    pub(crate) fn new(format: DateFormat) -> Stamp {
        Stamp {
            template: format,
            threads: ThreadLocal::new(),
        }
    }

    /// Calls `f` with `nanos` (since the epoch) in the format.
    pub(crate) fn with<R>(&self, nanos: i128, f: impl FnOnce(&str) -> R) -> R {
        let cell = self
            .threads
            .get_or(|| RefCell::new((self.template.clone(), Vec::new())));
        // Only this thread borrows its copy, and `f` cannot reach it: never borrowed twice.
        let mut own = cell.borrow_mut();
        let (format, text) = &mut *own;
        text.clear();
        format.write(nanos, text);
        f(&String::from_utf8_lossy(text))
    }
}

impl std::fmt::Debug for Stamp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Stamp").field(&self.template).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Catches: a thread's copy keeping another second's rendering (the cache copied, not
    /// the format), threads' copies mixed up.
    #[test]
    fn each_thread_formats_with_its_own_copy() {
        let format = DateFormat::new("yyyy-MM-dd HH:mm:ss.SSS", jiff::tz::TimeZone::UTC).unwrap();
        let stamp = Stamp::new(format);
        let second = 1_700_000_000_i128 * 1_000_000_000;
        std::thread::scope(|s| {
            for t in 0..4_i128 {
                let stamp = &stamp;
                s.spawn(move || {
                    for k in 0..200_i128 {
                        let nanos = second + (t * 200 + k) * 7_000_000_000 + 123_000_000;
                        let expected = jiff::Timestamp::from_nanosecond(nanos)
                            .unwrap()
                            .strftime("%Y-%m-%d %H:%M:%S%.3f")
                            .to_string();
                        stamp.with(nanos, |text| assert_eq!(text, expected));
                    }
                });
            }
        });
    }
}
