//! Keys a model deliberately lacks, each with the reason and what to use instead.
//!
//! A key that other tools accept (DropWizard's `minThreads`, say) but that has no meaning in
//! the model is better refused with a sentence than reported as a bare unknown field: the
//! user learns why, and what to write instead. [`Loader::refuse`](crate::Loader::refuse)
//! takes a list of [`Refusal`]s; each key found is reported and taken out of the tree, so the
//! deserializer does not report it a second time.

use crate::error::{ConfigError, ErrorKind};
use crate::node::{Node, Origin, Value};

/// A key refused wherever `path` matches, with the sentence that says why.
///
/// `path` is dotted, in the model's spelling after transforms: `[]` stands for any item of
/// a sequence, `[type=tcp]` for any item whose `type` is `tcp`, `*` for any key of a
/// mapping and `**` for any run of keys and items, e.g.
/// `server.applicationConnectors[].minThreads` or `**.appenders[type=tcp].immediateFlush`.
///
/// ```
/// use ferrowizard_config::{Loader, Refusal};
///
/// #[derive(Debug, serde::Deserialize, garde::Validate)]
/// #[serde(deny_unknown_fields)]
/// struct Config {
///     #[garde(skip)]
///     #[serde(default)]
///     port: u16,
/// }
/// const REFUSED: &[Refusal] = &[Refusal {
///     path: "minThreads",
///     why: "minThreads has no meaning here; set maxThreads",
/// }];
/// let report = Loader::new()
///     .refuse(REFUSED)
///     .load_str::<Config>("config.yaml", "port: 1\nminThreads: 4\n")
///     .unwrap_err();
/// assert_eq!(
///     report.to_string(),
///     "config.yaml has the following error:\n  \
///      * config.yaml:2:1: Unrecognized field at: minThreads; minThreads has no meaning here; set maxThreads"
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// Where the key is, e.g. `server.gzip.bufferSize`.
    pub path: &'static str,
    /// Why it has no meaning here, and what to use instead.
    pub why: &'static str,
}

/// One step of a refusal's path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Segment<'p> {
    Key(&'p str),
    AnyKey,
    AnyItem,
    /// Items whose `type` is this.
    ItemOfType(&'p str),
    /// Any run of keys and items, none included.
    AnyDepth,
}

fn segments(path: &str) -> Vec<Segment<'_>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (key, mut items) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        match key {
            "" => {}
            "*" => out.push(Segment::AnyKey),
            "**" => out.push(Segment::AnyDepth),
            k => out.push(Segment::Key(k)),
        }
        while let Some(rest) = items.strip_prefix('[') {
            let (inside, after) = rest.split_once(']').unwrap_or((rest, ""));
            out.push(match inside.strip_prefix("type=") {
                Some(kind) => Segment::ItemOfType(kind),
                None => Segment::AnyItem,
            });
            items = after;
        }
    }
    out
}

fn type_of(node: &Node) -> Option<String> {
    node.get("type").map(Node::key_text)
}

/// Reports and removes every key of `root` that a refusal names.
pub(crate) fn refuse(root: &mut Node, refusals: &[Refusal], errors: &mut Vec<ConfigError>) {
    for refusal in refusals {
        walk(
            root,
            &segments(refusal.path),
            String::new(),
            refusal,
            errors,
        );
    }
}

/// Takes out of `value` (a configuration as serde writes it) every key `refusals` name, so
/// that a dump of the model loads back: a type the model shares between sections (an
/// appender's fields, say) may carry a key one of them refuses.
///
/// ```
/// use ferrowizard_config::{Refusal, prune_refused};
/// let mut value = serde_json::json!({"a": [{"type": "x", "k": 1, "j": 2}]});
/// prune_refused(&mut value, &[Refusal { path: "a[type=x].k", why: "no" }]);
/// assert_eq!(value, serde_json::json!({"a": [{"type": "x", "j": 2}]}));
/// ```
pub fn prune_refused(value: &mut serde_json::Value, refusals: &[Refusal]) {
    fn to_node(v: &serde_json::Value) -> Node {
        Node::synthetic(match v {
            serde_json::Value::Null => Value::Null,
            serde_json::Value::Bool(b) => Value::Bool(*b),
            serde_json::Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => Value::UInt(u),
                (None, Some(i), _) => Value::Int(i),
                (_, _, f) => Value::Float(f.unwrap_or(f64::NAN)),
            },
            serde_json::Value::String(s) => Value::Str(s.clone()),
            serde_json::Value::Array(items) => Value::Seq(items.iter().map(to_node).collect()),
            serde_json::Value::Object(map) => Value::Map(
                map.iter()
                    .map(|(k, v)| (Node::string(k.clone()), to_node(v)))
                    .collect(),
            ),
        })
    }
    /// The keys still in `node`, removed from `v`.
    fn prune(v: &mut serde_json::Value, node: &Node) {
        match (v, &node.value) {
            (serde_json::Value::Object(map), Value::Map(entries)) => {
                map.retain(|k, _| entries.iter().any(|(key, _)| key.key_text() == *k));
                for (key, child) in entries {
                    if let Some(v) = map.get_mut(&key.key_text()) {
                        prune(v, child);
                    }
                }
            }
            (serde_json::Value::Array(items), Value::Seq(nodes)) => {
                for (v, node) in items.iter_mut().zip(nodes) {
                    prune(v, node);
                }
            }
            _ => {}
        }
    }
    let mut node = to_node(value);
    refuse(&mut node, refusals, &mut Vec::new());
    prune(value, &node);
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(
    node: &mut Node,
    rest: &[Segment<'_>],
    path: String,
    refusal: &Refusal,
    errors: &mut Vec<ConfigError>,
) {
    let path = node.written_at.clone().unwrap_or(path);
    let Some((first, rest)) = rest.split_first() else {
        return;
    };
    if *first == Segment::AnyDepth {
        // None: the rest here; one or more: the whole pattern again in every child.
        walk(node, rest, path.clone(), refusal, errors);
        let again: Vec<Segment<'_>> = std::iter::once(*first)
            .chain(rest.iter().copied())
            .collect();
        match &mut node.value {
            Value::Map(entries) => {
                for (k, v) in entries.iter_mut() {
                    walk(v, &again, join(&path, &k.key_text()), refusal, errors);
                }
            }
            Value::Seq(items) => {
                for (i, item) in items.iter_mut().enumerate() {
                    walk(item, &again, format!("{path}[{i}]"), refusal, errors);
                }
            }
            _ => {}
        }
        return;
    }
    match (&mut node.value, first) {
        (Value::Map(entries), Segment::Key(key)) if rest.is_empty() => {
            if let Some(i) = entries.iter().position(|(k, _)| k.key_text() == *key) {
                let (k, v) = entries.remove(i);
                let at = v.written_at.clone().unwrap_or_else(|| join(&path, key));
                // A key a transform wrote has no position: the value's is where the user wrote it.
                let origin = match k.origin {
                    Origin::Synthetic => v.origin.clone(),
                    origin => origin,
                };
                errors.push(ConfigError::new(
                    origin,
                    at,
                    ErrorKind::Refused(refusal.why.to_owned()),
                ));
            }
        }
        (Value::Map(entries), Segment::Key(key)) => {
            if let Some((_, v)) = entries.iter_mut().find(|(k, _)| k.key_text() == *key) {
                walk(v, rest, join(&path, key), refusal, errors);
            }
        }
        (Value::Map(entries), Segment::AnyKey) => {
            for (k, v) in entries.iter_mut() {
                walk(v, rest, join(&path, &k.key_text()), refusal, errors);
            }
        }
        (Value::Seq(items), Segment::AnyItem) => {
            for (i, item) in items.iter_mut().enumerate() {
                walk(item, rest, format!("{path}[{i}]"), refusal, errors);
            }
        }
        (Value::Seq(items), Segment::ItemOfType(kind)) => {
            for (i, item) in items.iter_mut().enumerate() {
                if type_of(item).is_some_and(|t| t.eq_ignore_ascii_case(kind)) {
                    walk(item, rest, format!("{path}[{i}]"), refusal, errors);
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_keys_wildcards_and_items() {
        use Segment::*;
        assert_eq!(
            segments("server.applicationConnectors[].minThreads"),
            vec![
                Key("server"),
                Key("applicationConnectors"),
                AnyItem,
                Key("minThreads")
            ]
        );
        assert_eq!(
            segments("logging.loggers.*.x"),
            vec![Key("logging"), Key("loggers"), AnyKey, Key("x")]
        );
        assert_eq!(segments("a[][]"), vec![Key("a"), AnyItem, AnyItem]);
        assert_eq!(
            segments("**.appenders[type=tcp].x"),
            vec![AnyDepth, Key("appenders"), ItemOfType("tcp"), Key("x")]
        );
    }

    fn refused(text: &str, path: &'static str) -> (Vec<String>, String) {
        let mut root = crate::node::parse_yaml(text).unwrap().root;
        let mut errors = Vec::new();
        refuse(&mut root, &[Refusal { path, why: "no" }], &mut errors);
        (
            errors.into_iter().map(|e| e.path).collect(),
            format!("{:?}", root.get("a").map(Node::key_text)),
        )
    }

    #[test]
    fn wildcards_find_the_key_at_any_depth_and_of_any_type() {
        let text = "a:\n  l: [{type: tcp, x: 1}, {type: file, x: 2}]\n  m:\n    n:\n      l: [{type: TCP, x: 3}]\nx: 4\n";
        assert_eq!(
            refused(text, "**.l[type=tcp].x").0,
            ["a.l[0].x", "a.m.n.l[0].x"]
        );
        assert_eq!(
            refused(text, "**.x").0,
            ["x", "a.l[0].x", "a.l[1].x", "a.m.n.l[0].x"]
        );
        assert_eq!(refused(text, "a.*.n.l[].x").0, ["a.m.n.l[0].x"]);
        assert!(refused(text, "a.l[type=udp].x").0.is_empty());
    }
}
