//! `${VAR}`, `${VAR:-default}` and `${VAR:?message}` substitution in string values.
//!
//! serde-saphyr has a property feature of its own, but it stops at the first undefined
//! variable and leaves quoted scalars alone. DropWizard substitutes in every string and users
//! expect to see all missing variables at once, so substitution runs here, on the tree, and
//! reports each undefined variable with its position.

use crate::error::{ConfigError, ErrorKind};
use crate::node::{Node, Origin, Value};

/// Looks a variable up; the process environment in production, a map in tests.
pub type Lookup<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// Replaces every `${...}` in the string values of `root`; `$${` is a literal `${`.
pub(crate) fn substitute(root: &mut Node, lookup: &Lookup<'_>, errors: &mut Vec<ConfigError>) {
    let _ = walk(root, String::new(), lookup, errors);
}

/// Returns whether `node` names an undefined variable.
fn walk(node: &mut Node, path: String, lookup: &Lookup<'_>, errors: &mut Vec<ConfigError>) -> bool {
    match &mut node.value {
        Value::Str(s) if s.contains('$') => {
            let before = std::mem::take(s);
            match expand(&before, lookup) {
                Ok(after) if after != before => {
                    // A value made by substitution is typed as YAML would type it, so that
                    // `${PORT:-8080}` is the number 8080 wherever a value of any type is taken.
                    node.value = retype(after);
                    false
                }
                Ok(_) => {
                    node.value = Value::Str(before);
                    false
                }
                Err(undefined) => {
                    for (offset, name, message) in undefined {
                        let origin = match &node.origin {
                            Origin::File { line, column } if !before.contains('\n') => {
                                Origin::File {
                                    line: *line,
                                    column: column + offset as u64,
                                }
                            }
                            o => o.clone(),
                        };
                        errors.push(ConfigError::new(
                            origin,
                            path.clone(),
                            ErrorKind::UndefinedVariable { name, message },
                        ));
                    }
                    node.value = Value::Str(before);
                    true
                }
            }
        }
        Value::Seq(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                walk(item, format!("{path}[{i}]"), lookup, errors);
            }
            false
        }
        Value::Map(entries) => {
            // An entry whose variable is undefined is dropped, so the report names the
            // variable and not also the `${...}` text's type.
            entries.retain_mut(|(key, value)| {
                let child = if path.is_empty() {
                    key.key_text()
                } else {
                    format!("{path}.{}", key.key_text())
                };
                !walk(value, child, lookup, errors)
            });
            false
        }
        _ => false,
    }
}

/// Types a plain scalar the way the YAML parser would; anything that is not a single scalar
/// stays a string.
pub(crate) fn retype(text: String) -> Value {
    match crate::node::parse_yaml(&text) {
        Ok(parsed)
            if !matches!(parsed.root.value, Value::Seq(_) | Value::Map(_))
                && !text.trim().is_empty() =>
        {
            match parsed.root.value {
                Value::Str(_) => Value::Str(text),
                other => other,
            }
        }
        _ => Value::Str(text),
    }
}

type Undefined = Vec<(usize, String, Option<String>)>;

/// Expands one string; on failure, every undefined variable with its byte offset.
fn expand(s: &str, lookup: &Lookup<'_>) -> Result<String, Undefined> {
    let mut out = String::with_capacity(s.len());
    let mut undefined = Vec::new();
    let mut rest = s;
    let mut offset = 0;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("$${") {
            out.push_str("${");
            offset += i + 3;
            rest = after;
            continue;
        }
        let Some(body_start) = tail.strip_prefix("${") else {
            out.push('$');
            offset += i + 1;
            rest = &tail[1..];
            continue;
        };
        let Some(end) = matching_brace(body_start) else {
            // An unclosed `${` is left as written.
            out.push_str(tail);
            rest = "";
            break;
        };
        let body = &body_start[..end];
        let at = offset + i;
        match resolve(body, lookup) {
            Ok(v) => out.push_str(&v),
            Err((name, message)) => undefined.push((at, name, message)),
        }
        let consumed = i + 2 + end + 1;
        offset += consumed;
        rest = &rest[consumed..];
    }
    out.push_str(rest);
    if undefined.is_empty() {
        Ok(out)
    } else {
        Err(undefined)
    }
}

fn matching_brace(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => return Some(i),
            '}' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// `NAME`, `NAME:-default`, `NAME-default`, `NAME:?message`, `NAME?message`.
fn resolve(body: &str, lookup: &Lookup<'_>) -> Result<String, (String, Option<String>)> {
    let split = body.find([':', '-', '?']).unwrap_or(body.len());
    let (name, op) = body.split_at(split);
    let value = lookup(name);
    let nested = |text: &str| {
        expand(text, lookup).map_err(|mut u| {
            let (_, n, m) = u.remove(0);
            (n, m)
        })
    };
    if let Some(default) = op.strip_prefix(":-") {
        return match value {
            Some(v) if !v.is_empty() => Ok(v),
            _ => nested(default),
        };
    }
    if let Some(default) = op.strip_prefix('-') {
        return match value {
            Some(v) => Ok(v),
            None => nested(default),
        };
    }
    if let Some(message) = op.strip_prefix(":?") {
        return match value {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err((name.to_owned(), Some(message.to_owned()))),
        };
    }
    if let Some(message) = op.strip_prefix('?') {
        return value.ok_or_else(|| (name.to_owned(), Some(message.to_owned())));
    }
    value.ok_or_else(|| (body.to_owned(), None))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOST" => Some("db.local".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn forms() {
        assert_eq!(expand("${HOST}", &env).unwrap(), "db.local");
        assert_eq!(expand("x-${HOST}-y", &env).unwrap(), "x-db.local-y");
        assert_eq!(expand("${NOPE:-8080}", &env).unwrap(), "8080");
        assert_eq!(expand("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(expand("${EMPTY-d}", &env).unwrap(), "");
        assert_eq!(expand("${NOPE:-${HOST}}", &env).unwrap(), "db.local");
        assert_eq!(expand("$${HOST} $5", &env).unwrap(), "${HOST} $5");
        let err = expand("a ${X} b ${Y:?set Y please}", &env).unwrap_err();
        assert_eq!(
            err,
            vec![
                (2, "X".into(), None),
                (9, "Y".into(), Some("set Y please".into()))
            ]
        );
    }

    #[test]
    fn retypes_like_yaml() {
        assert_eq!(retype("8080".into()), Value::UInt(8080));
        assert_eq!(retype("true".into()), Value::Bool(true));
        assert_eq!(retype("db.local".into()), Value::Str("db.local".into()));
        assert_eq!(retype("a: b".into()), Value::Str("a: b".into()));
    }
}
