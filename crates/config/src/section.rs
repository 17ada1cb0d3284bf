//! Rules a section's fields share, and how a polymorphic section is written.

/// Implements `garde::Validate` for a type whose rule spans its fields: `$check` is a method
/// `fn(&self) -> Result<_, E>` (`E: Display`), and its error is reported at the value itself,
/// i.e. at the section's own key in the file.
///
/// For a type read with serde's own derive (a `#[derive(Config)]` section says
/// `#[config(check = ...)]` instead) whose rule no single field can state, such as "exactly one
/// of these keys". The type needs no `garde::Validate` derive (and must not have one); the
/// caller needs no direct dependency on garde.
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
/// interval): `#[config(custom(ferrowizard_config::positive_duration))]`. Its message is
/// `must be longer than 0`.
///
/// ```
/// use ferrowizard_config::{Config, Duration, Loader};
///
/// /// A section with a timeout.
/// #[derive(Debug, Config)]
/// pub struct Checks {
///     /// How long a check may take.
///     #[config(default = Duration::seconds(5), custom(ferrowizard_config::positive_duration))]
///     pub timeout: Duration,
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
pub fn positive_duration(d: &crate::values::Duration, _: &()) -> garde::Result {
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

/// A rule over several keys of a section broken (`#[config(check = ...)]`): what is wrong,
/// and the key to report it at (the section itself when none is named).
///
/// ```
/// use ferrowizard_config::{Config, Invalid, Loader};
///
/// /// `window:`.
/// #[derive(Debug, Config)]
/// #[config(check = Window::ordered)]
/// pub struct Window {
///     /// The first hour.
///     pub from: u32,
///     /// The last hour.
///     #[config(default = 23)]
///     pub to: u32,
/// }
///
/// impl Window {
///     fn ordered(&self) -> Result<(), Invalid> {
///         if self.from <= self.to {
///             Ok(())
///         } else {
///             Err(Invalid::at("to", format!("must not be before from ({})", self.from)))
///         }
///     }
/// }
///
/// let report = Loader::new().load_str::<Window>("w.yaml", "from: 9\nto: 5\n").unwrap_err();
/// assert_eq!(
///     report.to_string().trim_end(),
///     "w.yaml has the following error:\n  * w.yaml:2:5: Invalid value at: to; must not be before from (9)"
/// );
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    key: Option<&'static str>,
    message: String,
}

impl Invalid {
    /// A broken rule, reported at the section itself.
    pub fn new(message: impl Into<String>) -> Self {
        Invalid {
            key: None,
            message: message.into(),
        }
    }

    /// A broken rule, reported at `key` (a field's name, as Rust or the file spells it).
    pub fn at(key: &'static str, message: impl Into<String>) -> Self {
        Invalid {
            key: Some(key),
            message: message.into(),
        }
    }

    /// Adds this to `report`, at `parent` or at its `key` under it.
    #[doc(hidden)]
    pub fn report(self, parent: &mut dyn FnMut() -> garde::Path, report: &mut garde::Report) {
        let path = match self.key {
            Some(key) => parent().join(key),
            None => parent(),
        };
        report.append(path, garde::Error::new(self.message));
    }
}
