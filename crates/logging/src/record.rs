//! What the request thread captures of an event: the caller's side of the hot path.
//!
//! A [`Record`] lives for good in a slot of its appender's queue
//! ([`crate::appender`]): the request thread fills it in place and the writer thread formats
//! it from there, so once its buffers have grown to the size of typical events, capturing an
//! event allocates nothing. What is cheap to keep raw stays raw until the writer formats it:
//! the clock reading, and numbers and booleans ([`Value`]); text (the message and string
//! fields) is copied into one buffer, so that an event spans few cache lines.

use std::fmt::{self, Write as _};
use std::ops::Range;
use std::time::{SystemTime, UNIX_EPOCH};

use smallvec::SmallVec;
use tracing::Level;
use tracing::field::{Field, Visit};

use crate::bytes::{put, put_i64, put_u64};

/// A field's value as captured: text lives in the record's buffer, the rest as it came.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Value {
    /// A range (start, end) of the record's text buffer, as [`Record::push_str_field`]
    /// stores it.
    Text(u32, u32),
    /// An unsigned integer.
    U64(u64),
    /// A signed integer.
    I64(i64),
    /// A float, printed in its shortest round-trip form.
    F64(f64),
    /// A boolean.
    Bool(bool),
}

/// A field's value, ready to print: see [`Record::fields`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FieldValue<'a> {
    /// Text (UTF-8: it was pushed as `&str`; kept as bytes so that the writer, which writes
    /// bytes, need not check it again).
    Str(&'a [u8]),
    /// An unsigned integer.
    U64(u64),
    /// A signed integer.
    I64(i64),
    /// A float.
    F64(f64),
    /// A boolean.
    Bool(bool),
}

impl FieldValue<'_> {
    /// Appends the value as text.
    pub fn write(&self, out: &mut Vec<u8>) {
        match *self {
            FieldValue::Str(s) => put(out, s),
            FieldValue::U64(v) => put_u64(out, v),
            FieldValue::I64(v) => put_i64(out, v),
            // ryu's shortest round-trip form, several times faster than `Display`.
            FieldValue::F64(v) if v.is_finite() => {
                out.extend_from_slice(ryu::Buffer::new().format_finite(v).as_bytes())
            }
            FieldValue::F64(v) => {
                let _ = std::io::Write::write_fmt(out, format_args!("{v}"));
            }
            FieldValue::Bool(v) => put(out, if v { b"true" } else { b"false" }),
        }
    }
}

/// Bytes of text kept inline in the record before spilling to the heap: a typical event's
/// message and fields, or a request-log line, fit.
const INLINE_TEXT: usize = 256;

/// A record's text: UTF-8, kept inline in the record (so inside its queue slot, which the
/// request thread brings into its cache before it captures: see the ring) up to
/// `INLINE_TEXT` bytes, then in a `String` on the heap (kept, so a record that once held
/// more allocates no more). Hand-written rather than a `SmallVec<[u8; N]>`, whose general
/// `insert_from_slice` costs more than the copy itself on this path.
#[derive(Clone)]
#[repr(C)]
pub struct Text {
    /// Bytes used in `inline`; `INLINE_TEXT + 1` once the text lives in `spilled`. First,
    /// beside the inline bytes a short text uses.
    len: usize,
    inline: [u8; INLINE_TEXT],
    spilled: String,
}

const SPILLED: usize = INLINE_TEXT + 1;

impl Default for Text {
    fn default() -> Self {
        Text {
            inline: [0; INLINE_TEXT],
            len: 0,
            spilled: String::new(),
        }
    }
}

impl Text {
    /// Appends `s`.
    #[inline]
    pub fn push_str(&mut self, s: &str) {
        let end = self.len + s.len();
        if end <= INLINE_TEXT {
            self.inline[self.len..end].copy_from_slice(s.as_bytes());
            self.len = end;
        } else {
            self.spill(s);
        }
    }

    /// Appends `s` as a JSON string, quotes included (the escaping of the JSON layout).
    ///
    /// ```
    /// let mut text = ferrowizard_logging::record::Text::default();
    /// text.push_json_string("say \"hi\"\n");
    /// assert_eq!(text.as_str(), r#""say \"hi\"\n""#);
    /// ```
    pub fn push_json_string(&mut self, s: &str) {
        crate::json_escape::escape(s.as_bytes(), |piece| self.push_piece(piece));
    }

    /// Appends `piece`, UTF-8 that starts and ends at a character's boundary.
    #[inline]
    fn push_piece(&mut self, piece: &[u8]) {
        let end = self.len + piece.len();
        if end <= INLINE_TEXT {
            self.inline[self.len..end].copy_from_slice(piece);
            self.len = end;
        } else {
            self.spill(std::str::from_utf8(piece).unwrap_or_default());
        }
    }

    #[cold]
    fn spill(&mut self, s: &str) {
        if self.len != SPILLED {
            // What is inline is whole pushes of `&str`: valid UTF-8.
            let before = std::str::from_utf8(&self.inline[..self.len]).unwrap_or("");
            self.spilled.clear();
            self.spilled.push_str(before);
            self.len = SPILLED;
        }
        self.spilled.push_str(s);
    }

    /// Appends `c`. An ASCII character (the separators and quotes of a line) is stored
    /// directly: through `push_str` it would cost a UTF-8 encoding and a `memcpy` call,
    /// several times per line.
    #[inline]
    pub fn push(&mut self, c: char) {
        if c.is_ascii() && self.len < INLINE_TEXT {
            self.inline[self.len] = c as u8;
            self.len += 1;
            return;
        }
        let mut buf = [0; 4];
        self.push_str(c.encode_utf8(&mut buf));
    }

    /// Length in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        if self.len == SPILLED {
            self.spilled.len()
        } else {
            self.len
        }
    }

    /// Whether it is empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Empties it, keeping its capacity.
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    /// Shortens it to `len` bytes (a length an earlier `len` call returned).
    pub fn truncate(&mut self, len: usize) {
        if self.len == SPILLED {
            self.spilled.truncate(len);
        } else {
            self.len = self.len.min(len);
        }
    }

    fn bytes(&self) -> &[u8] {
        if self.len == SPILLED {
            self.spilled.as_bytes()
        } else {
            &self.inline[..self.len]
        }
    }

    /// The bytes from `start` to `end` (empty if out of range).
    pub fn get_bytes(&self, start: usize, end: usize) -> &[u8] {
        self.bytes().get(start..end).unwrap_or(&[])
    }

    /// The text from byte `start` to `end` (empty if that is not a char boundary, which
    /// ranges taken from `len` never are).
    pub fn get(&self, start: usize, end: usize) -> &str {
        self.bytes()
            .get(start..end)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    /// All of it.
    pub fn as_str(&self) -> &str {
        self.get(0, self.len())
    }
}

impl fmt::Write for Text {
    #[inline]
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.push_str(s);
        Ok(())
    }
}

impl Extend<char> for Text {
    fn extend<I: IntoIterator<Item = char>>(&mut self, iter: I) {
        for c in iter {
            self.push(c);
        }
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// When an event happened: a wall-clock time given by the caller (`set_time`, a request-log
/// line's start), or a reading of the CPU's counter taken when the event was captured, which
/// the writer dates (see `clock`).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Stamp {
    Wall(SystemTime),
    Ticks(u64),
}

/// Fields kept inline in the record before spilling to the heap (the spill is kept, so a
/// record that once held more allocates no more).
const INLINE_FIELDS: usize = 4;

/// One event, captured on the thread that logged it.
///
/// Its fields are private: code outside this crate reads them through the getters
/// ([`level`](Record::level), [`target`](Record::target), [`message`](Record::message),
/// [`fields`](Record::fields), ...) and fills them through the setters and `push_*`
/// methods, so that the record's layout (one text buffer, ranges into it) can change
/// without breaking callers. Getters and setters are `#[inline]` and copy no more than the
/// field itself.
///
/// ```
/// use ferrowizard_logging::record::{FieldValue, Record, Value};
///
/// let mut record = Record::default();
/// record.set_level(tracing::Level::WARN);
/// record.set_target("realtime::quotes");
/// record.set_message(|m| m.push_str("quote late"));
/// record.push_str_field("symbol", "ACME");
/// record.push_value("seq", Value::U64(42));
///
/// assert_eq!(record.level(), tracing::Level::WARN);
/// assert_eq!(record.target(), "realtime::quotes");
/// assert_eq!(record.message(), "quote late");
/// let fields: Vec<_> = record.fields().collect();
/// assert_eq!(
///     fields,
///     [("symbol", FieldValue::Str(b"ACME")), ("seq", FieldValue::U64(42))]
/// );
/// ```
///
/// The fields are laid out in the order an event touches them (`repr(C)`): what every event
/// writes, then its fields, then the text, whose first bytes hold a typical event's message;
/// the rest of the text buffer, and what few events have (caller data, MDC, an error), come
/// last and are neither cleared nor read unless used (`extra`). A typical event then writes
/// the first few cache lines of its slot, and the ring asks for no more than those
/// (`HOT_BYTES`): each line is one the writer thread read last, on another core.
#[derive(Debug, Clone)]
#[repr(C)]
pub struct Record {
    /// The event's level.
    level: Level,
    /// For a request-log line: the message is the whole line, already formatted.
    preformatted: bool,
    /// Whether `caller`, `mdc` or `exception` may hold something (see [`Record::clear`]).
    extra: bool,
    /// Where the message is in `text`.
    message: Range<u32>,
    /// When the event happened (the writer turns it into text).
    time: Stamp,
    /// The logger (the `tracing` target, or the `log` crate's target, interned).
    target: &'static str,
    /// The logging thread's name (interned once per thread).
    thread: &'static str,
    /// The event's other fields.
    fields: SmallVec<[(&'static str, Value); INLINE_FIELDS]>,
    /// The message, the text of text fields and of span fields, back to back.
    text: Text,
    /// Source file and line, when the appender asks for caller data.
    caller: Option<(&'static str, u32)>,
    /// Fields of the enclosing spans (logback's MDC), innermost last: name and range of `text`.
    mdc: Vec<(&'static str, Range<u32>)>,
    /// An error recorded on the event (a field named `error`, or any `dyn Error`), with
    /// its chain of causes, one per line.
    exception: String,
}

impl Default for Record {
    fn default() -> Self {
        Record {
            level: Level::INFO,
            target: "",
            time: Stamp::Wall(UNIX_EPOCH),
            thread: "",
            text: Text::default(),
            message: 0..0,
            extra: false,
            fields: SmallVec::new(),
            mdc: Vec::new(),
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

/// The calling thread's name, interned.
pub fn thread_name() -> &'static str {
    THREAD_NAME.with(|n| *n)
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

/// Nanoseconds since the Unix epoch of `time` (negative before it).
pub fn unix_nanos(time: SystemTime) -> i128 {
    crate::clock::wall_nanos(time)
}

/// The current time in nanoseconds since the Unix epoch.
pub fn now() -> i128 {
    unix_nanos(SystemTime::now())
}

fn range(start: usize, end: usize) -> Range<u32> {
    // A record's text past 4 GiB is not a case worth a wider index: saturate.
    let clamp = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    clamp(start)..clamp(end)
}

impl Record {
    /// The bytes at the front of a record that a typical event writes: everything before
    /// the text's inline bytes, and their first cache line (a message with a few text
    /// fields). The ring brings these into the logging thread's cache when it claims a
    /// slot, and leaves the rest of the slot alone.
    pub(crate) const HOT_BYTES: usize =
        std::mem::offset_of!(Record, text) + std::mem::offset_of!(Text, inline) + 64;

    /// An empty record; it has room for a typical event inline.
    pub fn with_capacity() -> Record {
        Record::default()
    }

    /// Empties the record for reuse, keeping its buffers' capacity. Caller data, the MDC
    /// and the error are cleared only when the last event set one: their cache lines are
    /// left alone otherwise.
    #[inline]
    pub fn clear(&mut self) {
        self.text.clear();
        self.message = 0..0;
        self.fields.clear();
        if self.extra {
            self.mdc.clear();
            self.exception.clear();
            self.caller = None;
            self.extra = false;
        }
        self.preformatted = false;
    }

    /// The event's level.
    #[inline]
    pub fn level(&self) -> Level {
        self.level
    }

    /// Sets the event's level.
    #[inline]
    pub fn set_level(&mut self, level: Level) {
        self.level = level;
    }

    /// The logger: the `tracing` target, or the `log` crate's target, interned.
    #[inline]
    pub fn target(&self) -> &'static str {
        self.target
    }

    /// Sets the logger (a `'static` name: a callsite's target, or one [`intern`]ed).
    #[inline]
    pub fn set_target(&mut self, target: &'static str) {
        self.target = target;
    }

    /// When the event happened (the writer turns it into text).
    #[inline]
    pub fn time(&self) -> SystemTime {
        match self.time {
            Stamp::Wall(time) => time,
            Stamp::Ticks(_) => {
                let nanos = self.unix_nanos();
                let since = std::time::Duration::from_nanos(nanos.unsigned_abs() as u64);
                if nanos >= 0 {
                    UNIX_EPOCH + since
                } else {
                    UNIX_EPOCH - since
                }
            }
        }
    }

    /// Sets when the event happened.
    #[inline]
    pub fn set_time(&mut self, time: SystemTime) {
        self.time = Stamp::Wall(time);
    }

    /// Sets the time to now, as a reading of the CPU's counter that the writer dates (see
    /// `clock`): what capturing an event does.
    #[inline]
    pub(crate) fn set_now(&mut self) {
        self.time = Stamp::Ticks(crate::clock::now());
    }

    /// The logging thread's name (interned once per thread: see [`thread_name`]).
    #[inline]
    pub fn thread(&self) -> &'static str {
        self.thread
    }

    /// Sets the logging thread's name.
    #[inline]
    pub fn set_thread(&mut self, thread: &'static str) {
        self.thread = thread;
    }

    /// The error recorded on the event with its causes, one per line; empty if none.
    #[inline]
    pub fn exception(&self) -> &str {
        // Read only when the event set something rare: the string's cache line is far down
        // the slot, where a typical event neither writes nor reads.
        if self.extra { &self.exception } else { "" }
    }

    /// Appends to the event's error text (what [`FieldVisitor`] writes for an error field:
    /// the error, then `\nCaused by: ...` per cause).
    #[inline]
    pub fn push_exception(&mut self, text: &str) {
        self.extra = true;
        self.exception.push_str(text);
    }

    /// Source file and line, when the appender asks for caller data.
    #[inline]
    pub fn caller(&self) -> Option<(&'static str, u32)> {
        if self.extra { self.caller } else { None }
    }

    /// Sets (or, with `None`, removes) the source file and line.
    #[inline]
    pub fn set_caller(&mut self, caller: Option<(&'static str, u32)>) {
        self.extra |= caller.is_some();
        self.caller = caller;
    }

    /// Whether the message is a whole line already formatted (a request-log line), which
    /// the layout writes as it is.
    #[inline]
    pub fn is_preformatted(&self) -> bool {
        self.preformatted
    }

    /// Whether the event has fields of its own or of its spans (the MDC).
    #[inline]
    pub fn has_context(&self) -> bool {
        !self.fields.is_empty() || !self.mdc_pairs().is_empty()
    }

    /// Makes this record a preformatted line of `level` at `time`: `write` writes the whole
    /// line as the message (see [`is_preformatted`](Record::is_preformatted)). Only the
    /// text is emptied first: what a preformatted line's layout reads is the message, and
    /// for a syslog header the level and time, all set here.
    #[inline]
    pub fn set_line(&mut self, level: Level, time: SystemTime, write: impl FnOnce(&mut Text)) {
        self.text.clear();
        self.preformatted = true;
        self.level = level;
        self.time = Stamp::Wall(time);
        self.set_message(write);
    }

    /// Fills in the time and the current thread's name.
    pub fn stamp(&mut self) {
        self.time = Stamp::Wall(SystemTime::now());
        self.thread = thread_name();
    }

    /// Nanoseconds since the Unix epoch.
    pub fn unix_nanos(&self) -> i128 {
        match self.time {
            Stamp::Wall(time) => unix_nanos(time),
            Stamp::Ticks(ticks) => i128::from(crate::clock::unix_nanos(ticks)),
        }
    }

    /// Whole seconds since the Unix epoch (floored) and the nanoseconds past them.
    pub fn unix_time(&self) -> (i64, u32) {
        let time = match self.time {
            Stamp::Wall(time) => time,
            Stamp::Ticks(ticks) => return crate::clock::unix_time(ticks),
        };
        match time.duration_since(UNIX_EPOCH) {
            Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
            Err(e) => {
                let d = e.duration();
                match d.subsec_nanos() {
                    0 => (-(d.as_secs() as i64), 0),
                    n => (-(d.as_secs() as i64) - 1, 1_000_000_000 - n),
                }
            }
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        self.slice(&self.message)
    }

    /// Writes the message with `write` (a request-log line, say), replacing any earlier one.
    pub fn set_message(&mut self, write: impl FnOnce(&mut Text)) {
        let start = self.text.len();
        write(&mut self.text);
        self.message = range(start, self.text.len());
    }

    fn slice(&self, r: &Range<u32>) -> &str {
        self.text.get(r.start as usize, r.end as usize)
    }

    /// The message's bytes (what a layout writes, unchecked: see [`FieldValue::Str`]).
    pub fn message_bytes(&self) -> &[u8] {
        self.text
            .get_bytes(self.message.start as usize, self.message.end as usize)
    }

    /// Copies `other` into this record, reusing this record's buffers.
    pub fn copy_from(&mut self, other: &Record) {
        self.clear();
        self.level = other.level;
        self.target = other.target;
        self.time = other.time;
        self.thread = other.thread;
        self.text.push_str(other.text.as_str());
        self.message = other.message.clone();
        self.fields.extend(other.fields.iter().copied());
        if other.extra {
            self.extra = true;
            self.mdc.extend(other.mdc.iter().cloned());
            self.exception.push_str(&other.exception);
            self.caller = other.caller;
        }
        self.preformatted = other.preformatted;
    }

    /// The event's fields, in the order they were recorded.
    pub fn fields(&self) -> impl Iterator<Item = (&'static str, FieldValue<'_>)> + '_ {
        self.fields.iter().map(move |(name, value)| {
            let value = match *value {
                Value::Text(start, end) => {
                    FieldValue::Str(self.text.get_bytes(start as usize, end as usize))
                }
                Value::U64(v) => FieldValue::U64(v),
                Value::I64(v) => FieldValue::I64(v),
                Value::F64(v) => FieldValue::F64(v),
                Value::Bool(v) => FieldValue::Bool(v),
            };
            (*name, value)
        })
    }

    /// The MDC value for `key`, innermost span first.
    pub fn mdc_value(&self, key: &str) -> Option<&str> {
        self.mdc_pairs()
            .iter()
            .rev()
            .find(|(k, _)| *k == key)
            .map(|(_, r)| self.slice(r))
    }

    /// The MDC entries as (key, value).
    pub fn mdc_entries(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.mdc_pairs().iter().map(|(k, r)| (*k, self.slice(r)))
    }

    /// The MDC's names and ranges, read only when the event set something rare (see
    /// [`Record::exception`]).
    fn mdc_pairs(&self) -> &[(&'static str, Range<u32>)] {
        if self.extra { &self.mdc } else { &[] }
    }

    /// Appends a text field.
    pub fn push_str_field(&mut self, name: &'static str, value: &str) {
        let start = self.text.len();
        self.text.push_str(value);
        let r = range(start, self.text.len());
        self.fields.push((name, Value::Text(r.start, r.end)));
    }

    /// Appends a field whose value is a number or a boolean. A [`Value::Text`] must be a
    /// range of this record's text; text is better added with
    /// [`push_str_field`](Record::push_str_field), which copies it in.
    #[inline]
    pub fn push_value(&mut self, name: &'static str, value: Value) {
        self.fields.push((name, value));
    }

    /// Appends an MDC entry.
    pub fn push_mdc(&mut self, key: &'static str, value: &str) {
        let start = self.text.len();
        self.text.push_str(value);
        self.extra = true;
        self.mdc.push((key, range(start, self.text.len())));
    }
}

/// Renders an event's fields into a [`Record`].
pub struct FieldVisitor<'a> {
    /// The record being filled.
    pub record: &'a mut Record,
}

impl FieldVisitor<'_> {
    fn push_value(&mut self, field: &Field, value: Value) {
        match field.name() {
            // `log` records' metadata, which tracing-log adds as fields: not part of the line.
            name if name.starts_with("log.") => {}
            name => self.record.fields.push((name, value)),
        }
    }

    /// Runs `write` on the text buffer for `field`.
    #[inline]
    fn push_text(&mut self, field: &Field, write: impl FnOnce(&mut Text)) {
        let name = field.name();
        let text = &mut self.record.text;
        let start = text.len();
        if name == "message" {
            write(text);
            self.record.message = range(start, text.len());
        } else if let Some(log_field) = name.strip_prefix("log.") {
            // Fields tracing-log adds for `log` records: the target replaces ours; the
            // module path, file and line are not part of the message.
            if log_field == "target" {
                write(text);
                self.record.target = intern(text.get(start, text.len()));
                text.truncate(start);
            }
        } else {
            write(text);
            let r = range(start, text.len());
            self.record.fields.push((name, Value::Text(r.start, r.end)));
        }
    }
}

impl Visit for FieldVisitor<'_> {
    // Numbers and booleans are kept raw (the writer prints them); strings are copied; only
    // `Debug` values go through the formatting machinery on the request thread.
    fn record_str(&mut self, field: &Field, value: &str) {
        self.push_text(field, |buf| buf.push_str(value));
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        self.push_value(field, Value::U64(value));
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        self.push_value(field, Value::I64(value));
    }

    fn record_f64(&mut self, field: &Field, value: f64) {
        self.push_value(field, Value::F64(value));
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        self.push_value(field, Value::Bool(value));
    }

    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.record.extra = true;
        let exception = &mut self.record.exception;
        let _ = write!(exception, "{value}");
        let mut source = value.source();
        while let Some(cause) = source {
            let _ = write!(exception, "\nCaused by: {cause}");
            source = cause.source();
        }
        self.push_text(field, |buf| {
            let _ = write!(buf, "{value}");
        });
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.push_text(field, |buf| {
            let _ = write!(buf, "{value:?}");
        });
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

#[cfg(test)]
mod text_tests {
    use super::Text;

    #[test]
    fn characters_and_strings_read_back_as_pushed_inline_and_spilled() {
        let mut text = Text::default();
        let mut expected = String::new();
        let mut i = 0usize;
        // Past the inline capacity, with ASCII, multi-byte characters and strings mixed, so
        // that every kind of push meets the boundary.
        while expected.len() < 3 * super::INLINE_TEXT {
            match i % 4 {
                0 => {
                    text.push('"');
                    expected.push('"');
                }
                1 => {
                    text.push('é');
                    expected.push('é');
                }
                2 => {
                    text.push_str("abc");
                    expected.push_str("abc");
                }
                _ => {
                    text.push(char::from(b'0' + (i % 10) as u8));
                    expected.push(char::from(b'0' + (i % 10) as u8));
                }
            }
            assert_eq!(text.as_str(), expected, "after push {i}");
            assert_eq!(text.len(), expected.len());
            i += 1;
        }
    }
}

#[cfg(test)]
mod reuse_tests {
    use super::Record;

    /// Catches: `clear` skipping the caller, MDC or error of the event before (they are
    /// cleared only when set), and `copy_from` dropping them or not marking them set.
    #[test]
    fn a_reused_record_keeps_nothing_of_the_event_before() {
        let mut record = Record::default();
        record.push_exception("boom");
        record.push_mdc("requestId", "abc");
        record.set_caller(Some(("src/a.rs", 3)));
        record.clear();
        assert_eq!(record.exception(), "");
        assert_eq!(record.mdc_entries().count(), 0);
        assert_eq!(record.caller(), None);

        let mut source = Record::default();
        source.push_mdc("k", "v");
        source.push_exception("bad");
        let mut copy = Record::default();
        copy.copy_from(&source);
        assert_eq!(copy.mdc_value("k"), Some("v"));
        assert_eq!(copy.exception(), "bad");
        copy.clear();
        assert_eq!(copy.mdc_value("k"), None);
        assert_eq!(copy.exception(), "");

        // A plain event after one with extras, and a plain copy over a record with extras.
        record.set_caller(Some(("src/b.rs", 9)));
        copy.copy_from(&Record::default());
        assert_eq!(copy.caller(), None);
        assert_eq!(copy.exception(), "");
    }
}
