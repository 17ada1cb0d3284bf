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

/// Implements `garde::Validate` for a type whose rule spans its fields: `$check` is a method
/// `fn(&self) -> Result<_, E>` (`E: Display`), and its error is reported at the value itself,
/// i.e. at the section's own key in the file.
///
/// For a rule that no single field's `#[garde(...)]` can state, such as "exactly one of these
/// keys" or "`from` before `to`". The type needs no `garde::Validate` derive (and must not
/// have one); the caller needs no direct dependency on garde.
///
/// ```
/// use ferrowizard_config::garde::Validate;
///
/// #[derive(serde::Deserialize)]
/// struct Window {
///     from: u32,
///     to: u32,
/// }
///
/// impl Window {
///     fn ordered(&self) -> Result<(), String> {
///         if self.from <= self.to {
///             Ok(())
///         } else {
///             Err(format!("from ({}) must not be after to ({})", self.from, self.to))
///         }
///     }
/// }
///
/// ferrowizard_config::validated_by!(Window, ordered);
///
/// assert!(Window { from: 1, to: 2 }.validate().is_ok());
/// let report = Window { from: 3, to: 2 }.validate().unwrap_err();
/// assert_eq!(report.to_string(), "from (3) must not be after to (2)\n");
/// ```
#[macro_export]
macro_rules! validated_by {
    ($ty:ty, $check:ident) => {
        impl $crate::garde::Validate for $ty {
            type Context = ();

            fn validate_into(
                &self,
                _: &(),
                parent: &mut dyn FnMut() -> $crate::garde::Path,
                report: &mut $crate::garde::Report,
            ) {
                if let Err(e) = self.$check() {
                    report.append(parent(), $crate::garde::Error::new(e));
                }
            }
        }
    };
}

/// A garde rule for a [`Duration`](crate::Duration) that must not be zero (a timeout, an
/// interval): `#[garde(custom(ferrowizard_config::positive_duration))]`. Its message is
/// `must be longer than 0`.
///
/// ```
/// use ferrowizard_config::{Duration, Loader};
///
/// ferrowizard_config::section! {
///     /// A section with a timeout.
///     pub struct Checks {
///         /// How long a check may take.
///         #[garde(custom(ferrowizard_config::positive_duration))]
///         timeout: Duration = Duration::seconds(5),
///     }
/// }
///
/// let ok: Checks = Loader::new().load_str("c.yaml", "timeout: 1s\n").unwrap();
/// assert_eq!(ok.timeout, Duration::seconds(1));
/// let report = Loader::new().load_str::<Checks>("c.yaml", "timeout: 0s\n").unwrap_err();
/// assert!(
///     report
///         .to_string()
///         .contains("c.yaml:1:10: Invalid value at: timeout; must be longer than 0"),
///     "{report}"
/// );
/// ```
pub fn positive_duration(d: &crate::Duration, _: &()) -> garde::Result {
    if d.get().is_zero() {
        Err(garde::Error::new("must be longer than 0"))
    } else {
        Ok(())
    }
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
