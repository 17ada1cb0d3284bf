//! Deserializes any serde type from a [`Node`] tree, and finds every error in it.
//!
//! serde stops at the first error a `Deserialize` impl returns. To report all of them,
//! [`deserialize_all`] runs the deserialization repeatedly: each failure is located (the
//! innermost node that produced it), recorded, and that node is *poisoned*, i.e. treated as
//! absent on the next pass, so the pass after it gets further. Unknown keys that a type
//! would silently ignore are also reported: in a configuration file an ignored key is always
//! a mistake.
//!
//! Scalars are coerced the way Jackson (and so DropWizard) coerces them: a string that
//! spells a number or boolean is accepted where one is expected, which is also what makes
//! `port: ${PORT:-8080}` work after substitution.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashSet};
use std::fmt;

use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, IntoDeserializer, MapAccess,
    SeqAccess, VariantAccess, Visitor,
};

use crate::error::{ConfigError, ErrorKind};
use crate::node::{Node, Origin, Value};
use crate::suggest::did_you_mean;

/// How many passes before giving up: a bound on the errors reported for one file.
const MAX_PASSES: usize = 200;

/// A dotted path such as `server.applicationConnectors[0].port`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Path(String);

impl Path {
    fn key(&self, key: &str) -> Path {
        if self.0.is_empty() {
            Path(key.to_owned())
        } else {
            Path(format!("{}.{key}", self.0))
        }
    }
    fn index(&self, i: usize) -> Path {
        Path(format!("{}[{i}]", self.0))
    }
    /// The path to show for `node`: where the user wrote it, if a transform moved it.
    fn written(self, node: &Node) -> Path {
        match &node.written_at {
            Some(p) => Path(p.clone()),
            None => self,
        }
    }
}

/// Where an error was raised.
#[derive(Clone, Debug)]
struct Loc {
    path: String,
    origin: Origin,
    id: u32,
    node: Node,
}

#[derive(Debug)]
enum DeKind {
    Custom(String),
    Invalid {
        unexpected: String,
        expected: String,
    },
    UnknownField {
        field: String,
        expected: &'static [&'static str],
    },
    UnknownVariant {
        variant: String,
        expected: &'static [&'static str],
    },
    MissingField(&'static str),
    /// A polymorphic section without its `type`.
    MissingType {
        expected: &'static [&'static str],
    },
    /// The node depends on one already reported (e.g. an enum whose `type` was rejected):
    /// poison it without a second report.
    AlreadyReported,
}

/// The error type of the tree deserializer: a message plus the innermost place it came from.
#[derive(Debug)]
pub struct DeError {
    kind: DeKind,
    at: Option<Box<Loc>>,
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            DeKind::Custom(m) => f.write_str(m),
            DeKind::Invalid {
                unexpected,
                expected,
            } => {
                write!(f, "invalid value: {unexpected}, expected {expected}")
            }
            DeKind::UnknownField { field, .. } => write!(f, "unknown field `{field}`"),
            DeKind::UnknownVariant { variant, .. } => write!(f, "unknown variant `{variant}`"),
            DeKind::MissingField(m) => write!(f, "missing field `{m}`"),
            DeKind::AlreadyReported => f.write_str("already reported"),
            DeKind::MissingType { .. } => f.write_str("missing field `type`"),
        }
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        DeError {
            kind: DeKind::Custom(msg.to_string()),
            at: None,
        }
    }
    fn invalid_type(unexp: de::Unexpected, exp: &dyn de::Expected) -> Self {
        DeError {
            kind: DeKind::Invalid {
                unexpected: unexp.to_string(),
                expected: exp.to_string(),
            },
            at: None,
        }
    }
    fn invalid_value(unexp: de::Unexpected, exp: &dyn de::Expected) -> Self {
        Self::invalid_type(unexp, exp)
    }
    fn unknown_field(field: &str, expected: &'static [&'static str]) -> Self {
        DeError {
            kind: DeKind::UnknownField {
                field: field.to_owned(),
                expected,
            },
            at: None,
        }
    }
    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        DeError {
            kind: DeKind::UnknownVariant {
                variant: variant.to_owned(),
                expected,
            },
            at: None,
        }
    }
    fn missing_field(field: &'static str) -> Self {
        DeError {
            kind: DeKind::MissingField(field),
            at: None,
        }
    }
}

/// The ids of the nodes poisoned by the passes, i.e. left out of the returned value.
pub(crate) type Poisoned = HashSet<u32>;

/// State shared by every pass: what is poisoned, and the errors that do not stop a pass.
#[derive(Default)]
struct Ctx {
    poisoned: HashSet<u32>,
    /// Errors found without failing the pass (ignored keys), by node id so that a key
    /// reported in several passes is reported once.
    soft: RefCell<BTreeMap<u32, ConfigError>>,
}

/// Deserializes `T` from `root`, collecting every error. The value is that of the last
/// pass, with every poisoned node left out (so defaulted), so that it can still be validated
/// and those errors reported too; it is `None` only when no pass succeeded.
pub(crate) fn deserialize_all<T: DeserializeOwned>(
    root: &Node,
) -> (Option<T>, Vec<ConfigError>, Poisoned) {
    let mut ctx = Ctx::default();
    let mut errors = Vec::new();
    for _ in 0..MAX_PASSES {
        let de = NodeDe {
            node: root,
            path: Path::default(),
            ctx: &ctx,
            field: None,
            skip_type: false,
        };
        match T::deserialize(de) {
            Ok(value) => {
                errors.extend(ctx.soft.into_inner().into_values());
                return (Some(value), errors, ctx.poisoned);
            }
            Err(e) => {
                let loc = e.at.clone().map(|b| *b).unwrap_or_else(|| Loc {
                    path: String::new(),
                    origin: root.origin.clone(),
                    id: root.id,
                    node: root.clone(),
                });
                if let Some(err) = to_config_error(e.kind, &loc) {
                    errors.push(err);
                }
                if loc.id == root.id || !ctx.poisoned.insert(loc.id) {
                    break;
                }
            }
        }
    }
    errors.extend(ctx.soft.into_inner().into_values());
    (None, errors, ctx.poisoned)
}

/// Translates a located serde error into a report line; `None` when it only echoes an error
/// already reported (a required field whose value was poisoned).
fn to_config_error(kind: DeKind, loc: &Loc) -> Option<ConfigError> {
    let origin = loc.origin.clone();
    let (path, kind) = match kind {
        DeKind::UnknownField { field, expected } => (
            loc.path.clone(),
            ErrorKind::UnknownField {
                suggestions: did_you_mean(&field, expected.iter().copied()),
            },
        ),
        DeKind::UnknownVariant { variant, expected } => (
            loc.path.clone(),
            ErrorKind::IncorrectType {
                found: loc.node.describe(),
                expected: format!("one of {}", expected.join(", ")),
                suggestions: did_you_mean(&variant, expected.iter().copied()),
            },
        ),
        DeKind::Invalid { expected, .. } => (
            loc.path.clone(),
            ErrorKind::IncorrectType {
                found: loc.node.describe(),
                expected: humanize_expected(&expected),
                suggestions: Vec::new(),
            },
        ),
        DeKind::MissingField(field) => {
            if loc.node.get(field).is_some() {
                return None;
            }
            (Path(loc.path.clone()).key(field).0, ErrorKind::MissingField)
        }
        DeKind::Custom(message) => match message.strip_prefix(crate::support::REFUSED) {
            Some(why) => (loc.path.clone(), ErrorKind::Refused(why.to_owned())),
            None => (loc.path.clone(), ErrorKind::Invalid(message)),
        },
        DeKind::AlreadyReported => return None,
        DeKind::MissingType { expected } => (
            Path(loc.path.clone()).key("type").0,
            ErrorKind::Invalid(format!(
                "a `type` is required, one of {}",
                expected.join(", ")
            )),
        ),
    };
    Some(ConfigError { origin, path, kind })
}

/// serde names primitive types the way Rust spells them; a config user wants the range.
fn humanize_expected(expected: &str) -> String {
    let range = |lo: &str, hi: &str| format!("an integer from {lo} to {hi}");
    match expected {
        "u8" => range("0", "255"),
        "u16" => range("0", "65535"),
        "u32" => range("0", "4294967295"),
        "u64" | "usize" => "a non-negative integer".to_owned(),
        "i8" => range("-128", "127"),
        "i16" => range("-32768", "32767"),
        "i32" => range("-2147483648", "2147483647"),
        "i64" | "isize" => "an integer".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        other => other.to_owned(),
    }
}

/// The struct a value belongs to, so an ignored key can be named with suggestions.
#[derive(Clone, Copy)]
struct FieldCtx<'a> {
    fields: &'static [&'static str],
    key: &'a Node,
}

/// A deserializer for one node.
struct NodeDe<'a> {
    node: &'a Node,
    path: Path,
    ctx: &'a Ctx,
    field: Option<FieldCtx<'a>>,
    /// Set when this mapping is the body of an internally tagged enum: its `type` key was
    /// already consumed as the variant name.
    skip_type: bool,
}

impl<'a> NodeDe<'a> {
    fn child(&self, node: &'a Node, path: Path) -> NodeDe<'a> {
        NodeDe {
            node,
            path: path.written(node),
            ctx: self.ctx,
            field: None,
            skip_type: false,
        }
    }

    fn map_access(&self, fields: Option<&'static [&'static str]>) -> NodeMap<'a> {
        let entries: &'a [(Node, Node)] = match &self.node.value {
            Value::Map(entries) => entries,
            _ => &[],
        };
        NodeMap {
            entries: entries.iter(),
            path: self.path.clone(),
            ctx: self.ctx,
            fields,
            skip_type: self.skip_type,
            pending: None,
        }
    }

    fn seq_access(&self) -> NodeSeq<'a> {
        let items: &'a [Node] = match &self.node.value {
            Value::Seq(items) => items,
            _ => &[],
        };
        NodeSeq {
            items: items.iter().enumerate(),
            path: self.path.clone(),
            ctx: self.ctx,
        }
    }

    fn any<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::UInt(n) => visitor.visit_u64(*n),
            Value::Int(n) => visitor.visit_i64(*n),
            Value::Float(n) => visitor.visit_f64(*n),
            Value::Str(s) => visitor.visit_str(s),
            Value::Seq(_) => visitor.visit_seq(self.seq_access()),
            Value::Map(_) => visitor.visit_map(self.map_access(None)),
        }
    }

    /// A type error for this node.
    fn expected(&self, expected: &str) -> DeError {
        DeError {
            kind: DeKind::Invalid {
                unexpected: self.node.describe(),
                expected: expected.to_owned(),
            },
            at: None,
        }
    }

    fn text(&self) -> Option<&'a str> {
        match &self.node.value {
            Value::Str(s) => Some(s.trim()),
            _ => None,
        }
    }

    fn integer<'de, V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        if let Some(s) = self.text() {
            let s = s.replace('_', "");
            if let Ok(n) = s.parse::<u64>() {
                return visitor.visit_u64(n);
            }
            if let Ok(n) = s.parse::<i64>() {
                return visitor.visit_i64(n);
            }
        }
        self.any(visitor)
    }
}

macro_rules! integer_methods {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            let here = self.locator();
            self.integer(visitor).map_err(|e| here.locate(e))
        }
    )*};
}

/// A copy of what `locate` needs, for use after `self` is consumed.
struct Here<'a> {
    path: Path,
    node: &'a Node,
}

impl Here<'_> {
    fn locate(&self, mut e: DeError) -> DeError {
        if e.at.is_none() {
            e.at = Some(Box::new(Loc {
                path: self.path.0.clone(),
                origin: self.node.origin.clone(),
                id: self.node.id,
                node: self.node.clone(),
            }));
        }
        e
    }
}

impl<'a> NodeDe<'a> {
    fn locator(&self) -> Here<'a> {
        Here {
            path: self.path.clone(),
            node: self.node,
        }
    }
}

impl<'de> Deserializer<'de> for NodeDe<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let here = self.locator();
        self.any(visitor).map_err(|e| here.locate(e))
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let here = self.locator();
        let coerced = self
            .text()
            .and_then(|s| match s.to_ascii_lowercase().as_str() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            });
        match coerced {
            Some(b) => visitor.visit_bool(b),
            None => self.any(visitor),
        }
        .map_err(|e| here.locate(e))
    }

    integer_methods!(deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128);

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let here = self.locator();
        match (&self.node.value, self.text().map(str::parse::<f64>)) {
            (Value::UInt(n), _) => visitor.visit_f64(*n as f64),
            (Value::Int(n), _) => visitor.visit_f64(*n as f64),
            (_, Some(Ok(n))) => visitor.visit_f64(n),
            _ => self.any(visitor),
        }
        .map_err(|e| here.locate(e))
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let here = self.locator();
        match &self.node.value {
            Value::Str(s) => visitor.visit_str(s),
            // Jackson spells a scalar as text where text is expected; so do we.
            Value::Bool(_) | Value::UInt(_) | Value::Int(_) | Value::Float(_) => {
                visitor.visit_string(self.node.key_text())
            }
            _ => self.any(visitor),
        }
        .map_err(|e| here.locate(e))
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let here = self.locator();
        match &self.node.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
        .map_err(|e| here.locate(e))
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_any(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let here = self.locator();
        visitor
            .visit_newtype_struct(self)
            .map_err(|e| here.locate(e))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let here = self.locator();
        match &self.node.value {
            Value::Seq(_) | Value::Null => visitor.visit_seq(self.seq_access()),
            _ => self.any(visitor),
        }
        .map_err(|e| here.locate(e))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let here = self.locator();
        match &self.node.value {
            // `loggers:` with nothing under it is an empty mapping, not an error.
            Value::Map(_) | Value::Null => visitor.visit_map(self.map_access(None)),
            _ => self.any(visitor),
        }
        .map_err(|e| here.locate(e))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let here = self.locator();
        match &self.node.value {
            // A section written with nothing under it takes all its defaults.
            Value::Map(_) | Value::Null => visitor.visit_map(self.map_access(Some(fields))),
            // serde's derived structs also accept a list of values; a config never means that.
            _ => Err(self.expected("a mapping")),
        }
        .map_err(|e| here.locate(e))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let here = self.locator();
        let result = match &self.node.value {
            Value::Str(_) => visitor.visit_enum(NodeEnum {
                tag: self.child(self.node, self.path.clone()),
                body: None,
            }),
            Value::Map(entries) => {
                if let Some((key, tag)) = entries.iter().find(|(k, _)| k.key_text() == "type") {
                    // Internally tagged, as DropWizard writes polymorphic sections:
                    // `{type: file, currentLogFilename: ...}`. The rest of the mapping is the
                    // variant's body, deserialized in place so positions are kept.
                    if self.ctx.poisoned.contains(&key.id) || self.ctx.poisoned.contains(&tag.id) {
                        return Err(here.locate(DeError {
                            kind: DeKind::AlreadyReported,
                            at: None,
                        }));
                    }
                    let tag_de = self.child(tag, self.path.key("type"));
                    let body = NodeDe {
                        node: self.node,
                        path: self.path.clone(),
                        ctx: self.ctx,
                        field: None,
                        skip_type: true,
                    };
                    visitor.visit_enum(NodeEnum {
                        tag: tag_de,
                        body: Some(body),
                    })
                } else if let [(key, value)] = entries.as_slice()
                    && variants.contains(&key.key_text().as_str())
                {
                    // Externally tagged, for enums whose variants carry a value:
                    // `metric: {percentile: 99}`. Only a key that names a variant counts, so
                    // a mapping that merely lacks its `type` is still reported as such.
                    let tag = self.child(key, self.path.clone());
                    let body = self.child(value, self.path.key(&key.key_text()));
                    visitor.visit_enum(NodeEnum {
                        tag,
                        body: Some(body),
                    })
                } else {
                    Err(DeError {
                        kind: DeKind::MissingType { expected: variants },
                        at: None,
                    })
                }
            }
            _ => Err(self.expected(&format!(
                "a mapping with a `type`, one of {}",
                variants.join(", ")
            ))),
        };
        result.map_err(|e| here.locate(e))
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        if let Some(FieldCtx { fields, key }) = self.field {
            let name = key.key_text();
            if !fields.contains(&name.as_str()) {
                let error = ConfigError::new(
                    key.origin.clone(),
                    self.path.0.clone(),
                    ErrorKind::UnknownField {
                        suggestions: did_you_mean(&name, fields.iter().copied()),
                    },
                );
                self.ctx.soft.borrow_mut().insert(key.id, error);
            }
        }
        visitor.visit_unit()
    }
}

struct NodeSeq<'a> {
    items: std::iter::Enumerate<std::slice::Iter<'a, Node>>,
    path: Path,
    ctx: &'a Ctx,
}

impl<'de> SeqAccess<'de> for NodeSeq<'_> {
    type Error = DeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        for (i, item) in self.items.by_ref() {
            if self.ctx.poisoned.contains(&item.id) {
                continue;
            }
            let de = NodeDe {
                node: item,
                path: self.path.index(i).written(item),
                ctx: self.ctx,
                field: None,
                skip_type: false,
            };
            let here = de.locator();
            return seed.deserialize(de).map(Some).map_err(|e| here.locate(e));
        }
        Ok(None)
    }
}

struct NodeMap<'a> {
    entries: std::slice::Iter<'a, (Node, Node)>,
    path: Path,
    ctx: &'a Ctx,
    fields: Option<&'static [&'static str]>,
    skip_type: bool,
    pending: Option<(&'a Node, &'a Node)>,
}

impl<'de> MapAccess<'de> for NodeMap<'_> {
    type Error = DeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        for (key, value) in self.entries.by_ref() {
            let poisoned =
                self.ctx.poisoned.contains(&key.id) || self.ctx.poisoned.contains(&value.id);
            if poisoned || (self.skip_type && key.key_text() == "type") {
                continue;
            }
            self.pending = Some((key, value));
            let de = NodeDe {
                node: key,
                path: self.path.key(&key.key_text()).written(key),
                ctx: self.ctx,
                field: None,
                skip_type: false,
            };
            let here = de.locator();
            return seed.deserialize(de).map(Some).map_err(|e| here.locate(e));
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, DeError> {
        let Some((key, value)) = self.pending.take() else {
            return Err(de::Error::custom("value requested before its key"));
        };
        let de = NodeDe {
            node: value,
            path: self.path.key(&key.key_text()).written(value),
            ctx: self.ctx,
            field: self.fields.map(|fields| FieldCtx { fields, key }),
            skip_type: false,
        };
        let here = de.locator();
        seed.deserialize(de).map_err(|e| here.locate(e))
    }
}

struct NodeEnum<'a> {
    tag: NodeDe<'a>,
    body: Option<NodeDe<'a>>,
}

impl<'de, 'a> EnumAccess<'de> for NodeEnum<'a> {
    type Error = DeError;
    type Variant = NodeVariant<'a>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, NodeVariant<'a>), DeError> {
        let here = self.tag.locator();
        let value = seed.deserialize(self.tag).map_err(|e| here.locate(e))?;
        Ok((value, NodeVariant { body: self.body }))
    }
}

struct NodeVariant<'a> {
    body: Option<NodeDe<'a>>,
}

impl<'de> VariantAccess<'de> for NodeVariant<'_> {
    type Error = DeError;

    fn unit_variant(self) -> Result<(), DeError> {
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, DeError> {
        match self.body {
            Some(body) => seed.deserialize(body),
            None => seed.deserialize(().into_deserializer()),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, DeError> {
        match self.body {
            Some(body) => body.deserialize_seq(visitor),
            None => Err(de::Error::custom("expected a list for this variant")),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match self.body {
            Some(body) => body.deserialize_struct("", fields, visitor),
            None => visitor.visit_map(de::value::MapDeserializer::new(
                std::iter::empty::<((), ())>(),
            )),
        }
    }
}
