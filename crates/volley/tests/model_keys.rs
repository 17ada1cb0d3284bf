//! Dead keys are impossible in a scenario: every leaf key of volley's model has a behaviour
//! test and a row of the scenario reference (docs/src/volley/scenario-reference.md).
//!
//! The keys are the leaves of `tests/keys/every-key.yaml` as loaded and written back by the
//! model (every default filled in), which holds every form of every step; the file sets
//! every key it writes to a value other than its default (each key taken out in turn must
//! change the loaded scenario). `tests/keys/behaviour.tsv` names each key's test; the scenario reference's
//! `### volley scenario` reference table documents each key once.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde_json::Value;
use volley::scenario::Simulation;

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/keys")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn workspace() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn load(text: &str) -> Result<Simulation, String> {
    ferrowizard_config::Loader::new()
        .substitution(false)
        .load_str::<Simulation>("every-key.yaml", text)
        .map_err(|r| r.to_string())
}

fn written(simulation: &Simulation) -> Value {
    serde_json::to_value(simulation).unwrap()
}

/// Mappings keyed by the user (header names), and the step lists nested in a step (the
/// same keys as the scenario's steps): one leaf.
fn user_keyed(path: &str) -> bool {
    [
        "headers",
        "form",
        "repeat.steps",
        "if.then",
        "if.else",
        "randomSwitch[].steps",
        "during.steps",
        "group.steps",
        "tryMax.steps",
        "asLongAs.steps",
        "foreach.steps",
        "exitBlockOnFail.steps",
    ]
    .iter()
    .any(|k| path.ends_with(k))
}

#[derive(Clone, Debug)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every leaf of `value` with its concrete path, and whether it holds a value (not null, not
/// an empty container).
fn leaves(value: &Value, path: &mut Vec<Step>, out: &mut Vec<(Vec<Step>, bool)>) {
    match value {
        Value::Object(map) if !map.is_empty() && !user_keyed(&spell(path)) => {
            for (k, v) in map {
                path.push(Step::Key(k.clone()));
                leaves(v, path, out);
                path.pop();
            }
        }
        Value::Array(items)
            if !items.is_empty()
                && items.iter().all(Value::is_object)
                && !user_keyed(&spell(path)) =>
        {
            for (i, v) in items.iter().enumerate() {
                path.push(Step::Index(i));
                leaves(v, path, out);
                path.pop();
            }
        }
        Value::Null => out.push((path.clone(), false)),
        Value::Array(a) if a.is_empty() => out.push((path.clone(), false)),
        Value::Object(m) if m.is_empty() => out.push((path.clone(), false)),
        _ => out.push((path.clone(), true)),
    }
}

/// A path as the table spells it: indexes as `[]`.
fn spell(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Step::Index(_) => out.push_str("[]"),
        }
    }
    out
}

/// The model's keys: leaves holding a value, and empty ones that stand for no key below them.
fn model_keys() -> BTreeSet<String> {
    let mut all = Vec::new();
    leaves(
        &written(&load(&fixture("every-key.yaml")).unwrap()),
        &mut Vec::new(),
        &mut all,
    );
    let spelled: Vec<(String, bool)> = all.iter().map(|(p, v)| (spell(p), *v)).collect();
    spelled
        .iter()
        .filter(|(k, held)| {
            *held
                || !spelled.iter().any(|(o, _)| {
                    o.starts_with(&format!("{k}.")) || o.starts_with(&format!("{k}[]"))
                })
        })
        .map(|(k, _)| k.clone())
        .collect()
}

#[test]
fn every_key_of_the_scenario_names_its_behaviour_test() {
    let model = model_keys();
    let mut table = BTreeMap::new();
    for line in fixture("behaviour.tsv").lines() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, test) = line.split_once('\t').expect("KEY<TAB>FILE::FN");
        assert!(
            table.insert(key.to_owned(), test.to_owned()).is_none(),
            "{key} twice"
        );
    }
    let keys: BTreeSet<String> = table.keys().cloned().collect();
    let missing: Vec<&String> = model.difference(&keys).collect();
    let stale: Vec<&String> = keys.difference(&model).collect();
    assert!(
        missing.is_empty() && stale.is_empty(),
        "tests/keys/behaviour.tsv: keys without a row {missing:#?}, rows without a key {stale:#?}"
    );
    for (key, test) in &table {
        let (file, name) = test.split_once("::").expect("FILE::FN");
        let source = std::fs::read_to_string(workspace().join(file))
            .unwrap_or_else(|e| panic!("{key}: {file}: {e}"));
        assert!(
            source.contains(&format!("fn {name}(")),
            "{key}: {file} has no fn {name}"
        );
    }
}

fn remove(value: &mut Value, path: &[Step]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = value;
    for step in parents {
        node = match step {
            Step::Key(k) => &mut node[k.as_str()],
            Step::Index(i) => &mut node[*i],
        };
    }
    match (node, last) {
        (Value::Object(map), Step::Key(k)) => {
            map.remove(k);
        }
        (Value::Array(items), Step::Index(i)) => {
            items.remove(*i);
        }
        _ => unreachable!("a path taken from this value"),
    }
}

#[test]
fn the_every_key_file_sets_every_key_it_writes_to_a_value_other_than_its_default() {
    let text = fixture("every-key.yaml");
    let full = written(&load(&text).unwrap());
    let source: Value = serde_saphyr::from_str(&text).unwrap();
    let mut all = Vec::new();
    leaves(&source, &mut Vec::new(), &mut all);
    for (leaf, _) in all {
        let mut without = source.clone();
        remove(&mut without, &leaf);
        if let Ok(s) = load(&serde_json::to_string(&without).unwrap()) {
            assert!(
                written(&s) != full,
                "{} ({leaf:?}) is written with its default value",
                spell(&leaf)
            );
        }
    }
}

#[test]
fn the_readme_documents_every_scenario_key_once() {
    let text =
        std::fs::read_to_string(workspace().join("docs/src/volley/scenario-reference.md")).unwrap();
    let (_, table) = text
        .split_once("\n### volley scenario\n")
        .expect("the scenario reference has a `### volley scenario` table");
    let table = table.split("\n#").next().unwrap_or_default();
    let rows: Vec<String> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .map(|r| r.split('`').next().unwrap_or_default().to_owned())
        .collect();
    let set: BTreeSet<String> = rows.iter().cloned().collect();
    assert_eq!(set.len(), rows.len(), "a key documented twice");
    let model = model_keys();
    let missing: Vec<&String> = model.difference(&set).collect();
    let extra: Vec<&String> = set.difference(&model).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/src/volley/scenario-reference.md: missing {missing:#?}, not in the model {extra:#?}"
    );
}
