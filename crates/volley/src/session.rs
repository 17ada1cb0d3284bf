//! A user's session: its variables (feeder columns, saved values), its cookie jar, and whether
//! one of its requests failed.

use std::borrow::Cow;
use std::collections::HashMap;

use crate::scenario::{Request, Save, SaveFrom};

/// One user's state, from its first step to its last.
///
/// ```
/// let mut session = volley::session::Session::default();
/// session.set("symbol", "ACME");
/// assert_eq!(session.get("symbol"), Some("ACME"));
/// assert!(!session.failed());
/// ```
#[derive(Debug, Default)]
pub struct Session {
    vars: HashMap<String, String>,
    /// Created by the first `Set-Cookie` the user receives: most scenarios never pay for one.
    jar: Option<Box<cookie_store::CookieStore>>,
    failed: bool,
}

impl crate::template::Variables for Session {
    fn get(&self, name: &str) -> Option<&str> {
        Session::get(self, name)
    }
}

impl Session {
    /// A variable's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.vars.get(name).map(String::as_str)
    }

    /// Sets a variable.
    pub fn set(&mut self, name: impl Into<String>, value: impl Into<String>) {
        self.vars.insert(name.into(), value.into());
    }

    /// Sets every variable of a feeder's record.
    pub fn extend(&mut self, record: impl IntoIterator<Item = (String, String)>) {
        self.vars.extend(record);
    }

    /// Whether a request of this user was KO (`exitHereIfFailed`).
    pub fn failed(&self) -> bool {
        self.failed
    }

    /// Marks the user as failed.
    pub fn fail(&mut self) {
        self.failed = true;
    }

    /// Whether the user holds cookies (only then does a request need its full URL).
    pub fn has_cookies(&self) -> bool {
        self.jar.is_some()
    }

    /// The `Cookie` header for a request to `url` (RFC 6265: domain, path, `Secure` and
    /// expiry matched), if any cookie applies.
    pub fn cookie_header(&self, url: &url::Url) -> Option<http::HeaderValue> {
        let jar = self.jar.as_ref()?;
        let mut line = String::new();
        for (name, value) in jar.get_request_values(url) {
            if !line.is_empty() {
                line.push_str("; ");
            }
            line.push_str(name);
            line.push('=');
            line.push_str(value);
        }
        if line.is_empty() {
            return None;
        }
        http::HeaderValue::from_str(&line).ok()
    }

    /// Keeps the cookies of a response from `url`. One the jar refuses (a domain the URL is
    /// not in, a malformed header) is left out, as a browser leaves it.
    pub fn store_cookies(&mut self, headers: &http::HeaderMap, url: &url::Url) {
        let jar = self.jar.get_or_insert_with(Default::default);
        for value in headers.get_all(http::header::SET_COOKIE) {
            if let Ok(text) = value.to_str() {
                let _ = jar.parse(text, url);
            }
        }
    }
}

/// A JSON value as text, the way checks compare it and sessions keep it: a string without
/// its quotes, anything else as JSON.
pub fn value_text(value: &serde_json::Value) -> Cow<'_, str> {
    match value {
        serde_json::Value::String(v) => Cow::Borrowed(v),
        other => Cow::Owned(other.to_string()),
    }
}

/// A response, as `save` reads it.
pub struct Response<'a> {
    /// Its headers.
    pub headers: &'a http::HeaderMap,
    /// Its body.
    pub body: &'a [u8],
    /// The body parsed as JSON, when the request needs it (`None`: not asked for, or not
    /// JSON).
    pub json: Option<&'a serde_json::Value>,
}

/// Keeps the value `r.save` finds in `response`; its absence is the request's KO, in
/// Gatling's words.
pub fn save(r: &Request, response: &Response<'_>, session: &mut Session) -> Result<(), String> {
    match &r.save {
        Some(s) => save_from(s, response, session),
        None => Ok(()),
    }
}

/// Keeps the value `s` finds in `response` (a request's, or a message's with no headers).
pub fn save_from(s: &Save, response: &Response<'_>, session: &mut Session) -> Result<(), String> {
    let value = match s.from() {
        SaveFrom::JsonPointer(pointer) => {
            let json = response
                .json
                .ok_or_else(|| format!("jsonPointer({pointer}) needs a JSON body"))?;
            let value = json
                .pointer(pointer)
                .ok_or_else(|| format!("jsonPointer({pointer}) not found"))?;
            value_text(value).into_owned()
        }
        SaveFrom::Header(name) => response
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| format!("header({name}).find.exists, but it was not found"))?
            .to_owned(),
        SaveFrom::Regex(pattern) => {
            let body = String::from_utf8_lossy(response.body);
            pattern
                .regex()
                .captures(&body)
                .and_then(|c| c.get(1))
                .map(|m| m.as_str().to_owned())
                .ok_or_else(|| {
                    format!(
                        "regex({:?}).find.exists, but it was not found",
                        pattern.as_str()
                    )
                })?
        }
    };
    session.set(s.name.clone(), value);
    Ok(())
}
