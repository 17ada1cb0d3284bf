//! A user's session: its variables (feeder columns, saved values) and how `${name}` in a
//! request is filled from them.

use std::borrow::Cow;

use crate::scenario::Request;

/// A user's variables: feeder columns and saved values.
pub type Session = std::collections::HashMap<String, String>;

/// Fills `${name}` from the session; an unknown name is the request's KO.
pub fn interpolate<'a>(text: &'a str, session: &Session) -> Result<Cow<'a, str>, String> {
    if !text.contains("${") {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed ${{ in {text:?}"))?;
        let name = &after[..end];
        let value = session
            .get(name)
            .ok_or_else(|| format!("no session variable ${{{name}}}"))?;
        out.push_str(value);
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(Cow::Owned(out))
}

/// A JSON value as text, the way checks compare it and sessions keep it: a string without
/// its quotes, anything else as JSON.
pub fn value_text(value: &serde_json::Value) -> Cow<'_, str> {
    match value {
        serde_json::Value::String(v) => Cow::Borrowed(v),
        other => Cow::Owned(other.to_string()),
    }
}

/// Keeps the value `r.save` points at; its absence is the request's KO. `json` is the
/// response body parsed (`None`: it is not JSON).
pub fn save(
    r: &Request,
    json: Option<&serde_json::Value>,
    session: &mut Session,
) -> Result<(), String> {
    let Some(s) = &r.save else { return Ok(()) };
    let json = json.ok_or_else(|| format!("jsonPointer({}) needs a JSON body", s.json_pointer))?;
    let value = json
        .pointer(&s.json_pointer)
        .ok_or_else(|| format!("jsonPointer({}) not found", s.json_pointer))?;
    session.insert(s.name.clone(), value_text(value).into_owned());
    Ok(())
}
