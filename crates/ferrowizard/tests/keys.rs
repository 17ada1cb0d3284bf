//! Dead keys are impossible: every leaf key of the configuration model has a behaviour test.
//!
//! The model's keys are derived from the model, not listed by hand: they are the leaves of
//! `check --dump` (every default filled in) of the `tests/keys/every-key*.yaml` files, which
//! between them hold every variant of every `type` (checked against the loader's own list of
//! variants). Each of those files sets every key it writes to a value other than the default
//! (checked by taking each key out and loading again: the configuration must change).
//!
//! `tests/keys/behaviour.tsv` names, for each key, the test that shows it changing what the
//! server, logging or metrics do. A key added to the model without a row fails here; so does
//! a row whose test does not exist, or a row for a key the model no longer has. Rows marked
//! `PENDING` are keys still waiting for their test: their number may only go down.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use ferrowizard::config::{FrameworkConfiguration, dump, load_str};
use serde_json::Value;

/// The keys still waiting for a behaviour test (rows marked `PENDING`): lower it as they get
/// one; never raise it.
const MAX_PENDING: usize = 0;

const FILES: [&str; 3] = [
    "every-key.yaml",
    "every-key-simple.yaml",
    "every-key-external.yaml",
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn fixture(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/keys")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Mappings whose keys are the user's (field names, logger names): one leaf, or `*`.
fn user_keyed(path: &str) -> bool {
    path.ends_with("additionalFields")
        || path.ends_with("customFieldNames")
        || path.ends_with("resourceAttributes")
        || path == "opentelemetry.headers"
}

/// One step of a concrete path: a mapping key or a sequence index.
#[derive(Clone, Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Every leaf of `value` with its concrete path: scalars, sequences of scalars (one leaf),
/// empty containers, and mappings keyed by the user.
fn concrete_leaves(value: &Value, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    let spelled = spell(path);
    match value {
        Value::Object(map) if !map.is_empty() && !user_keyed(&spelled) => {
            for (k, v) in map {
                path.push(Step::Key(k.clone()));
                concrete_leaves(v, path, out);
                path.pop();
            }
        }
        Value::Array(items) if !items.is_empty() && items.iter().all(Value::is_object) => {
            for (i, v) in items.iter().enumerate() {
                path.push(Step::Index(i));
                concrete_leaves(v, path, out);
                path.pop();
            }
        }
        _ => out.push(path.clone()),
    }
}

/// A concrete path as the table spells keys: indexes as `[]`, logger names as `*`, and a
/// logger's appenders as the root's (one code path builds both).
fn spell(path: &[Step]) -> String {
    let mut out = String::new();
    let mut after_loggers = false;
    for step in path {
        match step {
            Step::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(if after_loggers { "*" } else { k });
                after_loggers = out == "logging.loggers";
            }
            Step::Index(_) => out.push_str("[]"),
        }
    }
    out.replace("logging.loggers.*.appenders[]", "logging.appenders[]")
}

/// The keys in `value` (a dump), spelled as the table spells them.
fn spelled_leaves(value: &Value) -> BTreeSet<String> {
    let mut leaves = Vec::new();
    concrete_leaves(value, &mut Vec::new(), &mut leaves);
    leaves.iter().map(|p| spell(p)).collect()
}

/// `all` without the keys that only stand for keys under them (`layout: null` beside
/// `layout.type`, an empty `loggers` beside a logger's `level`).
fn without_parents(all: BTreeSet<String>) -> BTreeSet<String> {
    all.iter()
        .filter(|k| {
            !all.iter()
                .any(|o| o.starts_with(&format!("{k}.")) || o.starts_with(&format!("{k}[]")))
        })
        .cloned()
        .collect()
}

fn keys(value: &Value) -> BTreeSet<String> {
    without_parents(spelled_leaves(value))
}

fn load(name: &str, text: &str) -> Result<FrameworkConfiguration, String> {
    load_str::<FrameworkConfiguration>(name, text, &[]).map_err(|r| r.to_string())
}

fn dumped(config: &FrameworkConfiguration) -> Value {
    let yaml = dump(config).unwrap();
    serde_saphyr::from_str(&yaml).unwrap()
}

fn remove(value: &mut Value, path: &[Step]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut node = value;
    for step in parents {
        node = match (node, step) {
            (Value::Object(map), Step::Key(k)) => map.get_mut(k).unwrap(),
            (Value::Array(items), Step::Index(i)) => &mut items[*i],
            _ => unreachable!("a path taken from this value"),
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

/// The model's keys, from the dumps of the every-key files.
fn model_keys() -> BTreeSet<String> {
    without_parents(
        FILES
            .iter()
            .flat_map(|f| spelled_leaves(&dumped(&load(f, &fixture(f)).unwrap())))
            .collect(),
    )
}

/// The behaviour table: key → the test (`FILE::FN`), or `None` while pending.
fn table() -> BTreeMap<String, Option<String>> {
    let text = fixture("behaviour.tsv");
    let mut rows = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        let mut cols = line.split('\t');
        let (Some(key), Some(test)) = (cols.next(), cols.next()) else {
            panic!(
                "behaviour.tsv:{}: KEY<TAB>FILE::FN or KEY<TAB>PENDING<TAB>why",
                n + 1
            );
        };
        let test = (test != "PENDING").then(|| test.to_owned());
        assert!(
            rows.insert(key.to_owned(), test).is_none(),
            "behaviour.tsv:{}: {key} twice",
            n + 1
        );
    }
    rows
}

#[test]
fn every_key_of_the_model_names_its_behaviour_test() {
    let model = model_keys();
    let table = table();
    let missing: Vec<&String> = model.iter().filter(|k| !table.contains_key(*k)).collect();
    let stale: Vec<&String> = table.keys().filter(|k| !model.contains(*k)).collect();
    assert!(
        missing.is_empty(),
        "keys without a row in tests/keys/behaviour.tsv (name the test that shows each \
         changing what the program does): {missing:#?}"
    );
    assert!(
        stale.is_empty(),
        "rows for keys the model does not have: {stale:#?}"
    );
    let mut pending: usize = 0;
    for (key, test) in &table {
        let Some(test) = test else {
            pending += 1;
            continue;
        };
        let (file, name) = test
            .split_once("::")
            .unwrap_or_else(|| panic!("{key}: {test} is not FILE::FN"));
        let source = std::fs::read_to_string(workspace().join(file))
            .unwrap_or_else(|e| panic!("{key}: {file}: {e}"));
        assert!(
            source.contains(&format!("fn {name}(")),
            "{key}: {file} has no fn {name}"
        );
    }
    // Spelled as a subtraction, so that it reads the same when MAX_PENDING is 0.
    assert!(
        pending.saturating_sub(MAX_PENDING) == 0,
        "{pending} keys are PENDING, more than MAX_PENDING ({MAX_PENDING}): a new key needs its \
         behaviour test, not a PENDING row"
    );
}

#[test]
fn the_every_key_files_set_every_key_they_write_to_a_value_other_than_its_default() {
    for file in FILES {
        let text = fixture(file);
        let full = dumped(&load(file, &text).unwrap());
        let written: Value = serde_saphyr::from_str(&text).unwrap();
        let mut leaves = Vec::new();
        concrete_leaves(&written, &mut Vec::new(), &mut leaves);
        for leaf in leaves {
            let mut without = written.clone();
            remove(&mut without, &leaf);
            // JSON is YAML: the same loader reads it.
            let text = serde_json::to_string(&without).unwrap();
            if let Ok(config) = load(file, &text) {
                assert!(
                    dumped(&config) != full,
                    "{file}: {} ({leaf:?}) is written with its default value",
                    spell(&leaf)
                );
            }
        }
    }
}

/// The variants the loader lists for the `type` at `probe`'s `zzz`.
fn variants(probe: &str) -> Vec<String> {
    let report = load("probe.yaml", probe).unwrap_err();
    let (_, list) = report
        .split_once("expected: one of ")
        .unwrap_or_else(|| panic!("{probe}: {report}"));
    list.lines()
        .next()
        .unwrap_or_default()
        .split(", ")
        .map(str::to_owned)
        .collect()
}

/// The `type` values at the given table-spelled paths, in every every-key file's dump.
fn types_at(paths: &[&str]) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for f in FILES {
        let value = dumped(&load(f, &fixture(f)).unwrap());
        let mut leaves = Vec::new();
        concrete_leaves(&value, &mut Vec::new(), &mut leaves);
        for leaf in leaves {
            if paths.contains(&spell(&leaf).as_str()) {
                let mut node = &value;
                for step in &leaf {
                    node = match step {
                        Step::Key(k) => &node[k.as_str()],
                        Step::Index(i) => &node[*i],
                    };
                }
                found.insert(node.as_str().unwrap_or_default().to_owned());
            }
        }
    }
    found
}

#[test]
fn the_every_key_files_hold_every_variant_of_every_type() {
    for (probe, paths) in [
        ("server: {type: zzz}\n", &["server.type"][..]),
        (
            "server: {applicationConnectors: [{type: zzz}]}\n",
            &[
                "server.applicationConnectors[].type",
                "server.adminConnectors[].type",
                "server.connector.type",
            ][..],
        ),
        (
            "logging: {appenders: [{type: zzz}]}\n",
            &["logging.appenders[].type"][..],
        ),
        (
            "server: {requestLog: {appenders: [{type: zzz}]}}\n",
            &["server.requestLog.appenders[].type"][..],
        ),
        (
            "logging: {appenders: [{type: console, layout: {type: zzz}}]}\n",
            &[
                "logging.appenders[].layout.type",
                "server.requestLog.appenders[].layout.type",
            ][..],
        ),
        (
            "metrics: {reporters: [{type: zzz}]}\n",
            &["metrics.reporters[].type"][..],
        ),
        ("logging: {type: zzz}\n", &["logging.type"][..]),
    ] {
        let found = types_at(paths);
        for variant in variants(probe) {
            assert!(
                found.contains(&variant),
                "no every-key file has {paths:?} = {variant}"
            );
        }
    }
}

/// The table's spelling, on a dump with a logger's appender.
#[test]
fn keys_are_spelled_with_their_lists_and_loggers_folded() {
    let value = serde_json::json!({
        "logging": {
            "loggers": {"a": {"level": "INFO", "appenders": [{"type": "console", "layout": null}]}},
            "appenders": [{"type": "file", "layout": {"type": "json", "additionalFields": {"x": 1}}}],
        },
        "server": {"allowedMethods": ["GET"]},
    });
    let keys: Vec<String> = keys(&value).into_iter().collect();
    assert_eq!(
        keys,
        [
            "logging.appenders[].layout.additionalFields",
            "logging.appenders[].layout.type",
            "logging.appenders[].type",
            "logging.loggers.*.level",
            "server.allowedMethods",
        ]
    );
}

/// The guide's `## Configuration reference` tables (docs/src/reference/configuration.md), by `###` subsection: the key (the first
/// cell, in backticks) of every row.
fn readme_tables() -> BTreeMap<String, Vec<String>> {
    let text =
        std::fs::read_to_string(workspace().join("docs/src/reference/configuration.md")).unwrap();
    let (_, reference) = text
        .split_once("\n## Configuration reference\n")
        .expect("the reference has a `## Configuration reference` section");
    let reference = reference.split("\n## ").next().unwrap_or_default();
    let mut tables = BTreeMap::new();
    let mut section = String::new();
    for line in reference.lines() {
        if let Some(name) = line.strip_prefix("### ") {
            section = name.trim().to_owned();
        } else if let Some(row) = line.strip_prefix("| `") {
            let key = row.split('`').next().unwrap_or_default().to_owned();
            tables
                .entry(section.clone())
                .or_insert_with(Vec::new)
                .push(key);
        }
    }
    tables
}

/// The reference documents every key of the model once, and no key the model lacks.
#[test]
fn the_readme_reference_tables_document_every_key_once() {
    let tables = readme_tables();
    let mut documented = Vec::new();
    for section in [
        "server",
        "logging",
        "metrics",
        "admin",
        "health",
        "opentelemetry",
    ] {
        let rows = tables
            .get(section)
            .unwrap_or_else(|| panic!("the reference has no `### {section}` table"));
        assert!(
            rows.iter().all(|k| k.starts_with(&format!("{section}."))),
            "a key outside {section} in its table: {rows:?}"
        );
        documented.extend(rows.iter().cloned());
    }
    let model = model_keys();
    let set: BTreeSet<String> = documented.iter().cloned().collect();
    assert_eq!(set.len(), documented.len(), "a key documented twice");
    let missing: Vec<&String> = model.difference(&set).collect();
    let extra: Vec<&String> = set.difference(&model).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/src/reference/configuration.md tables: missing {missing:#?}, not in the model {extra:#?}"
    );
}
