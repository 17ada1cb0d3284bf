//! `${...}` in a request's path, body, headers and checks: a session variable (`${symbol}`),
//! or one of Gatling's functions: `${randomInt(1,100)}` (from 1 up to 99), `${uuid()}`,
//! `${nowMillis()}`, `${urlEncode(query)}` (the session variable `query`, percent-encoded).
//!
//! A template is checked when the scenario is loaded ([`check`]: an unknown function or a
//! bad argument is a load error with its line and column); a missing session variable can
//! only be known when the request is sent, and is that request's KO.

use std::borrow::Cow;

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

/// What `urlEncode` leaves as it is: RFC 3986's unreserved characters.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// One `${...}`: a variable or a function call.
#[derive(Debug, PartialEq)]
enum Expr<'a> {
    /// A session variable.
    Var(&'a str),
    /// `randomInt(low,high)`: from `low` up to `high`, not included.
    RandomInt(i64, i64),
    /// `uuid()`: a random (version 4) UUID.
    Uuid,
    /// `nowMillis()`: milliseconds since the Unix epoch.
    NowMillis,
    /// `urlEncode(name)`: the variable's value, percent-encoded.
    UrlEncode(&'a str),
}

fn parse(inner: &str) -> Result<Expr<'_>, String> {
    let Some(open) = inner.find('(') else {
        return Ok(Expr::Var(inner));
    };
    let name = inner[..open].trim();
    let args = inner[open + 1..]
        .strip_suffix(')')
        .ok_or_else(|| format!("${{{inner}}}: a function call ends with ')'"))?;
    let args: Vec<&str> = if args.trim().is_empty() {
        Vec::new()
    } else {
        args.split(',').map(str::trim).collect()
    };
    let arity = |n: usize| {
        if args.len() == n {
            Ok(())
        } else {
            Err(format!(
                "${{{inner}}}: {name} takes {n} argument{}, not {}",
                if n == 1 { "" } else { "s" },
                args.len()
            ))
        }
    };
    match name {
        "randomInt" => {
            arity(2)?;
            let int = |a: &str| {
                a.parse::<i64>()
                    .map_err(|_| format!("${{{inner}}}: {a:?} is not an integer"))
            };
            let (low, high) = (int(args[0])?, int(args[1])?);
            if low >= high {
                return Err(format!(
                    "${{{inner}}}: the first bound must be below the second (the second is not drawn)"
                ));
            }
            Ok(Expr::RandomInt(low, high))
        }
        "uuid" => arity(0).map(|()| Expr::Uuid),
        "nowMillis" => arity(0).map(|()| Expr::NowMillis),
        "urlEncode" => {
            arity(1)?;
            if args[0].is_empty() {
                return Err(format!(
                    "${{{inner}}}: urlEncode takes a session variable's name"
                ));
            }
            Ok(Expr::UrlEncode(args[0]))
        }
        other => Err(format!(
            "${{{inner}}}: unknown function {other:?} (randomInt, uuid, nowMillis, urlEncode)"
        )),
    }
}

/// The `${...}` of `text`, in order, with the text before each.
fn pieces(text: &str) -> impl Iterator<Item = Result<(&str, Option<&str>), String>> {
    let mut rest = Some(text);
    std::iter::from_fn(move || {
        let current = rest?;
        match current.find("${") {
            None => {
                rest = None;
                Some(Ok((current, None)))
            }
            Some(i) => {
                let after = &current[i + 2..];
                match after.find('}') {
                    Some(end) => {
                        rest = Some(&after[end + 1..]);
                        Some(Ok((&current[..i], Some(&after[..end]))))
                    }
                    None => {
                        rest = None;
                        Some(Err(format!("unclosed ${{ in {text:?}")))
                    }
                }
            }
        }
    })
}

/// Checks every `${...}` of `text`: closed, and a known function with good arguments.
///
/// ```
/// assert!(volley::template::check("/users/${randomInt(1,100)}?q=${urlEncode(q)}").is_ok());
/// assert!(volley::template::check("${randomInt(5,1)}").is_err());
/// assert!(volley::template::check("${uuid(1)}").is_err());
/// ```
pub fn check(text: &str) -> Result<(), String> {
    for piece in pieces(text) {
        if let (_, Some(inner)) = piece? {
            parse(inner)?;
        }
    }
    Ok(())
}

/// Where a template's variables come from: a virtual user's
/// [`Session`](crate::session::Session).
pub trait Variables {
    /// The value of `name`, if set.
    fn get(&self, name: &str) -> Option<&str>;
}

/// Fills every `${...}` of `text` from `session` and the functions; a missing variable is an
/// error (the request's KO).
///
/// ```
/// let mut session = volley::session::Session::default();
/// session.set("q", "a b&c");
/// let url = volley::template::interpolate("/search?q=${urlEncode(q)}", &session).unwrap();
/// assert_eq!(url, "/search?q=a%20b%26c");
/// ```
pub fn interpolate<'a>(text: &'a str, session: &impl Variables) -> Result<Cow<'a, str>, String> {
    if !text.contains("${") {
        return Ok(Cow::Borrowed(text));
    }
    let mut out = String::with_capacity(text.len() + 16);
    for piece in pieces(text) {
        let (before, inner) = piece?;
        out.push_str(before);
        let Some(inner) = inner else { continue };
        match parse(inner)? {
            Expr::Var(name) => out.push_str(variable(session, name)?),
            Expr::RandomInt(low, high) => out.push_str(&fastrand::i64(low..high).to_string()),
            Expr::Uuid => {
                let bytes = fastrand::u128(..).to_le_bytes();
                out.push_str(
                    uuid::Builder::from_random_bytes(bytes)
                        .into_uuid()
                        .hyphenated()
                        .encode_lower(&mut uuid::Uuid::encode_buffer()),
                );
            }
            Expr::NowMillis => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .unwrap_or_default();
                out.push_str(&now.as_millis().to_string());
            }
            Expr::UrlEncode(name) => {
                out.extend(utf8_percent_encode(variable(session, name)?, UNRESERVED));
            }
        }
    }
    Ok(Cow::Owned(out))
}

fn variable<'s>(session: &'s impl Variables, name: &str) -> Result<&'s str, String> {
    session
        .get(name)
        .ok_or_else(|| format!("no session variable ${{{name}}}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::Session;

    #[test]
    fn functions_parse_and_refuse_what_they_cannot_do() {
        assert_eq!(parse("name"), Ok(Expr::Var("name")));
        assert_eq!(parse("randomInt(1, 10)"), Ok(Expr::RandomInt(1, 10)));
        assert_eq!(parse("uuid()"), Ok(Expr::Uuid));
        assert_eq!(parse("nowMillis()"), Ok(Expr::NowMillis));
        assert_eq!(parse("urlEncode(q)"), Ok(Expr::UrlEncode("q")));
        for bad in [
            "randomInt(1)",
            "randomInt(3,3)",
            "randomInt(a,3)",
            "uuid(x)",
            "urlEncode()",
            "nope()",
            "uuid(",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert!(check("/a/${b").is_err());
    }

    #[test]
    fn random_ints_stay_in_their_bounds_and_uuids_are_version_4() {
        let session = Session::default();
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2_000 {
            let n: i64 = interpolate("${randomInt(-2,3)}", &session)
                .unwrap()
                .parse()
                .unwrap();
            assert!((-2..3).contains(&n));
            seen.insert(n);
        }
        assert_eq!(seen.len(), 5, "every value of -2..3 is drawn: {seen:?}");
        let a = interpolate("${uuid()}", &session).unwrap().into_owned();
        let b = interpolate("${uuid()}", &session).unwrap().into_owned();
        let parsed = uuid::Uuid::parse_str(&a).unwrap();
        assert_eq!(parsed.get_version_num(), 4);
        assert_ne!(a, b);
    }

    #[test]
    fn now_is_milliseconds_and_missing_variables_are_errors() {
        let session = Session::default();
        let before = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis();
        let now: u128 = interpolate("${nowMillis()}", &session)
            .unwrap()
            .parse()
            .unwrap();
        assert!(now >= before && now < before + 60_000);
        assert_eq!(
            interpolate("/${x}", &session).unwrap_err(),
            "no session variable ${x}"
        );
        assert_eq!(
            interpolate("${urlEncode(x)}", &session).unwrap_err(),
            "no session variable ${x}"
        );
    }
}
