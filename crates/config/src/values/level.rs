use std::fmt;
use std::str::FromStr;

use serde::de::{self, Deserializer, Visitor};

/// A logging level as DropWizard spells it. Unlike DropWizard, an unknown name is an error
/// rather than a silent INFO.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    /// Everything, including TRACE.
    All,
    /// TRACE and above.
    Trace,
    /// DEBUG and above.
    Debug,
    /// INFO and above.
    Info,
    /// WARN and above.
    Warn,
    /// ERROR only.
    Error,
    /// Nothing.
    Off,
}

/// The accepted names, in the order they are listed in errors.
pub const LEVEL_NAMES: &[&str] = &["TRACE", "DEBUG", "INFO", "WARN", "ERROR", "OFF", "ALL"];

impl FromStr for Level {
    type Err = String;

    fn from_str(s: &str) -> Result<Level, String> {
        Ok(match s.trim().to_ascii_uppercase().as_str() {
            "ALL" => Level::All,
            "TRACE" => Level::Trace,
            "DEBUG" => Level::Debug,
            "INFO" => Level::Info,
            "WARN" => Level::Warn,
            "ERROR" => Level::Error,
            // YAML 1.1 reads a bare `off` as false; either way it means OFF.
            "OFF" | "FALSE" => Level::Off,
            _ => return Err(format!("unknown level {s:?}")),
        })
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Level::All => "ALL",
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
            Level::Off => "OFF",
        })
    }
}

impl<'de> serde::Deserialize<'de> for Level {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Level;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("one of TRACE, DEBUG, INFO, WARN, ERROR, OFF, ALL")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Level, E> {
                if b {
                    Err(E::invalid_value(de::Unexpected::Bool(b), &self))
                } else {
                    Ok(Level::Off)
                }
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Level, E> {
                s.parse().map_err(|_| E::unknown_variant(s, LEVEL_NAMES))
            }
        }
        d.deserialize_any(V)
    }
}

impl serde::Serialize for Level {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::Level;

    #[test]
    fn names_are_case_insensitive_and_off_is_off() {
        assert_eq!("debug".parse(), Ok(Level::Debug));
        assert_eq!("Warn".parse(), Ok(Level::Warn));
        assert_eq!("off".parse(), Ok(Level::Off));
        assert!("VERBOSE".parse::<Level>().is_err());
        assert!("WARNING".parse::<Level>().is_err());
        assert!(Level::Trace < Level::Info && Level::Error < Level::Off);
    }
}
