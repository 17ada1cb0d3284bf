//! Values read from text and written as text.

/// Implements `Deserialize` for a type parsed from text (`FromStr<Err = String>`), giving
/// "is of type: string "x", expected: <what>" on failure, and `Serialize` through `Display`.
macro_rules! text_value {
    ($ty:ty, $expected:expr) => {
        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl serde::de::Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                        f.write_str($expected)
                    }
                    fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<$ty, E> {
                        s.parse::<$ty>()
                            .map_err(|_| E::invalid_value(serde::de::Unexpected::Str(s), &self))
                    }
                }
                d.deserialize_str(V)
            }
        }
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }
    };
}
pub(crate) use text_value;
