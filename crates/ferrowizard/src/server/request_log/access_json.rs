//! `layout: {type: access-json}`: a request-log line as one JSON object, with DropWizard's
//! field names and options (`includes`, `customFieldNames`, `additionalFields`,
//! `requestHeaders`, `responseHeaders`, `timestampFormat`; `appendLineSeparator` is the
//! appender's layout, see `ferrowizard_logging::start_raw_appender`).
//!
//! Hand-written rather than serde_json: the line is written on the request thread straight
//! into the appender's queue slot, with no map built per request.

use ferrowizard_logging::config::{AccessField, AccessJsonLayoutFactory};
use ferrowizard_logging::layout::time::DateFormat;
use ferrowizard_logging::record::{Text, unix_nanos};
use http::{HeaderMap, HeaderName};
use jiff::tz::TimeZone;

use crate::server::pipeline::stamp::Stamp;
use crate::server::request_log::entry::{Entry, version};

/// One appender's access-json settings, ready to write lines.
#[derive(Debug)]
pub(crate) struct AccessJson {
    /// The fields written, in order, each with its name in the line.
    fields: Vec<(AccessField, String)>,
    /// `timestampFormat` (in the appender's zone); `None`: epoch milliseconds, a number.
    stamp: Option<Stamp>,
    /// `requestHeaders`, written as the object `headers` (renamed as `customFieldNames` says).
    request_headers: Option<(String, Vec<HeaderName>)>,
    /// `responseHeaders`, written as the object `responseHeaders`.
    response_headers: Option<(String, Vec<HeaderName>)>,
    /// `additionalFields`, written last; a field of the same name is left out before them.
    additional: Vec<(String, String)>,
}

/// The order fields are written in: DropWizard's default attributes as its line shows them,
/// then the others.
const ORDER: [AccessField; 16] = [
    AccessField::Timestamp,
    AccessField::RemoteAddress,
    AccessField::RemoteUser,
    AccessField::RequestTime,
    AccessField::RequestUri,
    AccessField::RequestUrl,
    AccessField::StatusCode,
    AccessField::Method,
    AccessField::Protocol,
    AccessField::ContentLength,
    AccessField::RequestContentLength,
    AccessField::ServerName,
    AccessField::UserAgent,
    AccessField::RequestId,
    AccessField::TraceId,
    AccessField::SpanId,
];

/// DropWizard's JSON name of each field.
fn json_name(field: AccessField) -> &'static str {
    match field {
        AccessField::Timestamp => "timestamp",
        AccessField::RemoteAddress => "remoteAddress",
        AccessField::RemoteUser => "remoteUser",
        AccessField::RequestTime => "requestTime",
        AccessField::RequestUri => "uri",
        AccessField::RequestUrl => "url",
        AccessField::StatusCode => "status",
        AccessField::Method => "method",
        AccessField::Protocol => "protocol",
        AccessField::ContentLength => "contentLength",
        AccessField::RequestContentLength => "requestContentLength",
        AccessField::UserAgent => "userAgent",
        AccessField::LocalPort => "port",
        AccessField::ServerName => "serverName",
        AccessField::RequestId => "requestId",
        AccessField::TraceId => "traceId",
        AccessField::SpanId => "spanId",
    }
}

/// The request headers any access-json appender of a request log needs kept.
#[derive(Debug, Default)]
pub(crate) struct Wanted {
    /// Request headers by name (`requestHeaders`, `Host` for `url`/`serverName`,
    /// `Content-Length` for `requestContentLength`).
    pub(crate) request: Vec<HeaderName>,
    /// Response headers by name.
    pub(crate) response: Vec<HeaderName>,
    /// The request's ID (`requestId`).
    pub(crate) request_id: bool,
    /// The request's trace and span ids (`traceId`, `spanId`).
    pub(crate) trace_ids: bool,
}

impl Wanted {
    pub(crate) fn is_empty(&self) -> bool {
        self.request.is_empty() && self.response.is_empty() && !self.request_id && !self.trace_ids
    }

    /// The wanted headers of `headers`, in the order they come.
    pub(crate) fn take(names: &[HeaderName], headers: &HeaderMap) -> Vec<(HeaderName, String)> {
        names
            .iter()
            .flat_map(|n| {
                headers
                    .get_all(n)
                    .iter()
                    .filter_map(move |v| Some((n.clone(), v.to_str().ok()?.to_owned())))
            })
            .collect()
    }
}

fn add(list: &mut Vec<HeaderName>, name: HeaderName) {
    if !list.contains(&name) {
        list.push(name);
    }
}

impl AccessJson {
    /// The writer for `factory`, timestamps in `zone`; the headers it needs are added to
    /// `wanted`.
    pub(crate) fn new(
        factory: &AccessJsonLayoutFactory,
        zone: &TimeZone,
        wanted: &mut Wanted,
    ) -> Result<AccessJson, String> {
        let rename = |name: &str| {
            factory
                .custom_field_names
                .get(name)
                .cloned()
                .unwrap_or_else(|| name.to_owned())
        };
        let replaced = |name: &str| factory.additional_fields.contains_key(name);
        let fields: Vec<(AccessField, String)> = ORDER
            .iter()
            .filter(|f| factory.includes.contains(f))
            .map(|f| (*f, rename(json_name(*f))))
            .filter(|(_, name)| !replaced(name))
            .collect();
        for (field, _) in &fields {
            match field {
                AccessField::RequestUrl | AccessField::ServerName => {
                    add(&mut wanted.request, http::header::HOST)
                }
                AccessField::RequestContentLength => {
                    add(&mut wanted.request, http::header::CONTENT_LENGTH)
                }
                AccessField::RequestId => wanted.request_id = true,
                AccessField::TraceId | AccessField::SpanId => wanted.trace_ids = true,
                _ => {}
            }
        }
        let headers = |names: &[String], field: &str, into: &mut Vec<HeaderName>| {
            if names.is_empty() || replaced(&rename(field)) {
                return Ok(None);
            }
            let names = names
                .iter()
                .map(|n| {
                    HeaderName::from_bytes(n.as_bytes())
                        .map_err(|_| format!("{n:?} is not a header name"))
                })
                .collect::<Result<Vec<_>, _>>()?;
            for n in &names {
                add(into, n.clone());
            }
            Ok::<_, String>(Some((rename(field), names)))
        };
        let request_headers = headers(&factory.request_headers, "headers", &mut wanted.request)?;
        let response_headers = headers(
            &factory.response_headers,
            "responseHeaders",
            &mut wanted.response,
        )?;
        let stamp = match &factory.timestamp_format {
            Some(pattern) => Some(Stamp::new(DateFormat::new(pattern, zone.clone())?)),
            None => None,
        };
        Ok(AccessJson {
            fields,
            stamp,
            request_headers,
            response_headers,
            additional: factory
                .additional_fields
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        })
    }

    /// Writes the line of `e`, answered with `status` after `elapsed` ms and `bytes` sent.
    pub(crate) fn write(&self, out: &mut Text, e: &Entry, status: u16, bytes: u64, elapsed: u128) {
        let mut first = true;
        let mut key = |out: &mut Text, name: &str| {
            out.push_str(if first { "{" } else { "," });
            first = false;
            out.push_json_string(name);
            out.push(':');
        };
        let header = |name: &HeaderName| {
            e.request_headers()
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        for (field, name) in &self.fields {
            match field {
                AccessField::Timestamp => {
                    key(out, name);
                    self.timestamp(out, e);
                }
                AccessField::RemoteAddress => {
                    key(out, name);
                    // An address needs no escaping: written in quotes as it is.
                    out.push('"');
                    match e.client() {
                        Some(a) => crate::server::request_log::entry::write_ip(out, a.ip()),
                        None => out.push('-'),
                    }
                    out.push('"');
                }
                AccessField::RequestTime => {
                    key(out, name);
                    out.push_str(itoa::Buffer::new().format(elapsed));
                }
                AccessField::RequestUri => {
                    // The servlet's request URI: the path without the query.
                    key(out, name);
                    let target = e.target();
                    out.push_json_string(target.split_once('?').map_or(target, |(path, _)| path));
                }
                AccessField::RequestUrl => {
                    if let Some(host) = header(&http::header::HOST) {
                        key(out, name);
                        let target = e.target();
                        let path = target.split_once('?').map_or(target, |(path, _)| path);
                        out.push_json_string(&format!("{}://{host}{path}", e.scheme()));
                    }
                }
                AccessField::StatusCode => {
                    key(out, name);
                    out.push_str(itoa::Buffer::new().format(status));
                }
                AccessField::Method => {
                    key(out, name);
                    out.push_json_string(e.method().as_str());
                }
                AccessField::Protocol => {
                    key(out, name);
                    out.push_json_string(version(e.version()));
                }
                AccessField::ContentLength => {
                    key(out, name);
                    out.push_str(itoa::Buffer::new().format(bytes));
                }
                AccessField::RequestContentLength => {
                    if let Some(n) =
                        header(&http::header::CONTENT_LENGTH).and_then(|v| v.parse::<u64>().ok())
                    {
                        key(out, name);
                        out.push_str(itoa::Buffer::new().format(n));
                    }
                }
                AccessField::ServerName => {
                    if let Some(host) = header(&http::header::HOST) {
                        key(out, name);
                        out.push_json_string(server_name(host));
                    }
                }
                AccessField::RequestId => {
                    if let Some(id) = e.request_id() {
                        key(out, name);
                        out.push_json_string(id);
                    }
                }
                AccessField::TraceId => {
                    if let Some(ids) = e.trace_ids() {
                        key(out, name);
                        ids.trace_id.with_hex(|id| out.push_json_string(id));
                    }
                }
                AccessField::SpanId => {
                    if let Some(ids) = e.trace_ids() {
                        key(out, name);
                        ids.span_id.with_hex(|id| out.push_json_string(id));
                    }
                }
                AccessField::UserAgent => {
                    if let Some(ua) = e.user_agent() {
                        key(out, name);
                        out.push_json_string(ua);
                    }
                }
                AccessField::RemoteUser => {
                    if let Some(user) = e.user() {
                        key(out, name);
                        out.push_json_string(user);
                    }
                }
                // Refused by the configuration (see `AccessJsonLayoutFactory`).
                AccessField::LocalPort => {}
            }
        }
        if let Some((received, sent)) = e.messages() {
            key(out, "messagesIn");
            out.push_str(itoa::Buffer::new().format(received));
            key(out, "messagesOut");
            out.push_str(itoa::Buffer::new().format(sent));
        }
        for (headers, taken) in [
            (&self.request_headers, e.request_headers()),
            (&self.response_headers, e.response_headers()),
        ] {
            let Some((name, names)) = headers else {
                continue;
            };
            let mut found = taken.iter().filter(|(n, _)| names.contains(n)).peekable();
            // An empty map is left out, as DropWizard leaves it out.
            if found.peek().is_none() {
                continue;
            }
            key(out, name);
            out.push('{');
            // One key a name, as DropWizard writes them: a repeated header's values joined.
            let mut joined: Vec<(&HeaderName, String)> = Vec::new();
            for (n, v) in found {
                match joined.iter_mut().find(|(m, _)| *m == n) {
                    Some((_, all)) => {
                        all.push_str(", ");
                        all.push_str(v);
                    }
                    None => joined.push((n, v.clone())),
                }
            }
            for (i, (n, v)) in joined.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_json_string(n.as_str());
                out.push(':');
                out.push_json_string(v);
            }
            out.push('}');
        }
        for (name, value) in &self.additional {
            key(out, name);
            out.push_json_string(value);
        }
        if first {
            out.push('{');
        }
        out.push('}');
    }

    fn timestamp(&self, out: &mut Text, e: &Entry) {
        let nanos = unix_nanos(e.time());
        match &self.stamp {
            None => out.push_str(itoa::Buffer::new().format(nanos.div_euclid(1_000_000))),
            Some(stamp) => stamp.with(nanos, |text| out.push_json_string(text)),
        }
    }
}

/// The host of a `Host` header, without its port (`[::1]:80` is `[::1]`).
fn server_name(host: &str) -> &str {
    match host.rfind(':') {
        Some(i) if !host[i..].contains(']') => &host[..i],
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_names_leave_the_port_out() {
        for (host, name) in [
            ("example.com", "example.com"),
            ("example.com:8080", "example.com"),
            ("[::1]:80", "[::1]"),
            ("[::1]", "[::1]"),
        ] {
            assert_eq!(server_name(host), name);
        }
    }
}
