//! A request's checks (Gatling's): which response is OK, and in Gatling's words why one is
//! KO (`status.find.is(200), but actually found 404`).

use bytes::Bytes;

use crate::scenario::{JsonCheck, JsonPathCheck, Request};
use crate::session::{Session, value_text};
use crate::template::interpolate;

/// Whether the checks of `r` need the body parsed as JSON.
pub fn needs_json(r: &Request) -> bool {
    r.json.is_some()
        || r.json_path.is_some()
        || r.save
            .as_ref()
            .is_some_and(|s| s.json_pointer.is_some() || s.json_path.is_some())
}

/// The checks of a request, in order; `Some(message)` for the first that fails. `json` is
/// the body parsed when [`needs_json`] (`None`: not asked for, or not JSON).
pub fn check(
    r: &Request,
    status: u16,
    headers: &http::HeaderMap,
    body: &Bytes,
    json: Option<&serde_json::Value>,
    session: &Session,
) -> Option<String> {
    if let Some(h) = &r.header {
        let found = headers
            .get_all(h.name.as_str())
            .iter()
            .any(|v| v.to_str().is_ok_and(|v| v.contains(h.contains.as_str())));
        if !found {
            return Some(format!(
                "header({}).find.contains({:?}), but it was not found",
                h.name, h.contains
            ));
        }
    }
    if let Some(pattern) = &r.body_matches
        && let Some(why) = check_matches(pattern, &String::from_utf8_lossy(body))
    {
        return Some(why);
    }
    let status_ok = match &r.status {
        Some(allowed) => allowed.contains(&status),
        None => (200..300).contains(&status) || status == 304,
    };
    if !status_ok {
        let expected = match &r.status {
            Some(allowed) if allowed.len() == 1 => format!("status.find.is({})", allowed[0]),
            Some(allowed) => format!(
                "status.find.in({})",
                allowed
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            None => "status.find.in(200..299,304)".into(),
        };
        return Some(format!("{expected}, but actually found {status}"));
    }
    if let Some(needle) = &r.body_contains
        && let Some(why) = check_contains(needle, &String::from_utf8_lossy(body), session)
    {
        return Some(why);
    }
    if let Some(c) = &r.json
        && let Some(why) = check_json(c, json, session)
    {
        return Some(why);
    }
    if let Some(c) = &r.json_path {
        return check_json_path(c, json, session);
    }
    None
}

/// `bodyContains`: `text` must hold `needle` (`${...}` filled in); `Some(message)` when not.
pub fn check_contains(needle: &str, text: &str, session: &Session) -> Option<String> {
    let needle = match interpolate(needle, session) {
        Ok(n) => n,
        Err(e) => return Some(e),
    };
    (!text.contains(needle.as_ref()))
        .then(|| format!("body.find.contains({needle:?}), but it was not found"))
}

/// `bodyMatches`: `text` must match `pattern`; `Some(message)` when not.
pub fn check_matches(pattern: &crate::scenario::Pattern, text: &str) -> Option<String> {
    (!pattern.regex().is_match(text)).then(|| {
        format!(
            "regex({:?}).find.exists, but it was not found",
            pattern.as_str()
        )
    })
}

/// `jsonPath: {path, equals, count}`: Gatling's `jsonPath(...).find.exists`, `.find.is(...)`
/// or `.count.is(n)`; `Some(message)` when it fails.
pub fn check_json_path(
    c: &JsonPathCheck,
    json: Option<&serde_json::Value>,
    session: &Session,
) -> Option<String> {
    let path = c.path.as_str();
    let Some(json) = json else {
        return Some(format!(
            "jsonPath({path}) preparation crashed: the body is not JSON"
        ));
    };
    let found = c.path.find(json);
    if let Some(n) = c.count {
        let count = found.len() as u64;
        if count != n {
            return Some(format!(
                "jsonPath({path}).count.is({n}), but actually found {count}"
            ));
        }
        // A count alone is the whole check.
        c.equals.as_ref()?;
    }
    let expected = match c.equals.as_deref().map(|e| interpolate(e, session)) {
        None => None,
        Some(Ok(e)) => Some(e),
        Some(Err(e)) => return Some(e),
    };
    let name = match &expected {
        Some(e) => format!("jsonPath({path}).find.is({e})"),
        None => format!("jsonPath({path}).find.exists"),
    };
    let Some(first) = found.first() else {
        return Some(format!("{name}, but it was not found"));
    };
    match expected {
        Some(e) if value_text(first) != e => {
            Some(format!("{name}, but actually found {}", value_text(first)))
        }
        _ => None,
    }
}

/// `json: {pointer, equals}`: Gatling's `jsonPath(...).find.exists`, or `.find.is(...)`
/// with `equals`, on an RFC 6901 pointer; `Some(message)` when it fails.
pub fn check_json(
    c: &JsonCheck,
    json: Option<&serde_json::Value>,
    session: &Session,
) -> Option<String> {
    let expected = match c.equals.as_deref().map(|e| interpolate(e, session)) {
        None => None,
        Some(Ok(e)) => Some(e),
        Some(Err(e)) => return Some(e),
    };
    let name = match &expected {
        Some(e) => format!("jsonPointer({}).find.is({e})", c.pointer),
        None => format!("jsonPointer({}).find.exists", c.pointer),
    };
    let Some(json) = json else {
        return Some(format!("{name} preparation crashed: the body is not JSON"));
    };
    let Some(found) = json.pointer(&c.pointer) else {
        return Some(format!("{name}, but it was not found"));
    };
    match expected {
        Some(e) if value_text(found) != e => {
            Some(format!("{name}, but actually found {}", value_text(found)))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(json: JsonCheck) -> Request {
        Request {
            name: "r".into(),
            path: "/".into(),
            json: Some(json),
            ..Default::default()
        }
    }

    fn run(c: JsonCheck, body: &str, session: &Session) -> Option<String> {
        let r = request(c);
        let parsed = serde_json::from_str::<serde_json::Value>(body).ok();
        check(
            &r,
            200,
            &http::HeaderMap::new(),
            &Bytes::from(body.to_owned()),
            parsed.as_ref(),
            session,
        )
    }

    fn json(pointer: &str, equals: Option<&str>) -> JsonCheck {
        JsonCheck {
            pointer: pointer.into(),
            equals: equals.map(str::to_owned),
        }
    }

    #[test]
    fn json_values_are_compared_as_text() {
        let body = r#"{"id":42,"name":"ACME","tags":["a"],"ok":true,"none":null}"#;
        let mut session = Session::default();
        session.set("symbol", "ACME");
        for (pointer, equals) in [
            ("/id", Some("42")),
            ("/name", Some("ACME")),
            ("/name", Some("${symbol}")),
            ("/tags", Some(r#"["a"]"#)),
            ("/tags/0", Some("a")),
            ("/ok", Some("true")),
            ("/none", Some("null")),
            ("/none", None),
            ("", None),
        ] {
            assert_eq!(
                run(json(pointer, equals), body, &session),
                None,
                "{pointer}"
            );
        }
        assert_eq!(
            run(json("/name", Some("\"ACME\"")), body, &session).as_deref(),
            Some(r#"jsonPointer(/name).find.is("ACME"), but actually found ACME"#),
            "a string is compared without its quotes"
        );
        assert_eq!(
            run(json("/id", Some("43")), body, &session).as_deref(),
            Some("jsonPointer(/id).find.is(43), but actually found 42")
        );
        assert_eq!(
            run(json("/nope", None), body, &session).as_deref(),
            Some("jsonPointer(/nope).find.exists, but it was not found")
        );
        assert_eq!(
            run(json("/nope", Some("1")), body, &session).as_deref(),
            Some("jsonPointer(/nope).find.is(1), but it was not found")
        );
        assert_eq!(
            run(json("/id", None), "not json", &session).as_deref(),
            Some("jsonPointer(/id).find.exists preparation crashed: the body is not JSON")
        );
        assert_eq!(
            run(json("/id", Some("${missing}")), body, &session).as_deref(),
            Some("no session variable ${missing}")
        );
    }
}
