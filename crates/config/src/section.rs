//! Helpers for declaring configuration sections the DropWizard way: one type per YAML
//! section, each field with its default written beside it.

/// Declares a configuration section: a struct whose YAML keys are the camelCase field
/// names, whose absent keys take the default written beside each field, and which rejects
/// unknown keys. It derives `Serialize` (for `check --dump`) and `Deserialize`, and
/// implements `garde::Validate` (fields are unvalidated unless they carry a `#[garde(...)]`
/// rule). The crate using it needs neither `serde` nor `garde` as a dependency.
///
/// The `Validate` implementation is written by this macro, not by garde's derive (which
/// names `::garde` and so needs the dependency), with garde's own rules and the same error
/// paths and messages. The field rules it knows: `dive`, `skip`, `custom(f)`, `ascii`,
/// `length(min = .., max = ..)`, `range(min = .., max = ..)` and `inner(...)` with any of
/// these but `dive` and `skip` inside; another rule is a compile error.
///
/// An optional `with { ... }` list adds fields shared by several sections (e.g. the fields
/// every appender has) without serde's `flatten`, which would lose error positions.
///
/// The derives reach serde through `::ferrowizard_config::__private::serde`; a crate that
/// re-exports this macro passes its own path first, as a string: `section! { @serde
/// "::my_crate::__private::serde" pub struct ... }` (or `@emit serde = "..." [...]`).
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
///
/// A rule it does not know is refused when compiling:
///
/// ```compile_fail
/// ferrowizard_config::section! {
///     /// A section with a rule `section!` does not implement.
///     pub struct Contact {
///         /// An address.
///         #[garde(email)]
///         email: String = String::new(),
///     }
/// }
/// ```
#[macro_export]
macro_rules! section {
    (
        @serde $serde:tt
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$($fmeta:tt)*])* $field:ident : $ty:ty = $default:expr ),* $(,)?
        }
        $( with $($common:tt)+ )?
    ) => {
        $crate::section!(@emit serde = $serde [$(#[$meta])*] $name [$( [$(#[$($fmeta)*])* $field : $ty = $default] )*] $( $($common)+ )?);
    };
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$($fmeta:tt)*])* $field:ident : $ty:ty = $default:expr ),* $(,)?
        }
        $( with $($common:tt)+ )?
    ) => {
        $crate::section!(@emit [$(#[$meta])*] $name [$( [$(#[$($fmeta)*])* $field : $ty = $default] )*] $( $($common)+ )?);
    };
    // `with`: the list's macro declares the fields and calls `@emit` itself.
    (@emit serde = $serde:tt [$($meta:tt)*] $name:ident [$($fields:tt)*] $($common:tt)+) => {
        $($common)+! { @fields $crate::section; [$($meta)*] $name [$($fields)*] }
    };
    (@emit [$($meta:tt)*] $name:ident [$($fields:tt)*] $($common:tt)+) => {
        $($common)+! { @fields $crate::section; [$($meta)*] $name [$($fields)*] }
    };
    (@emit [$($meta:tt)*] $name:ident [$($fields:tt)*]) => {
        $crate::section!(@emit serde = "::ferrowizard_config::__private::serde" [$($meta)*] $name [$($fields)*]);
    };
    (@emit serde = $serde:tt [$($meta:tt)*] $name:ident
        [$( [$(#[$($fmeta:tt)*])* $field:ident : $ty:ty = $default:expr] )*]
    ) => {
        $crate::__section_fields!(
            [$serde [$($meta)*] $name] [] []
            $( [$(#[$($fmeta)*])*] [$field : $ty = $default] )*
        );
    };
}

/// `section!`'s inner steps: sorts each field's attributes into those the struct keeps and
/// the `#[garde(...)]` rules, then writes the struct, its `Default` and its `Validate`.
#[doc(hidden)]
#[macro_export]
macro_rules! __section_fields {
    // The next field: start on its attributes.
    ($ctx:tt [$($out:tt)*] [$($checks:tt)*] [$($attrs:tt)*] [$($field:tt)*] $($rest:tt)*) => {
        $crate::__section_fields!(@attrs $ctx [$($out)*] [$($checks)*] [] [] [$($attrs)*] [$($field)*] $($rest)*);
    };
    (@attrs $ctx:tt [$($out:tt)*] [$($checks:tt)*] [$($keep:tt)*] [$($rules:tt)*]
        [#[garde($($r:tt)*)] $($attrs:tt)*] $($rest:tt)*
    ) => {
        $crate::__section_fields!(@attrs $ctx [$($out)*] [$($checks)*] [$($keep)*] [$($rules)* $($r)* ,] [$($attrs)*] $($rest)*);
    };
    (@attrs $ctx:tt [$($out:tt)*] [$($checks:tt)*] [$($keep:tt)*] [$($rules:tt)*]
        [#[$($a:tt)*] $($attrs:tt)*] $($rest:tt)*
    ) => {
        $crate::__section_fields!(@attrs $ctx [$($out)*] [$($checks)*] [$($keep)* #[$($a)*]] [$($rules)*] [$($attrs)*] $($rest)*);
    };
    (@attrs $ctx:tt [$($out:tt)*] [$($checks:tt)*] [$($keep:tt)*] [$($rules:tt)*]
        [] [$field:ident : $ty:ty = $default:expr] $($rest:tt)*
    ) => {
        $crate::__section_fields!($ctx
            [$($out)* [[$($keep)*] $field : $ty = $default]]
            [$($checks)* [$field [$($rules)*]]]
            $($rest)*
        );
    };
    // Every field done.
    ([$serde:tt [$($meta:tt)*] $name:ident]
        [$( [[$($keep:tt)*] $field:ident : $ty:ty = $default:expr] )*]
        [$( [$cfield:ident [$($rules:tt)*]] )*]
    ) => {
        $($meta)*
        #[derive(Clone, Debug, PartialEq, $crate::__private::serde::Serialize, $crate::__private::serde::Deserialize)]
        #[serde(crate = $serde, rename_all = "camelCase", deny_unknown_fields, default)]
        pub struct $name {
            $( $($keep)* pub $field: $ty, )*
        }

        impl Default for $name {
            fn default() -> Self {
                Self { $( $field: $default, )* }
            }
        }

        impl $crate::garde::Validate for $name {
            type Context = ();

            #[allow(clippy::needless_borrow, unused_mut, unused_variables)]
            fn validate_into(
                &self,
                __garde_ctx: &Self::Context,
                mut __garde_path: &mut dyn FnMut() -> $crate::garde::Path,
                __garde_report: &mut $crate::garde::Report,
            ) {
                let __garde_user_ctx = &__garde_ctx;
                // garde's derive goes through the fields in the order of their names.
                let __garde_fields: &mut [&str] = &mut [$(::core::stringify!($cfield)),*];
                __garde_fields.sort_unstable();
                for __garde_field in __garde_fields {
                    match *__garde_field {
                        $(
                            ::core::stringify!($cfield) => {
                                $crate::__section_validate!(
                                    @sort (field ::core::stringify!($cfield), &self.$cfield)
                                    [__garde_path __garde_report __garde_user_ctx __garde_binding]
                                    [] [] [] [$($rules)*]
                                );
                            }
                        )*
                        _ => {}
                    }
                }
            }
        }
    };
}

/// `section!`'s `Validate` for one field: the statements garde's derive writes for the
/// field's `#[garde(...)]` rules, in its order (`dive` or `inner` first, then the `custom`
/// rules, then the others), through garde's public rules.
#[doc(hidden)]
#[macro_export]
macro_rules! __section_validate {
    // Sorting the rules into [dive or inner] [custom functions] [other rules].
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [, $($rest:tt)*]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)*] [$($r)*] [$($rest)*]);
    };
    (@sort $mode:tt $ids:tt [] [] [] [skip $(, $($rest:tt)*)?]) => {};
    (@sort $mode:tt $ids:tt [] [$($c:tt)*] [$($r:tt)*] [dive $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [dive] [$($c)*] [$($r)*] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [] [$($c:tt)*] [$($r:tt)*] [inner($($inner:tt)*) $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [inner [$($inner)*]] [$($c)*] [$($r)*] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [custom($f:expr) $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)* [$f]] [$($r)*] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [ascii $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)*] [$($r)* [(ascii::apply) ()]] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [length(min = $min:expr, max = $max:expr $(,)?) $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)*] [$($r)* [(length::simple::apply) ($min, $max)]] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [length(min = $min:expr $(,)?) $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)*] [$($r)* [(length::simple::apply) ($min, usize::MAX)]] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [length(max = $max:expr $(,)?) $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)*] [$($r)* [(length::simple::apply) (0usize, $max)]] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [length(equal = $n:expr $(,)?) $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)*] [$($r)* [(length::simple::apply) ($n, $n)]] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [range(min = $min:expr, max = $max:expr $(,)?) $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)*] [$($r)* [(range::apply) (Some($min), Some($max))]] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [range(min = $min:expr $(,)?) $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)*] [$($r)* [(range::apply) (Some($min), None)]] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [range(max = $max:expr $(,)?) $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)*] [$($r)* [(range::apply) (None, Some($max))]] [$($($rest)*)?]);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [range(equal = $n:expr $(,)?) $(, $($rest:tt)*)?]) => {
        $crate::__section_validate!(@sort $mode $ids [$($i)*] [$($c)*] [$($r)* [(range::apply) (Some($n), Some($n))]] [$($($rest)*)?]);
    };
    // Sorted; a field without rules is not validated.
    (@sort $mode:tt $ids:tt [] [] [] []) => {};
    (@sort (field $key:expr, $value:expr) [$p:ident $r:ident $c:ident $b:ident] [$($i:tt)*] [$($cs:tt)*] [$($rs:tt)*] []) => {{
        let mut $p = $crate::garde::util::nested_path!($p, $key);
        let $b = $value;
        $crate::__section_validate!(@inner [$p $r $c $b] $($i)*);
        $crate::__section_validate!(@outer [$p $r $c $b] [$($cs)*] [$($rs)*]);
    }};
    (@sort set $ids:tt [$($i:tt)*] [$($cs:tt)*] [$($rs:tt)*] []) => {
        $crate::__section_validate!(@outer $ids [$($cs)*] [$($rs)*]);
        $crate::__section_validate!(@inner $ids $($i)*);
    };
    (@sort $mode:tt $ids:tt [$($i:tt)*] [$($c:tt)*] [$($r:tt)*] [$($rule:tt)*]) => {
        ::core::compile_error!(::core::concat!(
            "section!: unsupported #[garde(...)] rule (or `dive`/`inner` twice, or `skip` with rules): ",
            ::core::stringify!($($rule)*)
        ));
    };

    (@inner $ids:tt) => {};
    (@inner [$p:ident $r:ident $c:ident $b:ident] dive) => {
        $crate::garde::Validate::validate_into(&*$b, $c, &mut $p, $r);
    };
    (@inner [$p:ident $r:ident $c:ident $b:ident] inner [$($rules:tt)*]) => {
        $crate::garde::rules::inner::apply(&*$b, |$b, __garde_inner_key| {
            let mut $p = $crate::garde::util::nested_path!($p, __garde_inner_key);
            $crate::__section_validate!(@sort set [$p $r $c $b] [] [] [] [$($rules)*]);
        });
    };

    (@outer $ids:tt [] []) => {};
    (@outer [$p:ident $r:ident $c:ident $b:ident] [$([$f:expr])*] [$([($($rule:tt)*) $args:tt])*]) => {{
        $(
            if let Err(__garde_error) = ($f)(&*$b, &$c) {
                $r.append($p(), __garde_error);
            }
        )*
        $(
            if let Err(__garde_error) = ($crate::garde::rules::$($rule)*)(&*$b, $args) {
                $r.append($p(), __garde_error);
            }
        )*
    }};
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
