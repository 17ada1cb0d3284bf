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
    /// The user's KO requests so far.
    kos: u64,
    /// For each block the user is in that stops at a KO (`tryMax`, `exitBlockOnFail`),
    /// outermost first: the KOs counted when it began.
    blocks: Vec<u64>,
    /// The groups the user is in, outermost first.
    groups: Vec<OpenGroup>,
}

/// A group a user is in: its path, and what its requests have added up to so far.
#[derive(Debug)]
struct OpenGroup {
    path: String,
    cumulated: u64,
    failed: bool,
}

/// A group a user has left: what [`Session::leave`] gives the engine to record.
#[derive(Debug, PartialEq, Eq)]
pub struct GroupDone {
    /// Its path, `checkout / payment` for one nested in another.
    pub path: String,
    /// Its requests' response times added up, µs.
    pub cumulated: u64,
    /// Whether one of its requests was KO.
    pub failed: bool,
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

    /// Marks the user as failed (a KO request).
    pub fn fail(&mut self) {
        self.failed = true;
        self.kos += 1;
    }

    /// Begins a block that stops at its first KO (`tryMax`, `exitBlockOnFail`); returns
    /// what [`forgive`](Self::forgive) restores.
    ///
    /// ```
    /// let mut session = volley::session::Session::default();
    /// let before = session.begin_block();
    /// session.fail();
    /// assert!(session.block_failed());
    /// session.end_block();
    /// session.forgive(before);
    /// assert!(!session.failed());
    /// ```
    pub fn begin_block(&mut self) -> (u64, bool) {
        self.blocks.push(self.kos);
        (self.kos, self.failed)
    }

    /// Ends the innermost such block.
    pub fn end_block(&mut self) {
        self.blocks.pop();
    }

    /// Whether a request was KO since the innermost such block began.
    pub fn block_failed(&self) -> bool {
        self.blocks.last().is_some_and(|k| self.kos > *k)
    }

    /// Takes back the KOs since `before` (a `tryMax` whose last try got through).
    pub fn forgive(&mut self, before: (u64, bool)) {
        (self.kos, self.failed) = before;
    }

    /// Enters the group `name`, inside the one the user is in, if any.
    ///
    /// ```
    /// let mut session = volley::session::Session::default();
    /// session.enter("checkout");
    /// session.enter("payment");
    /// assert_eq!(session.named("pay"), "checkout / payment / pay");
    /// session.responded(1_500, false);
    /// let inner = session.leave().unwrap();
    /// assert_eq!((inner.path.as_str(), inner.cumulated, inner.failed), ("checkout / payment", 1_500, true));
    /// let outer = session.leave().unwrap();
    /// assert_eq!((outer.cumulated, outer.failed), (1_500, true));
    /// assert_eq!(session.named("home"), "home");
    /// ```
    pub fn enter(&mut self, name: &str) {
        let path = match self.groups.last() {
            Some(outer) => format!("{} / {name}", outer.path),
            None => name.to_owned(),
        };
        self.groups.push(OpenGroup {
            path,
            cumulated: 0,
            failed: false,
        });
    }

    /// Leaves the innermost group, and says what it added up to.
    pub fn leave(&mut self) -> Option<GroupDone> {
        let g = self.groups.pop()?;
        Some(GroupDone {
            path: g.path,
            cumulated: g.cumulated,
            failed: g.failed,
        })
    }

    /// The name a request `name` is recorded under: under the group the user is in.
    pub fn named<'a>(&self, name: &'a str) -> Cow<'a, str> {
        match self.groups.last() {
            Some(g) => Cow::Owned(format!("{} / {name}", g.path)),
            None => Cow::Borrowed(name),
        }
    }

    /// Adds a response of `micros` (OK or not) to every group the user is in.
    pub fn responded(&mut self, micros: u64, ok: bool) {
        for g in &mut self.groups {
            g.cumulated += micros;
            g.failed |= !ok;
        }
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
        SaveFrom::JsonPath(path, all) => {
            let json = response
                .json
                .ok_or_else(|| format!("jsonPath({}) needs a JSON body", path.as_str()))?;
            let found = path.find(json);
            if all {
                serde_json::Value::Array(found.into_iter().cloned().collect()).to_string()
            } else {
                let first = found.first().ok_or_else(|| {
                    format!(
                        "jsonPath({}).find.exists, but it was not found",
                        path.as_str()
                    )
                })?;
                value_text(first).into_owned()
            }
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
