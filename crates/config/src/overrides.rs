//! `--set server.applicationConnectors[0].port=9090`: edits of the tree before it is
//! deserialized, so an override is validated exactly like the file.
//!
//! Path syntax: keys separated by `.`, list indexes in `[n]`, and keys that contain dots in
//! double quotes: `logging.loggers."org.eclipse.jetty"=WARN`. The value is read as YAML, so
//! `9090` is a number, `[]` an empty list and `"9090"` a string.

use crate::error::{ConfigError, ErrorKind};
use crate::node::{Node, Origin, Value};

#[derive(Debug, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

fn parse_path(path: &str) -> Result<Vec<Seg>, String> {
    let mut segs = Vec::new();
    let mut chars = path.chars().peekable();
    let mut expect_key = true;
    while let Some(&c) = chars.peek() {
        match c {
            '.' if !expect_key => {
                chars.next();
                expect_key = true;
            }
            '[' => {
                chars.next();
                let digits: String = chars.by_ref().take_while(|&c| c != ']').collect();
                let i = digits
                    .trim()
                    .parse()
                    .map_err(|_| format!("{digits:?} is not a list index"))?;
                segs.push(Seg::Index(i));
                expect_key = false;
            }
            '"' if expect_key => {
                chars.next();
                let key: String = chars.by_ref().take_while(|&c| c != '"').collect();
                segs.push(Seg::Key(key));
                expect_key = false;
            }
            _ if expect_key => {
                let mut key = String::new();
                while let Some(&c) = chars.peek() {
                    if c == '.' || c == '[' {
                        break;
                    }
                    key.push(c);
                    chars.next();
                }
                if key.is_empty() {
                    return Err("empty key".into());
                }
                segs.push(Seg::Key(key));
                expect_key = false;
            }
            _ => return Err(format!("unexpected {c:?}")),
        }
    }
    if segs.is_empty() || expect_key {
        return Err("the path is empty or ends with '.'".into());
    }
    Ok(segs)
}

fn set_origin(node: &mut Node, origin: &Origin) {
    node.origin = origin.clone();
    match &mut node.value {
        Value::Seq(items) => items.iter_mut().for_each(|n| set_origin(n, origin)),
        Value::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
            set_origin(k, origin);
            set_origin(v, origin)
        }),
        _ => {}
    }
}

/// Applies the `index`-th (1-based) override `text` to `root`.
pub(crate) fn apply(root: &mut Node, index: usize, text: &str) -> Result<(), Box<ConfigError>> {
    let origin = Origin::Override {
        index,
        text: text.to_owned(),
    };
    let fail = |path: &str, m: String| {
        Box::new(ConfigError::new(
            origin.clone(),
            path,
            ErrorKind::BadOverride(m),
        ))
    };
    let Some((path, value)) = text.split_once('=') else {
        return Err(fail("", format!("{text:?} is not of the form path=value")));
    };
    let segs =
        parse_path(path.trim()).map_err(|m| fail(path, format!("bad path {path:?}: {m}")))?;
    let mut new = if value.trim().is_empty() {
        Node::synthetic(Value::Null)
    } else {
        crate::node::parse_yaml(value)
            .map_err(|e| fail(path, format!("the value {value:?} is not valid YAML: {e}")))?
            .root
    };
    set_origin(&mut new, &origin);

    // Edit a copy so that a failed override leaves no half-made path behind.
    let mut edited = root.clone();
    let mut here = &mut edited;
    let mut walked = String::new();
    for seg in &segs {
        if matches!(here.value, Value::Null) {
            here.value = match seg {
                Seg::Key(_) => Value::Map(Vec::new()),
                Seg::Index(_) => Value::Seq(Vec::new()),
            };
        }
        let description = here.describe();
        here = match (seg, &mut here.value) {
            (Seg::Key(k), Value::Map(entries)) => {
                walked = if walked.is_empty() {
                    k.clone()
                } else {
                    format!("{walked}.{k}")
                };
                let at = match entries.iter().position(|(key, _)| key.key_text() == *k) {
                    Some(at) => at,
                    None => {
                        let mut key = Node::synthetic(Value::Str(k.clone()));
                        key.origin = origin.clone();
                        let mut value = Node::synthetic(Value::Null);
                        value.origin = origin.clone();
                        entries.push((key, value));
                        entries.len() - 1
                    }
                };
                &mut entries[at].1
            }
            (Seg::Index(i), Value::Seq(items)) => {
                walked = format!("{walked}[{i}]");
                if *i == items.len() {
                    let mut value = Node::synthetic(Value::Null);
                    value.origin = origin.clone();
                    items.push(value);
                } else if *i > items.len() {
                    return Err(fail(
                        &walked,
                        format!(
                            "index {i} is past the end of a list of {} items",
                            items.len()
                        ),
                    ));
                }
                &mut items[*i]
            }
            (Seg::Key(k), _) => {
                return Err(fail(
                    &walked,
                    format!("{walked} is {}, so it has no field {k:?}", description),
                ));
            }
            (Seg::Index(i), _) => {
                return Err(fail(
                    &walked,
                    format!(
                        "{walked} is {}, not a list, so it has no index {i}",
                        description
                    ),
                ));
            }
        };
    }
    *here = new;
    *root = edited;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::node::parse_yaml;

    #[test]
    fn paths() {
        assert_eq!(
            parse_path(r#"a.b[2]."x.y".c"#).unwrap(),
            vec![
                Seg::Key("a".into()),
                Seg::Key("b".into()),
                Seg::Index(2),
                Seg::Key("x.y".into()),
                Seg::Key("c".into())
            ]
        );
        assert!(parse_path("a.").is_err());
        assert!(parse_path("a[x]").is_err());
        assert!(parse_path("").is_err());
    }

    #[test]
    fn sets_nested_values_typed_as_yaml() {
        let mut root =
            parse_yaml("server:\n  applicationConnectors:\n    - type: http\n      port: 8080\n")
                .unwrap()
                .root;
        apply(&mut root, 1, "server.applicationConnectors[0].port=9090").unwrap();
        apply(&mut root, 2, "logging.level=WARN").unwrap();
        apply(
            &mut root,
            3,
            "server.applicationConnectors[1].port=\"9091\"",
        )
        .unwrap();
        let port = root
            .get("server")
            .unwrap()
            .get("applicationConnectors")
            .unwrap();
        let Value::Seq(items) = &port.value else {
            panic!()
        };
        assert_eq!(items[0].get("port").unwrap().value, Value::UInt(9090));
        assert_eq!(
            items[1].get("port").unwrap().value,
            Value::Str("9091".into())
        );
        assert_eq!(
            root.get("logging").unwrap().get("level").unwrap().value,
            Value::Str("WARN".into())
        );
        assert!(apply(&mut root, 4, "server.applicationConnectors[5].port=1").is_err());
        assert!(apply(&mut root, 5, "logging.level.x=1").is_err());
        assert!(apply(&mut root, 6, "novalue").is_err());
    }
}
