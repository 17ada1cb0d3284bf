//! Places garde's validation errors in the file.
//!
//! garde names fields as Rust spells them (`min_threads`); the file spells them as serde
//! renamed them (`minThreads`). Rather than teach garde serde's renames, each path component
//! is matched against the keys actually written, ignoring case and underscores, which also
//! finds the line and column. A value not written in the file (a default) is reported at its
//! nearest written ancestor.

use crate::error::{ConfigError, ErrorKind};
use crate::node::{Node, Origin, Value};

fn normalize(s: &str) -> String {
    s.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

fn camel(s: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in s.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// Report lines for a garde report about the value loaded from `root`.
pub(crate) fn validation_errors(root: &Node, report: &garde::Report) -> Vec<ConfigError> {
    report
        .iter()
        .map(|(path, error)| {
            let mut node = Some(root);
            let mut origin = root.origin.clone();
            let mut shown = String::new();
            for (kind, component) in path.__iter().rev() {
                let component = component.as_str();
                match kind {
                    garde::error::Kind::Index => {
                        shown.push_str(&format!("[{component}]"));
                        node = match (node.map(|n| &n.value), component.parse::<usize>()) {
                            (Some(Value::Seq(items)), Ok(i)) => items.get(i),
                            _ => None,
                        };
                    }
                    garde::error::Kind::Key => {
                        let found = match node.map(|n| &n.value) {
                            Some(Value::Map(entries)) => entries
                                .iter()
                                .find(|(k, _)| normalize(&k.key_text()) == normalize(component)),
                            _ => None,
                        };
                        let name = found
                            .map(|(k, _)| k.key_text())
                            .unwrap_or_else(|| camel(component));
                        if !shown.is_empty() {
                            shown.push('.');
                        }
                        shown.push_str(&name);
                        node = found.map(|(_, v)| v);
                    }
                    garde::error::Kind::None => {}
                }
                if let Some(n) = node {
                    if let Some(written) = &n.written_at {
                        shown = written.clone();
                    }
                    if !matches!(n.origin, Origin::Synthetic) {
                        origin = n.origin.clone();
                    }
                }
            }
            ConfigError::new(
                origin,
                shown,
                ErrorKind::Invalid(error.message().to_owned()),
            )
        })
        .collect()
}
