//! What a response or a message is checked against, and what is kept from it: the check
//! types steps share, and the rules their text follows.

use std::collections::BTreeMap;

use ferrowizard_config::{Config, validated_by};

/// `save:`: a value of the response kept in the user's session, from exactly one of a JSON
/// pointer, a header, or a regular expression's first capture group.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Save {
    /// An RFC 6901 JSON pointer into the JSON body, e.g. `/id`.
    pub json_pointer: Option<String>,
    /// A JSONPath (RFC 9535) over the JSON body, e.g. `$.items[*].id`: its first value, or
    /// with `all` every value as a JSON array (for `foreach`).
    pub json_path: Option<JsonPath>,
    /// With `jsonPath`: keep every value found, as a JSON array (none found: `[]`).
    pub all: bool,
    /// A response header (its first value).
    pub header: Option<String>,
    /// A regular expression over the body; its first capture group is kept
    /// (`'csrf=(\w+)'`).
    pub regex: Option<Pattern>,
    /// The session variable, used later as `${name}`.
    pub name: String,
}

/// Where a [`Save`] takes its value.
#[derive(Clone, Copy, Debug)]
pub enum SaveFrom<'a> {
    /// A JSON pointer.
    JsonPointer(&'a str),
    /// A header's name.
    Header(&'a str),
    /// A regular expression with a capture group.
    Regex(&'a Pattern),
    /// A JSONPath: its first value, or every value (`all`).
    JsonPath(&'a JsonPath, bool),
}

impl Save {
    /// Its source (validated at load: exactly one is given).
    pub fn from(&self) -> SaveFrom<'_> {
        match (
            &self.json_pointer,
            &self.header,
            &self.regex,
            &self.json_path,
        ) {
            (_, Some(h), _, _) => SaveFrom::Header(h),
            (_, _, Some(r), _) => SaveFrom::Regex(r),
            (_, _, _, Some(p)) => SaveFrom::JsonPath(p, self.all),
            (p, _, _, _) => SaveFrom::JsonPointer(p.as_deref().unwrap_or_default()),
        }
    }

    fn one_source(&self) -> Result<(), String> {
        let given = [
            self.json_pointer.is_some(),
            self.header.is_some(),
            self.regex.is_some(),
            self.json_path.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err("give exactly one of jsonPointer, jsonPath, header, regex".into());
        }
        if self.all && self.json_path.is_none() {
            return Err("all keeps every value a jsonPath finds: give it with jsonPath".into());
        }
        if self.name.is_empty() {
            return Err("name: the session variable to keep the value in is missing".into());
        }
        if let Some(p) = &self.json_pointer {
            valid_pointer(p, &()).map_err(|e| format!("jsonPointer: {e}"))?;
        }
        if let Some(h) = &self.header {
            http::HeaderName::from_bytes(h.as_bytes())
                .map_err(|_| format!("header: {h:?} is not a header name"))?;
        }
        if let Some(r) = &self.regex
            && r.regex().captures_len() < 2
        {
            return Err(format!(
                "regex {:?} has no capture group: the first group's text is kept, e.g. 'csrf=(\\w+)'",
                r.as_str()
            ));
        }
        Ok(())
    }
}

validated_by!(Save, one_source);

/// A regular expression, compiled when the scenario is loaded (a bad one is a load error
/// with its line and column) and kept compiled for every response.
#[derive(Clone, Debug)]
pub struct Pattern(regex::Regex);

impl Pattern {
    /// The compiled expression.
    pub fn regex(&self) -> &regex::Regex {
        &self.0
    }

    /// Its text, as written.
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }
}

impl PartialEq for Pattern {
    fn eq(&self, other: &Self) -> bool {
        self.as_str() == other.as_str()
    }
}

impl<'de> serde::Deserialize<'de> for Pattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        regex::Regex::new(&text)
            .map(Pattern)
            .map_err(serde::de::Error::custom)
    }
}

impl serde::Serialize for Pattern {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

/// `header: {name, contains}`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct HeaderCheck {
    /// The header.
    pub name: String,
    /// Text its value must contain.
    pub contains: String,
}

/// `json: {pointer, equals}`: Gatling's `jsonPath(...).exists`, or `.is(...)` with
/// `equals`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct JsonCheck {
    /// An RFC 6901 JSON pointer into the response body, e.g. `/id`.
    #[config(custom(valid_pointer))]
    pub pointer: String,
    /// The text the value must have (`${var}` filled in from the session): a JSON string
    /// without its quotes, anything else as JSON (`42`, `true`, `{"a":1}`). Absent: the
    /// value must only exist.
    #[config(custom(valid_template_opt))]
    pub equals: Option<String>,
}

fn valid_pointer(p: &str, _: &()) -> garde::Result {
    if p.is_empty() || p.starts_with('/') {
        Ok(())
    } else {
        Err(garde::Error::new("must be empty or start with /"))
    }
}

pub(super) fn valid_path(p: &str, _: &()) -> garde::Result {
    if p.starts_with('/') {
        valid_template(p, &())
    } else {
        Err(garde::Error::new("must start with /"))
    }
}

/// A request's target: a path after `baseUrl`, or an absolute `http://` or `https://` URL of
/// another host.
pub(super) fn valid_target(p: &str, _: &()) -> garde::Result {
    if p.starts_with("http://") || p.starts_with("https://") || p.starts_with('/') {
        valid_template(p, &())
    } else {
        Err(garde::Error::new(
            "must start with / (a path after baseUrl) or be an http:// or https:// URL",
        ))
    }
}

pub(super) fn valid_template(t: &str, _: &()) -> garde::Result {
    crate::template::check(t).map_err(garde::Error::new)
}

pub(super) fn valid_template_opt(t: &Option<String>, _: &()) -> garde::Result {
    t.as_deref().map_or(Ok(()), |t| valid_template(t, &()))
}

pub(super) fn valid_templates(headers: &BTreeMap<String, String>, _: &()) -> garde::Result {
    for (name, value) in headers {
        crate::template::check(value).map_err(|e| garde::Error::new(format!("{name}: {e}")))?;
    }
    Ok(())
}

/// A JSONPath (RFC 9535, serde_json_path), compiled when the scenario is loaded (a bad one
/// is a load error with its line and column).
#[derive(Clone, Debug)]
pub struct JsonPath {
    text: String,
    path: serde_json_path::JsonPath,
}

impl JsonPath {
    /// The values it finds in `json`, in document order.
    pub fn find<'a>(&self, json: &'a serde_json::Value) -> Vec<&'a serde_json::Value> {
        self.path.query(json).all()
    }

    /// Its text, as written.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

/// No path (a required key left out): refused by [`JsonPathCheck`]'s rule.
impl Default for JsonPath {
    fn default() -> Self {
        JsonPath {
            text: String::new(),
            path: serde_json_path::JsonPath::default(),
        }
    }
}

impl PartialEq for JsonPath {
    fn eq(&self, other: &Self) -> bool {
        self.text == other.text
    }
}

impl<'de> serde::Deserialize<'de> for JsonPath {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let path = serde_json_path::JsonPath::parse(&text)
            .map_err(|e| serde::de::Error::custom(format!("not a JSONPath: {e}")))?;
        Ok(JsonPath { text, path })
    }
}

impl serde::Serialize for JsonPath {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

/// `jsonPath: {path, equals, count}`: Gatling's `jsonPath(...).find.exists`, `.find.is(...)`
/// with `equals`, `.count.is(n)` with `count`.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct JsonPathCheck {
    /// The JSONPath, e.g. `$.items[*].id`.
    #[config(custom(given_json_path))]
    pub path: JsonPath,
    /// The text its first value must have (`${...}` filled in): a JSON string without its
    /// quotes, anything else as JSON.
    #[config(custom(valid_template_opt))]
    pub equals: Option<String>,
    /// How many values it must find (0 included: nothing found).
    pub count: Option<u64>,
}

/// One part of a `multipart/form-data` body: a text `value` (`${...}` filled in) or a
/// `file` (relative to the scenario file, read once; `${...}` in it filled in, as in a
/// `bodyFile`).
#[derive(Clone, Debug, PartialEq, Config)]
#[config(check = Part::one_source)]
pub struct Part {
    /// The part's name.
    #[config(length(min = 1))]
    pub name: String,
    /// Its text.
    #[config(custom(valid_template_opt))]
    pub value: Option<String>,
    /// A file sent as the part's content, its name as the part's file name.
    pub file: Option<String>,
    /// The part's `Content-Type`; absent: `text/plain` for a value,
    /// `application/octet-stream` for a file.
    pub content_type: Option<String>,
}

impl Part {
    fn one_source(&self) -> Result<(), ferrowizard_config::Invalid> {
        if self.value.is_some() == self.file.is_some() {
            return Err(ferrowizard_config::Invalid::new("give one of value, file"));
        }
        Ok(())
    }
}

fn given_json_path(p: &JsonPath, _: &()) -> garde::Result {
    if p.text.is_empty() {
        Err(garde::Error::new(
            "required: a JSONPath such as $.items[*].id",
        ))
    } else {
        Ok(())
    }
}
