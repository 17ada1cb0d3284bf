//! DropWizard's JSON layout: one object per line.

use std::collections::BTreeMap;
use std::io::Write as _;

use jiff::tz::TimeZone;

use super::time::DateFormat;
use crate::config::{JsonField, JsonLayoutFactory};
use crate::record::{FieldValue, Record};

/// A compiled JSON layout.
#[derive(Clone, Debug)]
pub struct JsonLayout {
    includes: Vec<JsonField>,
    names: BTreeMap<String, String>,
    /// `"key":"value"` text of the additional fields, written as it is.
    additional: String,
    timestamp: Option<DateFormat>,
    flatten_mdc: bool,
    pretty: bool,
    line_separator: bool,
}

impl JsonLayout {
    /// Compiles the layout section; timestamps use `zone`.
    pub fn new(factory: &JsonLayoutFactory, zone: &TimeZone) -> Result<JsonLayout, String> {
        let timestamp = match &factory.timestamp_format {
            Some(f) => Some(DateFormat::new(f, zone.clone())?),
            None => None,
        };
        let mut additional = String::new();
        for (k, v) in &factory.additional_fields {
            let mut buf = Vec::new();
            buf.push(b',');
            escape(k, &mut buf);
            buf.push(b':');
            escape(v, &mut buf);
            additional.push_str(&String::from_utf8_lossy(&buf));
        }
        Ok(JsonLayout {
            includes: factory.includes.clone(),
            names: factory.custom_field_names.clone(),
            additional,
            timestamp,
            flatten_mdc: factory.flatten_mdc,
            pretty: factory.pretty_print,
            line_separator: factory.append_line_separator,
        })
    }

    fn key(&self, out: &mut Vec<u8>, first: &mut bool, name: &str) {
        if !*first {
            out.push(b',');
        }
        *first = false;
        if self.pretty {
            out.extend_from_slice(b"\n  ");
        }
        escape(self.names.get(name).map_or(name, String::as_str), out);
        out.push(b':');
    }

    /// Appends `record` as one JSON object.
    pub fn format(&mut self, record: &Record, out: &mut Vec<u8>) {
        out.push(b'{');
        let mut first = true;
        for i in 0..self.includes.len() {
            let field = self.includes[i];
            match field {
                JsonField::Timestamp => {
                    self.key(out, &mut first, "timestamp");
                    match &mut self.timestamp {
                        Some(f) => {
                            out.push(b'"');
                            let (second, nanos) = record.unix_time();
                            f.write_parts(second, nanos, out);
                            out.push(b'"');
                        }
                        None => {
                            let _ = write!(out, "{}", record.unix_nanos().div_euclid(1_000_000));
                        }
                    }
                }
                JsonField::Level => {
                    self.key(out, &mut first, "level");
                    escape(record.level().as_str(), out);
                }
                JsonField::Thread => {
                    self.key(out, &mut first, "thread");
                    escape(record.thread(), out);
                }
                JsonField::Logger => {
                    self.key(out, &mut first, "logger");
                    escape(record.target(), out);
                }
                JsonField::Message => {
                    self.key(out, &mut first, "message");
                    escape_bytes(record.message_bytes(), out);
                }
                JsonField::Exception if !record.exception().is_empty() => {
                    self.key(out, &mut first, "exception");
                    escape(record.exception(), out);
                }
                JsonField::Exception => {}
                JsonField::Caller => {
                    if let Some((file, line)) = record.caller() {
                        self.key(out, &mut first, "caller");
                        let _ = write!(out, "{{\"file\":");
                        escape(file, out);
                        let _ = write!(out, ",\"line\":{line}}}");
                    }
                }
                JsonField::Mdc => {
                    // Event fields and span fields are both this line's context.
                    // Numbers and booleans stay JSON numbers and booleans.
                    let entries = record.fields().chain(
                        record
                            .mdc_entries()
                            .map(|(k, v)| (k, FieldValue::Str(v.as_bytes()))),
                    );
                    if self.flatten_mdc {
                        for (k, v) in entries {
                            self.key(out, &mut first, k);
                            value(v, out);
                        }
                    } else if record.has_context() {
                        self.key(out, &mut first, "mdc");
                        out.push(b'{');
                        for (i, (k, v)) in entries.enumerate() {
                            if i > 0 {
                                out.push(b',');
                            }
                            escape(k, out);
                            out.push(b':');
                            value(v, out);
                        }
                        out.push(b'}');
                    }
                }
            }
        }
        out.extend_from_slice(self.additional.as_bytes());
        if self.pretty {
            out.push(b'\n');
        }
        out.push(b'}');
        if self.line_separator {
            out.push(b'\n');
        }
    }
}

/// Writes a field's value: text as a JSON string, finite numbers and booleans as they are.
fn value(v: FieldValue<'_>, out: &mut Vec<u8>) {
    match v {
        FieldValue::Str(s) => escape_bytes(s, out),
        FieldValue::F64(f) if !f.is_finite() => {
            out.push(b'"');
            v.write(out);
            out.push(b'"');
        }
        _ => v.write(out),
    }
}

/// Writes `s` as a JSON string.
pub(crate) fn escape(s: &str, out: &mut Vec<u8>) {
    escape_bytes(s.as_bytes(), out);
}

/// Writes UTF-8 `bytes` as a JSON string.
pub(crate) fn escape_bytes(bytes: &[u8], out: &mut Vec<u8>) {
    crate::json_escape::escape(bytes, |piece| out.extend_from_slice(piece));
}
