//! Helpers for declaring configuration sections the DropWizard way: one type per YAML
//! section, each field with its default written beside it.

/// Declares a configuration section: a struct whose YAML keys are the camelCase field
/// names, whose absent keys take the default written beside each field, and which rejects
/// unknown keys. It derives `Serialize` (for `check --dump`), `Deserialize` and
/// `garde::Validate` (fields are unvalidated unless they carry a `#[garde(...)]` rule).
///
/// An optional `with { ... }` list adds fields shared by several sections (e.g. the fields
/// every appender has) without serde's `flatten`, which would lose error positions.
///
/// ```
/// ferrowizard_config::section! {
///     /// The example section.
///     pub struct Example {
///         /// A port.
///         #[garde(range(min = 1))]
///         port: u16 = 8080,
///     }
/// }
/// assert_eq!(Example::default().port, 8080);
/// ```
#[macro_export]
macro_rules! section {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $default:expr ),* $(,)?
        }
        $( with $($common:tt)+ )?
    ) => {
        $crate::section!(@emit [$(#[$meta])*] $name [$( [$(#[$fmeta])* $field : $ty = $default] )*] $( $($common)+ )?);
    };
    (@emit [$($meta:tt)*] $name:ident [$($fields:tt)*] $($common:tt)+) => {
        $($common)+! { @fields $crate::section; [$($meta)*] $name [$($fields)*] }
    };
    (@emit [$($meta:tt)*] $name:ident [$( [$(#[$fmeta:meta])* $field:ident : $ty:ty = $default:expr] )*]) => {
        $($meta)*
        #[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize, garde::Validate)]
        #[serde(rename_all = "camelCase", deny_unknown_fields, default)]
        #[garde(allow_unvalidated)]
        pub struct $name {
            $( $(#[$fmeta])* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }
    };
}

/// Serializes an enum variant the way DropWizard writes polymorphic sections: the variant's
/// fields with `type: <name>` first. The loader reads this form back (see the crate docs).
pub fn serialize_tagged<S, T>(serializer: S, name: &str, body: &T) -> Result<S::Ok, S::Error>
where
    S: serde::Serializer,
    T: serde::Serialize,
{
    #[derive(serde::Serialize)]
    struct Tagged<'a, T> {
        #[serde(rename = "type")]
        name: &'a str,
        #[serde(flatten)]
        body: &'a T,
    }
    serde::Serialize::serialize(&Tagged { name, body }, serializer)
}
