//! Layouts: how a [`Record`] becomes bytes, on the writer thread.

pub mod json;
pub mod pattern;
pub mod time;

use crate::record::Record;

/// A compiled layout.
#[derive(Clone, Debug)]
pub enum Layout {
    /// A logback pattern.
    Pattern(pattern::PatternLayout),
    /// DropWizard's JSON.
    Json(json::JsonLayout),
    /// The record is a preformatted line (the request log's): written as it is.
    Raw,
    /// As `Raw`, with no line end after each record (access-json's `appendLineSeparator:
    /// false`, as DropWizard writes it).
    RawJoined,
    /// An RFC 5424 header, then the inner layout without its line end.
    Syslog(crate::sink::net::SyslogHeader, Box<Layout>),
}

impl Layout {
    /// Appends `record`, formatted, to `out`.
    pub fn format(&mut self, record: &Record, out: &mut Vec<u8>) {
        match self {
            Layout::Pattern(p) if !record.is_preformatted() => p.format(record, out),
            Layout::Json(j) => j.format(record, out),
            Layout::Pattern(_) | Layout::Raw => {
                out.extend_from_slice(record.message_bytes());
                out.push(b'\n');
            }
            Layout::RawJoined => out.extend_from_slice(record.message_bytes()),
            Layout::Syslog(header, inner) => {
                header.write(record, out);
                let start = out.len();
                inner.format(record, out);
                // One message per line: inner newlines (a stack trace) become spaces.
                let end = out.len();
                let body = &mut out[start..end];
                let trailing = body.iter().rev().take_while(|&&b| b == b'\n').count();
                let keep = body.len() - trailing;
                body[..keep]
                    .iter_mut()
                    .filter(|b| **b == b'\n')
                    .for_each(|b| *b = b' ');
                out.truncate(start + keep);
                out.push(b'\n');
            }
        }
    }
}
