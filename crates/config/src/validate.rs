//! Places garde's validation errors in the file.
//!
//! garde names fields as Rust spells them (`min_threads`); the file spells them as serde
//! renamed them (`minThreads`). Rather than teach garde serde's renames, each path component
//! is matched against the keys actually written, ignoring case and underscores, which also
//! finds the line and column. A value not written in the file (a default) is reported at its
//! nearest written ancestor.

use std::collections::HashSet;

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

fn contains_any(node: &Node, ids: &HashSet<u32>) -> bool {
    ids.contains(&node.id)
        || match &node.value {
            Value::Seq(items) => items.iter().any(|n| contains_any(n, ids)),
            Value::Map(entries) => entries
                .iter()
                .any(|(k, v)| contains_any(k, ids) || contains_any(v, ids)),
            _ => false,
        }
}

/// Report lines for a garde report about the value loaded from `root`. Rules about a part
/// of the tree that was left out for a type error are not reported: they judge defaults
/// standing in for what the user wrote, and the type error already names the problem.
pub(crate) fn validation_errors(
    root: &Node,
    report: &garde::Report,
    poisoned: &HashSet<u32>,
) -> Vec<ConfigError> {
    report
        .iter()
        .filter_map(|(path, error)| {
            let mut node = Some(root);
            let mut origin = root.origin.clone();
            let mut shown = String::new();
            for (kind, component) in path.__iter().rev() {
                let component = component.as_str();
                match kind {
                    // garde indexes a newtype enum variant's field as `[0]`; YAML has no
                    // such level (the variant is chosen by `type:`), so it is skipped.
                    garde::error::Kind::Index
                        if matches!(node.map(|n| &n.value), Some(Value::Map(_))) => {}
                    garde::error::Kind::Index => {
                        // The loaded list lacks its poisoned items (reported already): its
                        // i-th item is the file's i-th unpoisoned one.
                        let found = match (node.map(|n| &n.value), component.parse::<usize>()) {
                            (Some(Value::Seq(items)), Ok(i)) => items
                                .iter()
                                .enumerate()
                                .filter(|(_, n)| !poisoned.contains(&n.id))
                                .nth(i),
                            _ => None,
                        };
                        match found {
                            Some((written, _)) => shown.push_str(&format!("[{written}]")),
                            None => shown.push_str(&format!("[{component}]")),
                        }
                        node = found.map(|(_, n)| n);
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
            if node.is_some_and(|n| contains_any(n, poisoned)) {
                return None;
            }
            Some(ConfigError::new(
                origin,
                shown,
                ErrorKind::Invalid(error.message().to_owned()),
            ))
        })
        .collect()
}
