//! The document tree every other step works on.
//!
//! YAML (and JSON, a subset of it) is parsed by serde-saphyr into this small tree of
//! [`Node`]s, each carrying where it came from. Substitution, `--set` overrides and
//! layout migrations edit the tree; [`crate::de`] then deserializes the target type from
//! it. Keeping a tree rather than streaming straight into the target type is what lets the
//! loader report *every* error with a line and column, not only the first one.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// Where a node came from, for error reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// A line and column (both 1-based) in the loaded file.
    File {
        /// 1-based line.
        line: u64,
        /// 1-based column.
        column: u64,
    },
    /// The value of the N-th (1-based) `--set` override.
    Override {
        /// 1-based position among the overrides.
        index: usize,
        /// The override as given.
        text: String,
    },
    /// Inserted by the loader or an application hook (e.g. a layout migration).
    Synthetic,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::File { line, column } => write!(f, "{line}:{column}"),
            Origin::Override { index, text } => write!(f, "--set #{index} ({text})"),
            Origin::Synthetic => f.write_str("(generated)"),
        }
    }
}

/// A YAML scalar, sequence or mapping, with its origin.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The value itself.
    pub value: Value,
    /// Where it was written.
    pub origin: Origin,
    /// The path where the user wrote this node, when a transform moved it elsewhere (e.g.
    /// `http.port` for a 0.6 layout migrated to `server.applicationConnectors[0].port`), so
    /// errors name what the user wrote.
    pub written_at: Option<String>,
    /// Unique within one loaded tree; lets the deserializer mark a node as already
    /// reported so that it is skipped on the next pass.
    pub(crate) id: u32,
}

/// The value of a [`Node`].
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `~`, `null` or an empty value.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A non-negative integer.
    UInt(u64),
    /// A negative integer.
    Int(i64),
    /// A floating point number.
    Float(f64),
    /// Any other scalar.
    Str(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in the order written (duplicate keys are rejected while parsing).
    Map(Vec<(Node, Node)>),
}

impl Node {
    /// A node that no file position describes.
    pub fn synthetic(value: Value) -> Node {
        Node {
            value,
            origin: Origin::Synthetic,
            written_at: None,
            id: 0,
        }
    }

    /// A synthetic string node, e.g. a `type:` a migration adds.
    pub fn string(s: impl Into<String>) -> Node {
        Node::synthetic(Value::Str(s.into()))
    }

    /// A synthetic mapping node of the given entries, keys as strings.
    pub fn map(entries: impl IntoIterator<Item = (String, Node)>) -> Node {
        Node::synthetic(Value::Map(
            entries
                .into_iter()
                .map(|(k, v)| (Node::string(k), v))
                .collect(),
        ))
    }

    /// Records that this node was written at `path` before a transform moved it.
    pub fn moved_from(mut self, path: impl Into<String>) -> Node {
        self.written_at.get_or_insert_with(|| path.into());
        self
    }

    /// The scalar as a key string (mapping keys are usually strings; numbers are spelled).
    pub fn key_text(&self) -> String {
        match &self.value {
            Value::Str(s) => s.clone(),
            Value::Null => "null".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::UInt(n) => n.to_string(),
            Value::Int(n) => n.to_string(),
            Value::Float(n) => n.to_string(),
            Value::Seq(_) => "[...]".to_owned(),
            Value::Map(_) => "{...}".to_owned(),
        }
    }

    /// The value of `key` when this is a mapping.
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| k.key_text() == key)
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// The value of `key` when this is a mapping, mutably.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut Node> {
        match &mut self.value {
            Value::Map(entries) => entries
                .iter_mut()
                .find(|(k, _)| k.key_text() == key)
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// Removes `key` from this mapping, returning its key and value nodes.
    pub fn remove(&mut self, key: &str) -> Option<(Node, Node)> {
        match &mut self.value {
            Value::Map(entries) => {
                let at = entries.iter().position(|(k, _)| k.key_text() == key)?;
                Some(entries.remove(at))
            }
            _ => None,
        }
    }

    /// A short description of the value for "is of type: ..." messages.
    pub fn describe(&self) -> String {
        match &self.value {
            Value::Null => "null".to_owned(),
            Value::Bool(b) => format!("boolean {b}"),
            Value::UInt(n) => format!("integer {n}"),
            Value::Int(n) => format!("integer {n}"),
            Value::Float(n) => format!("number {n}"),
            Value::Str(s) => format!("string {s:?}"),
            Value::Seq(_) => "a list".to_owned(),
            Value::Map(_) => "a mapping".to_owned(),
        }
    }

    /// Gives every node of the tree a distinct id (the root gets 1).
    pub(crate) fn number(&mut self) {
        fn walk(node: &mut Node, next: &mut u32) {
            *next += 1;
            node.id = *next;
            match &mut node.value {
                Value::Seq(items) => items.iter_mut().for_each(|n| walk(n, next)),
                Value::Map(entries) => entries.iter_mut().for_each(|(k, v)| {
                    walk(k, next);
                    walk(v, next)
                }),
                _ => {}
            }
        }
        let mut next = 0;
        walk(self, &mut next);
    }
}

/// A problem found while building the tree that does not stop the build.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DuplicateKey {
    pub key: String,
    pub first: Origin,
    pub again: Origin,
}

/// What serde-saphyr hands us: a spanned scalar or collection. Collections keep their
/// children spanned, so positions survive all the way down.
struct Raw(Node, Vec<DuplicateKey>);

fn origin_of<T>(s: &Spanned<T>) -> Origin {
    let loc = &s.referenced;
    if loc.line() == 0 {
        Origin::Synthetic
    } else {
        Origin::File {
            line: loc.line(),
            column: loc.column(),
        }
    }
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(RawVisitor)
    }
}

struct RawVisitor;

impl RawVisitor {
    fn scalar(value: Value) -> Raw {
        Raw(Node::synthetic(value), Vec::new())
    }
}

impl<'de> Visitor<'de> for RawVisitor {
    type Value = Raw;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any YAML value")
    }
    fn visit_unit<E>(self) -> Result<Raw, E> {
        Ok(Self::scalar(Value::Null))
    }
    fn visit_none<E>(self) -> Result<Raw, E> {
        Ok(Self::scalar(Value::Null))
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
        Raw::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
        Ok(Self::scalar(Value::Bool(v)))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Raw, E> {
        Ok(Self::scalar(Value::UInt(v)))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
        Ok(Self::scalar(if v >= 0 {
            Value::UInt(v as u64)
        } else {
            Value::Int(v)
        }))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Raw, E> {
        u64::try_from(v)
            .map(|v| Self::scalar(Value::UInt(v)))
            .or_else(|_| Ok(Self::scalar(Value::Str(v.to_string()))))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Raw, E> {
        match i64::try_from(v) {
            Ok(v) => self.visit_i64(v),
            Err(_) => Ok(Self::scalar(Value::Str(v.to_string()))),
        }
    }
    fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
        Ok(Self::scalar(Value::Float(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
        Ok(Self::scalar(Value::Str(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Raw, E> {
        Ok(Self::scalar(Value::Str(v)))
    }
    fn visit_bytes<E>(self, v: &[u8]) -> Result<Raw, E> {
        Ok(Self::scalar(Value::Str(
            String::from_utf8_lossy(v).into_owned(),
        )))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
        let mut items = Vec::new();
        let mut dups = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<Raw>>()? {
            let origin = origin_of(&item);
            let Raw(mut node, more) = item.value;
            node.origin = origin;
            dups.extend(more);
            items.push(node);
        }
        Ok(Raw(Node::synthetic(Value::Seq(items)), dups))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
        let mut entries: Vec<(Node, Node)> = Vec::new();
        let mut dups = Vec::new();
        while let Some(key) = map.next_key::<Spanned<Raw>>()? {
            let key_origin = origin_of(&key);
            let Raw(mut key_node, more) = key.value;
            key_node.origin = key_origin;
            dups.extend(more);
            let value = map.next_value::<Spanned<Raw>>()?;
            let value_origin = origin_of(&value);
            let Raw(mut value_node, more) = value.value;
            // An empty value (`key:`) has no position of its own; point at the key.
            value_node.origin = match value_origin {
                Origin::Synthetic => key_node.origin.clone(),
                o => o,
            };
            dups.extend(more);
            let text = key_node.key_text();
            if let Some((first, _)) = entries.iter().find(|(k, _)| k.key_text() == text) {
                // Keep the first entry and report the repeat: a YAML mapping with two equal
                // keys is ambiguous, and silently keeping either would hide a mistake.
                dups.push(DuplicateKey {
                    key: text,
                    first: first.origin.clone(),
                    again: key_node.origin.clone(),
                });
                continue;
            }
            entries.push((key_node, value_node));
        }
        Ok(Raw(Node::synthetic(Value::Map(entries)), dups))
    }
}

/// The parse of a whole document: the tree plus any repeated keys found in it.
pub(crate) struct Parsed {
    pub root: Node,
    pub duplicates: Vec<DuplicateKey>,
}

/// Parses YAML text into a tree. An empty document is an empty mapping.
pub(crate) fn parse_yaml(text: &str) -> Result<Parsed, serde_saphyr::Error> {
    let options = serde_saphyr::options! {
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::PassThrough,
        with_snippet: false,
        // The tree is built through `deserialize_any`, so typing is YAML's implicit typing.
        // Keep it to YAML 1.2's: `y`, `no`, `on` stay strings (the "Norway problem"), and
        // numbers keep their spelling where a conversion would change it (`0755`, `1_000`);
        // a number is still accepted from such a string where one is expected.
        strict_booleans: true,
        leading_zero_numbers_as_strings: true,
        underscored_numbers_as_strings: true,
    };
    if text.trim().is_empty() || only_comments(text) {
        return Ok(Parsed {
            root: Node::synthetic(Value::Map(Vec::new())),
            duplicates: Vec::new(),
        });
    }
    let spanned: Spanned<Raw> = serde_saphyr::from_str_with_options(text, options)?;
    let origin = origin_of(&spanned);
    let Raw(mut root, duplicates) = spanned.value;
    root.origin = origin;
    Ok(Parsed { root, duplicates })
}

fn only_comments(text: &str) -> bool {
    text.lines().all(|l| {
        let l = l.trim();
        l.is_empty() || l.starts_with('#') || l == "---"
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_survive_nesting() {
        let p = parse_yaml("a:\n  b: 1\n  c: [x, 2]\nd:\n").unwrap();
        let a = p.root.get("a").unwrap();
        assert_eq!(
            a.get("b").unwrap().origin,
            Origin::File { line: 2, column: 6 }
        );
        let c = a.get("c").unwrap();
        match &c.value {
            Value::Seq(items) => {
                assert_eq!(items[1].value, Value::UInt(2));
                assert_eq!(
                    items[1].origin,
                    Origin::File {
                        line: 3,
                        column: 10
                    }
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(p.root.get("d").unwrap().value, Value::Null);
    }

    #[test]
    fn duplicates_are_collected_not_fatal() {
        let p = parse_yaml("a: 1\nb: 2\na: 3\nb: 4\n").unwrap();
        assert_eq!(p.duplicates.len(), 2);
        assert_eq!(p.root.get("a").unwrap().value, Value::UInt(1));
        assert_eq!(p.duplicates[1].again, Origin::File { line: 4, column: 1 });
    }
}
