//! A section's behaviour table: `tests/keys/behaviour.tsv` of the crate at `manifest_dir`,
//! `KEY<TAB>FILE::FN` a row, each test existing in its file (paths from the workspace's root).
//! Shared by the crates whose sections are added by applications (ferrowizard-db,
//! ferrowizard-auth).

use std::collections::BTreeSet;
use std::path::Path;

/// The keys the table names, each checked to name a test that exists.
pub fn keys_with_tests(manifest_dir: &str) -> BTreeSet<String> {
    let dir = Path::new(manifest_dir);
    let root = dir.join("../..");
    let table = std::fs::read_to_string(dir.join("tests/keys/behaviour.tsv")).unwrap();
    let mut rows = BTreeSet::new();
    for line in table
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        let (key, test) = line.split_once('\t').expect("KEY<TAB>FILE::FN");
        let (file, name) = test.split_once("::").expect("FILE::FN");
        let source = std::fs::read_to_string(root.join(file))
            .unwrap_or_else(|e| panic!("{key}: {file}: {e}"));
        assert!(
            source.contains(&format!("fn {name}(")),
            "{key}: {file} has no fn {name}"
        );
        assert!(rows.insert(key.to_owned()), "{key} twice");
    }
    rows
}

/// The keys of a section, as `check --dump` writes them (its `Serialize`).
pub fn section_keys(section: &impl serde::Serialize) -> BTreeSet<String> {
    let value = serde_json::to_value(section).unwrap();
    value.as_object().unwrap().keys().cloned().collect()
}
