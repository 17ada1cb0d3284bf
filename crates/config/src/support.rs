//! What `#[derive(Config)]`'s code calls: reading and writing a section key by key, so that a
//! section written inline (`#[config(inline)]`) has its keys beside its parent's without
//! serde's `flatten`, which would lose the positions of errors.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, Visitor};
use serde::ser::{SerializeMap, Serializer};

/// A section's keys, read and written one at a time. Written by `#[derive(Config)]`.
pub trait Section: Default {
    /// Every key, the inline sections' included, in the order of the fields.
    fn keys() -> &'static [&'static str];

    /// Keys other tools accept that this section refuses, each with why (`refuse(...)`).
    fn refused() -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Reads the value of `key` from `map`; false when the key is not this section's.
    fn set<'de, A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<bool, A::Error>;

    /// Writes every key and its value.
    fn serialize_into<M: SerializeMap>(&self, map: &mut M) -> Result<(), M::Error>;

    /// Validates every field, each at `parent` joined with its key.
    fn validate_fields(&self, parent: &mut dyn FnMut() -> garde::Path, report: &mut garde::Report);
}

/// Marks a custom error as a refused key: the loader reports the rest as the refusal's why.
pub(crate) const REFUSED: &str = "\u{1}refused\u{1}";

/// A key of `keys`, the refusal of a key in `refused`, or serde's "unknown field" error
/// naming them all.
struct KeySeed(
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = &'static str;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<&'static str, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for KeySeed {
    type Value = &'static str;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a key")
    }

    fn visit_str<E: serde::de::Error>(self, key: &str) -> Result<&'static str, E> {
        if let Some((_, why)) = self.1.iter().find(|(k, _)| *k == key) {
            return Err(E::custom(format_args!("{REFUSED}{why}")));
        }
        self.0
            .iter()
            .find(|k| **k == key)
            .copied()
            .ok_or_else(|| E::unknown_field(key, self.0))
    }
}

struct SectionVisitor<T>(&'static str, PhantomData<T>);

impl<'de, T: Section> Visitor<'de> for SectionVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "struct {}", self.0)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<T, A::Error> {
        // Absent keys keep their defaults.
        let mut value = T::default();
        let mut seen: Vec<&'static str> = Vec::new();
        while let Some(key) = map.next_key_seed(KeySeed(T::keys(), T::refused()))? {
            if seen.contains(&key) {
                return Err(A::Error::duplicate_field(key));
            }
            seen.push(key);
            if !value.set(key, &mut map)? {
                return Err(A::Error::unknown_field(key, T::keys()));
            }
        }
        Ok(value)
    }
}

/// Reads a section: a mapping of its keys, each absent one taking its default.
pub fn deserialize_section<'de, T: Section, D: Deserializer<'de>>(
    deserializer: D,
    name: &'static str,
) -> Result<T, D::Error> {
    deserializer.deserialize_struct(name, T::keys(), SectionVisitor(name, PhantomData))
}

/// Writes a section as a mapping of its keys.
pub fn serialize_section<T: Section, S: Serializer>(
    section: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    let mut map = serializer.serialize_map(None)?;
    section.serialize_into(&mut map)?;
    map.end()
}

/// The index of a variant's name in `names`, or serde's "unknown variant" error.
pub struct VariantSeed(pub &'static [&'static str]);

impl<'de> DeserializeSeed<'de> for VariantSeed {
    type Value = u32;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<u32, D::Error> {
        d.deserialize_identifier(self)
    }
}

impl Visitor<'_> for VariantSeed {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "one of {}", self.0.join(", "))
    }

    fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<u32, E> {
        self.0
            .iter()
            .position(|n| *n == name)
            .map(|i| i as u32)
            .ok_or_else(|| E::unknown_variant(name, self.0))
    }
}

/// A field's value, validated when its type is validated (a section, a list or map of them,
/// an optional one) and passed over otherwise: the derive cannot tell which from the type's
/// name, so the method is chosen by autoref ([`DiveInto`] for `&Dive<T: Validate>`,
/// [`DiveNone`] for every other `&&Dive<T>`).
pub struct Dive<'a, T: ?Sized>(pub &'a T);

/// Validates a [`Dive`]'s value: chosen when it implements `garde::Validate`.
pub trait DiveInto {
    /// Validates the value at `parent`.
    fn dive(&self, parent: &mut dyn FnMut() -> garde::Path, report: &mut garde::Report);
}

impl<T: ?Sized + garde::Validate<Context = ()>> DiveInto for Dive<'_, T> {
    fn dive(&self, parent: &mut dyn FnMut() -> garde::Path, report: &mut garde::Report) {
        self.0.validate_into(&(), parent, report);
    }
}

/// Validates nothing: chosen for a value that has no rules of its own.
pub trait DiveNone {
    /// Does nothing.
    fn dive(&self, _parent: &mut dyn FnMut() -> garde::Path, _report: &mut garde::Report) {}
}

impl<T: ?Sized> DiveNone for &Dive<'_, T> {}
