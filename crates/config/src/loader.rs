//! The loader: file → tree → substitution → overrides → transforms → value → validation.

use std::path::Path;

use serde::de::DeserializeOwned;

use crate::de::deserialize_all;
use crate::env::{Lookup, substitute};
use crate::error::{ConfigError, ErrorKind, Report};
use crate::node::{Node, Origin, parse_yaml};
use crate::refuse::Refusal;
use crate::validate::validation_errors;

/// A hook that rewrites the tree before it is deserialized, e.g. to migrate an old layout.
/// It reports what it cannot migrate into the error list.
pub type Transform<'a> = dyn Fn(&mut Node, &mut Vec<ConfigError>) + 'a;

/// Loads configuration values of any serde type; see the crate documentation.
pub struct Loader<'a> {
    lookup: Box<Lookup<'a>>,
    substitute: bool,
    overrides: Vec<String>,
    transforms: Vec<Box<Transform<'a>>>,
    refused: Vec<Refusal>,
}

impl Default for Loader<'_> {
    fn default() -> Self {
        Self::new()
    }
}

impl<'a> Loader<'a> {
    /// A loader that substitutes from the process environment.
    pub fn new() -> Self {
        Loader {
            lookup: Box::new(|name| std::env::var(name).ok()),
            substitute: true,
            overrides: Vec::new(),
            transforms: Vec::new(),
            refused: Vec::new(),
        }
    }

    /// Substitutes from `lookup` instead of the process environment.
    pub fn lookup(mut self, lookup: impl Fn(&str) -> Option<String> + 'a) -> Self {
        self.lookup = Box::new(lookup);
        self
    }

    /// Turns `${VAR}` substitution on (the default) or off.
    pub fn substitution(mut self, on: bool) -> Self {
        self.substitute = on;
        self
    }

    /// Adds `path=value` overrides, applied in order after substitution.
    pub fn overrides<S: Into<String>>(mut self, overrides: impl IntoIterator<Item = S>) -> Self {
        self.overrides.extend(overrides.into_iter().map(Into::into));
        self
    }

    /// Adds a tree transform, run after the overrides.
    pub fn transform(mut self, f: impl Fn(&mut Node, &mut Vec<ConfigError>) + 'a) -> Self {
        self.transforms.push(Box::new(f));
        self
    }

    /// Refuses the keys `refusals` name, each with its reason, after the transforms.
    pub fn refuse(mut self, refusals: &[Refusal]) -> Self {
        self.refused.extend_from_slice(refusals);
        self
    }

    /// Loads a file; a name ending in `.json` is read as JSON, anything else as YAML.
    pub fn load_file<T>(&self, path: impl AsRef<Path>) -> Result<T, Report>
    where
        T: DeserializeOwned + garde::Validate<Context = ()>,
    {
        let path = path.as_ref();
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|e| {
            Report::new(
                &name,
                vec![ConfigError::new(
                    Origin::Synthetic,
                    "",
                    ErrorKind::Io(e.to_string()),
                )],
            )
        })?;
        let json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        self.load(&name, &text, json)
    }

    /// Loads YAML text; `source` names it in the report.
    pub fn load_str<T>(&self, source: &str, text: &str) -> Result<T, Report>
    where
        T: DeserializeOwned + garde::Validate<Context = ()>,
    {
        self.load(source, text, false)
    }

    /// The tree after substitution, overrides and transforms, before deserialization.
    pub fn tree(&self, source: &str, text: &str, json: bool) -> Result<Node, Report> {
        match self.build_tree(source, text, json)? {
            (root, errors) if errors.is_empty() => Ok(root),
            (_, errors) => Err(Report::new(source, errors)),
        }
    }

    /// The tree, and the errors found while building it that do not stop the load
    /// (repeated keys, undefined variables, bad overrides): the user gets those together
    /// with the type errors in one report. Only unreadable text stops here.
    fn build_tree(
        &self,
        source: &str,
        text: &str,
        json: bool,
    ) -> Result<(Node, Vec<ConfigError>), Report> {
        if json && let Err(e) = serde_json::from_str::<serde_json::Value>(text) {
            let origin = Origin::File {
                line: e.line() as u64,
                column: e.column() as u64,
            };
            let message = e.to_string();
            let message = message
                .split(" at line ")
                .next()
                .unwrap_or(&message)
                .to_owned();
            let error = ConfigError::new(origin, "", ErrorKind::Syntax(message));
            return Err(Report::new(source, vec![error]));
        }
        let parsed = parse_yaml(text).map_err(|e| Report::new(source, vec![syntax_error(&e)]))?;
        let mut root = parsed.root;
        let mut errors: Vec<ConfigError> = parsed
            .duplicates
            .into_iter()
            .map(|dup| {
                ConfigError::new(
                    dup.again,
                    dup.key.clone(),
                    ErrorKind::DuplicateKey {
                        key: dup.key,
                        first: dup.first,
                    },
                )
            })
            .collect();
        if self.substitute {
            substitute(&mut root, &*self.lookup, &mut errors);
        }
        for (i, text) in self.overrides.iter().enumerate() {
            if let Err(e) = crate::overrides::apply(&mut root, i + 1, text) {
                errors.push(*e);
            }
        }
        for transform in &self.transforms {
            transform(&mut root, &mut errors);
        }
        crate::refuse::refuse(&mut root, &self.refused, &mut errors);
        root.number();
        Ok((root, errors))
    }

    fn load<T>(&self, source: &str, text: &str, json: bool) -> Result<T, Report>
    where
        T: DeserializeOwned + garde::Validate<Context = ()>,
    {
        let (root, mut errors) = self.build_tree(source, text, json)?;
        let (value, more, poisoned) = deserialize_all::<T>(&root);
        errors.extend(more);
        if let Some(Err(report)) = value.as_ref().map(garde::Validate::validate) {
            errors.extend(validation_errors(&root, &report, &poisoned));
        }
        match value {
            Some(value) if errors.is_empty() => Ok(value),
            _ => Err(Report::new(source, errors)),
        }
    }
}

fn syntax_error(e: &serde_saphyr::Error) -> ConfigError {
    let origin = match e.location() {
        Some(loc) if loc.line() > 0 => Origin::File {
            line: loc.line(),
            column: loc.column(),
        },
        _ => Origin::Synthetic,
    };
    let message = e.to_string();
    // serde-saphyr appends the position; the report prints it in front already.
    let message = match message.find(" at line ") {
        Some(i) => message[..i].to_owned(),
        None => message,
    };
    let message = message.trim_start_matches("error: ").to_owned();
    ConfigError::new(origin, "", ErrorKind::Syntax(message))
}
