//! Errors as values, and the DropWizard-shaped report that prints them.

use std::fmt;

use crate::node::Origin;

/// One problem found in a configuration, with where it is.
#[derive(Clone, Debug, PartialEq)]
pub struct ConfigError {
    /// Where the offending text is (a line and column, or a `--set` override).
    pub origin: Origin,
    /// The dotted path of the offending value, e.g. `server.applicationConnectors[0].port`.
    pub path: String,
    /// What is wrong.
    pub kind: ErrorKind,
}

/// What is wrong with a configuration value.
#[derive(Clone, Debug, PartialEq)]
pub enum ErrorKind {
    /// The file could not be read.
    Io(String),
    /// The text is not well-formed YAML or JSON.
    Syntax(String),
    /// The same key appears twice in one mapping.
    DuplicateKey {
        /// The key.
        key: String,
        /// Where it first appears.
        first: Origin,
    },
    /// A key the target type does not know.
    UnknownField {
        /// Candidates ranked by edit distance, at most five.
        suggestions: Vec<String>,
    },
    /// A value of the wrong type or outside the accepted set.
    IncorrectType {
        /// What was written, e.g. `string "VERBOSE"`.
        found: String,
        /// What is accepted.
        expected: String,
        /// Close matches among the accepted names.
        suggestions: Vec<String>,
    },
    /// A required key is absent.
    MissingField,
    /// `${VAR}` names a variable that is not set and has no default.
    UndefinedVariable {
        /// The variable.
        name: String,
        /// The `${VAR:?message}` text, if any.
        message: Option<String>,
    },
    /// A `--set` override that cannot be applied.
    BadOverride(String),
    /// A value that has the right type but breaks a rule.
    Invalid(String),
    /// A key the model leaves out on purpose (see [`Refusal`](crate::Refusal)): why it has
    /// no meaning here, and what to use instead.
    Refused(String),
}

impl ConfigError {
    /// A new error.
    pub fn new(origin: Origin, path: impl Into<String>, kind: ErrorKind) -> Self {
        ConfigError {
            origin,
            path: path.into(),
            kind,
        }
    }

    fn sort_key(&self) -> (u8, u64, u64) {
        match &self.origin {
            Origin::File { line, column } => (0, *line, *column),
            Origin::Override { index, .. } => (1, *index as u64, 0),
            Origin::Synthetic => (2, 0, 0),
        }
    }
}

fn suggestions(f: &mut fmt::Formatter<'_>, list: &[String]) -> fmt::Result {
    if !list.is_empty() {
        write!(f, "\n    Did you mean?:")?;
        for s in list {
            write!(f, "\n      - {s}")?;
        }
    }
    Ok(())
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = if self.path.is_empty() {
            "(the top level)"
        } else {
            &self.path
        };
        match &self.kind {
            ErrorKind::Io(m) => write!(f, "Cannot read the file: {m}"),
            ErrorKind::Syntax(m) => write!(f, "Malformed configuration: {m}"),
            ErrorKind::DuplicateKey { key, first } => {
                write!(
                    f,
                    "Duplicate key at: {path}; {key:?} is already set at {first}"
                )
            }
            ErrorKind::UnknownField { suggestions: s } => {
                write!(f, "Unrecognized field at: {path}")?;
                suggestions(f, s)
            }
            ErrorKind::IncorrectType {
                found,
                expected,
                suggestions: s,
            } => {
                write!(
                    f,
                    "Incorrect type of value at: {path}; is of type: {found}, expected: {expected}"
                )?;
                suggestions(f, s)
            }
            ErrorKind::Refused(why) => write!(f, "Unrecognized field at: {path}; {why}"),
            ErrorKind::MissingField => write!(f, "Missing required field at: {path}"),
            ErrorKind::UndefinedVariable { name, message } => {
                write!(
                    f,
                    "Undefined environment variable at: {path}; ${{{name}}} is not set"
                )?;
                match message {
                    Some(m) if !m.is_empty() => write!(f, ": {m}"),
                    _ => Ok(()),
                }
            }
            ErrorKind::BadOverride(m) => write!(f, "Cannot apply override: {m}"),
            ErrorKind::Invalid(m) if self.path.is_empty() => {
                write!(f, "Invalid configuration: {m}")
            }
            ErrorKind::Invalid(m) => write!(f, "Invalid value at: {path}; {m}"),
        }
    }
}

/// Every error found in one configuration source, reported together.
#[derive(Clone, Debug, PartialEq)]
pub struct Report {
    /// The file name as given (or a label for text that did not come from a file).
    pub file: String,
    /// The errors, sorted by position.
    pub errors: Vec<ConfigError>,
}

impl Report {
    /// A report of the given errors, sorted by where they are.
    pub fn new(source: impl Into<String>, mut errors: Vec<ConfigError>) -> Self {
        errors.sort_by_key(ConfigError::sort_key);
        errors.dedup();
        Report {
            file: source.into(),
            errors,
        }
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.errors.len() == 1 {
            "error"
        } else {
            "errors"
        };
        write!(f, "{} has the following {what}:", self.file)?;
        for e in &self.errors {
            match &e.origin {
                Origin::File { .. } => write!(f, "\n  * {}:{}: {e}", self.file, e.origin)?,
                Origin::Override { .. } => write!(f, "\n  * {}: {e}", e.origin)?,
                Origin::Synthetic => write!(f, "\n  * {e}")?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for Report {}
