//! What the request thread captures of an event: the caller's side of the hot path.
//!
//! A [`Record`] owns reusable buffers. Records are recycled through a pool (see
//! [`crate::appender`]), so once their buffers have grown to the size of typical events,
//! capturing an event allocates nothing: the message and fields are rendered into buffers
//! that already have the room.

use std::fmt::{self, Write as _};
use std::ops::Range;
use std::time::{SystemTime, UNIX_EPOCH};

use tracing::Level;
use tracing::field::{Field, Visit};

/// One event, captured on the thread that logged it.
#[derive(Debug)]
pub struct Record {
    /// The event's level.
    pub level: Level,
    /// The logger (the `tracing` target, or the `log` crate's target, interned).
    pub target: &'static str,
    /// Nanoseconds since the Unix epoch.
    pub time: i128,
    /// The logging thread's name (interned once per thread).
    pub thread: &'static str,
    /// The message text.
    pub message: String,
    /// The event's other fields, as `name=value` text in `field_text`.
    pub fields: Vec<(&'static str, Range<usize>)>,
    /// The rendered values of `fields`.
    pub field_text: String,
    /// Fields of the enclosing spans (logback's MDC), innermost last.
    pub mdc: Vec<(&'static str, Range<usize>)>,
    /// The rendered values of `mdc`.
    pub mdc_text: String,
    /// An error recorded on the event (a field named `error`, or any `dyn Error`), with
    /// its chain of causes, one per line.
    pub exception: String,
    /// Source file and line, when the appender asks for caller data.
    pub caller: Option<(&'static str, u32)>,
    /// For a request-log line: the whole line, already formatted.
    pub preformatted: bool,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            level: Level::INFO,
            target: "",
            time: 0,
            thread: "",
            message: String::new(),
            fields: Vec::new(),
            field_text: String::new(),
            mdc: Vec::new(),
            mdc_text: String::new(),
            exception: String::new(),
            caller: None,
            preformatted: false,
        }
    }
}

thread_local! {
    static THREAD_NAME: &'static str = {
        let t = std::thread::current();
        match t.name() {
            Some(n) => intern(n),
            None => intern(&format!("{:?}", t.id()).replace("ThreadId(", "thread-").replace(')', "")),
        }
    };
}

/// Names kept at most: thread names and `log` targets are few in a real service; past this
/// bound (a program naming a thread per task, say) new names print as `(other)`.
const MAX_INTERNED: usize = 4096;

/// A `'static` copy of `name`, made once per distinct name. Records then carry a pointer
/// instead of copying the name into a buffer on every event: less for the request thread to
/// write, and less memory for the writer thread to pull from the request thread's cache.
pub fn intern(name: &str) -> &'static str {
    use std::collections::BTreeSet;
    use std::sync::Mutex;
    static NAMES: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let Ok(mut names) = NAMES.lock() else {
        return "(other)";
    };
    if let Some(known) = names.get(name) {
        return known;
    }
    if names.len() >= MAX_INTERNED {
        return "(other)";
    }
    let leaked: &'static str = Box::leak(name.to_owned().into_boxed_str());
    names.insert(leaked);
    leaked
}

/// The current time in nanoseconds since the Unix epoch.
pub fn now() -> i128 {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

impl Record {
    /// An empty record with room for a typical event.
    pub fn with_capacity() -> Record {
        Record {
            message: String::with_capacity(128),
            fields: Vec::with_capacity(8),
            field_text: String::with_capacity(128),
            ..Record::default()
        }
    }

    /// Empties the record for reuse, keeping its buffers' capacity.
    pub fn clear(&mut self) {
        self.message.clear();
        self.fields.clear();
        self.field_text.clear();
        self.mdc.clear();
        self.mdc_text.clear();
        self.exception.clear();
        self.caller = None;
        self.preformatted = false;
    }

    /// Fills in the time and the current thread's name.
    pub fn stamp(&mut self) {
        self.time = now();
        self.thread = THREAD_NAME.with(|n| *n);
    }

    /// Copies `other` into this record, reusing this record's buffers.
    pub fn copy_from(&mut self, other: &Record) {
        self.clear();
        self.level = other.level;
        self.target = other.target;
        self.time = other.time;
        self.thread = other.thread;
        self.message.push_str(&other.message);
        self.fields.extend(other.fields.iter().cloned());
        self.field_text.push_str(&other.field_text);
        self.mdc.extend(other.mdc.iter().cloned());
        self.mdc_text.push_str(&other.mdc_text);
        self.exception.push_str(&other.exception);
        self.caller = other.caller;
        self.preformatted = other.preformatted;
    }

    /// The value of event field `i`.
    pub fn field(&self, i: usize) -> (&'static str, &str) {
        let (name, range) = &self.fields[i];
        (name, &self.field_text[range.clone()])
    }

    /// The MDC value for `key`, innermost span first.
    pub fn mdc_value(&self, key: &str) -> Option<&str> {
        self.mdc
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, r)| &self.mdc_text[r.clone()])
    }

    /// The MDC entries as (key, value).
    pub fn mdc_entries(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.mdc
            .iter()
            .map(|(k, r)| (*k, &self.mdc_text[r.clone()]))
    }
}

/// Renders an event's fields into a [`Record`].
pub struct FieldVisitor<'a> {
    /// The record being filled.
    pub record: &'a mut Record,
}

impl FieldVisitor<'_> {
    /// Runs `write` on the buffer `field` belongs in.
    #[inline]
    fn push_with(&mut self, field: &Field, write: impl FnOnce(&mut String)) {
        let name = field.name();
        if name == "message" {
            write(&mut self.record.message);
        } else if let Some(log_field) = name.strip_prefix("log.") {
            // Fields tracing-log adds for `log` records: the target replaces ours; the
            // module path, file and line are not part of the message.
            if log_field == "target" {
                let mut target = String::new();
                write(&mut target);
                self.record.target = intern(&target);
            }
        } else {
            let start = self.record.field_text.len();
            write(&mut self.record.field_text);
            self.record
                .fields
                .push((name, start..self.record.field_text.len()));
        }
    }

    fn push(&mut self, field: &Field, value: fmt::Arguments<'_>) {
        self.push_with(field, |buf| {
            let _ = buf.write_fmt(value);
        });
    }
}

impl Visit for FieldVisitor<'_> {
    // Strings, integers and booleans skip the formatting machinery: they are the common
    // fields, and this runs on the request thread.
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push_with(field, |buf| buf.push_str(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.push_with(field, |buf| buf.push_str(itoa::Buffer::new().format(value)));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push_with(field, |buf| buf.push_str(itoa::Buffer::new().format(value)));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        // ryu's shortest round-trip form, several times faster than `Display`.
        self.push_with(field, |buf| buf.push_str(ryu::Buffer::new().format(value)));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.push_with(field, |buf| {
            buf.push_str(if value { "true" } else { "false" })
        });
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        let exception = &mut self.record.exception;
        let _ = write!(exception, "{value}");
        let mut source = value.source();
        while let Some(cause) = source {
            let _ = write!(exception, "\nCaused by: {cause}");
            source = cause.source();
        }
        self.push(field, format_args!("{value}"));
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.push(field, format_args!("{value:?}"));
    }
}

/// Span fields kept in a span's extensions, for `%X{key}` and the JSON `mdc`.
#[derive(Default, Debug)]
pub struct SpanFields {
    /// (name, value) pairs.
    pub entries: Vec<(&'static str, String)>,
}

impl Visit for SpanFields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.set(field.name(), value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.set(field.name(), format!("{value:?}"));
    }
}

impl SpanFields {
    fn set(&mut self, name: &'static str, value: String) {
        match self.entries.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) => *v = value,
            None => self.entries.push((name, value)),
        }
    }
}
