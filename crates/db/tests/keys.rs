//! Dead keys are impossible here too: every key of the database section names the test that
//! shows it at work (`tests/keys/behaviour.tsv`), and every key of DropWizard's
//! `DataSourceFactory` is either one of them or refused with why.

#[path = "support/behaviour_table.rs"]
mod behaviour_table;

use std::collections::BTreeSet;
use std::path::Path;

use ferrowizard_db::DataSourceFactory;

/// DropWizard 4's `DataSourceFactory` keys.
const DROPWIZARD: &[&str] = &[
    "abandonWhenPercentageFull",
    "alternateUsernamesAllowed",
    "autoCommentsEnabled",
    "autoCommitByDefault",
    "checkConnectionOnBorrow",
    "checkConnectionOnConnect",
    "checkConnectionOnReturn",
    "checkConnectionWhileIdle",
    "commitOnReturn",
    "defaultCatalog",
    "defaultTransactionIsolation",
    "driverClass",
    "evictionInterval",
    "ignoreExceptionOnPreLoad",
    "initialSize",
    "initializationQuery",
    "jdbcInterceptors",
    "logAbandonedConnections",
    "logValidationErrors",
    "maxConnectionAge",
    "maxSize",
    "maxWaitForConnection",
    "minIdleTime",
    "minSize",
    "password",
    "properties",
    "readOnlyByDefault",
    "removeAbandoned",
    "removeAbandonedTimeout",
    "rollbackOnReturn",
    "url",
    "useFairQueue",
    "user",
    "validationInterval",
    "validationQuery",
    "validationQueryTimeout",
    "validatorClassName",
];

fn model_keys() -> BTreeSet<String> {
    behaviour_table::section_keys(&DataSourceFactory::default())
}

fn load(yaml: &str) -> Result<DataSourceFactory, String> {
    ferrowizard::config::loader(&[])
        .load_str::<DataSourceFactory>("database.yaml", yaml)
        .map_err(|r| r.to_string())
}

#[test]
fn every_key_names_its_behaviour_test() {
    let rows = behaviour_table::keys_with_tests(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(
        rows,
        model_keys(),
        "behaviour.tsv's keys against the section's"
    );
}

/// Catches: a DropWizard key accepted and ignored, or refused without why.
#[test]
fn every_dropwizard_key_is_honoured_or_refused_with_why() {
    let model = model_keys();
    for key in DROPWIZARD {
        if model.contains(*key) {
            continue;
        }
        let report = load(&format!("url: sqlite:t.db\n{key}: x\n")).unwrap_err();
        let (_, why) = report
            .split_once(&format!("Unrecognized field at: {key}; "))
            .unwrap_or_else(|| panic!("{key} is not refused with why: {report}"));
        assert!(why.len() > 30, "{key}: {why}");
    }
    let ours: Vec<&String> = model
        .iter()
        .filter(|k| !DROPWIZARD.contains(&k.as_str()))
        .collect();
    assert_eq!(ours, ["migrations"], "keys DropWizard's section lacks");
}

/// Catches: a password or a url's password shown by `check --dump`.
#[test]
fn the_dump_shows_no_password() {
    let section =
        load("url: postgres://orders:in-url-secret@db.internal/orders\npassword: key-secret\n")
            .unwrap();
    let dumped = serde_json::to_string(&section).unwrap();
    assert!(!dumped.contains("secret"), "{dumped}");
    assert!(
        dumped.contains("postgres://orders:***@db.internal/orders"),
        "{dumped}"
    );
    let debug = format!("{section:?}");
    assert!(!debug.contains("secret"), "{debug}");
}

/// Catches: sizes that cannot hold together accepted.
#[test]
fn min_and_initial_sizes_above_the_max_are_refused_where_they_are() {
    let report = load("url: sqlite:t.db\nmaxSize: 4\nminSize: 5\n").unwrap_err();
    assert!(
        report.contains("Invalid value at: minSize; is 5, above maxSize (4)"),
        "{report}"
    );
    let report = load("url: sqlite:t.db\nmaxSize: 4\nminSize: 1\ninitialSize: 9\n").unwrap_err();
    assert!(
        report.contains("Invalid value at: initialSize; is 9, above maxSize (4)"),
        "{report}"
    );
    let report = load("url: mysql://x/y\n").unwrap_err();
    assert!(
        report.contains("at: url; mysql://x/y names no database"),
        "{report}"
    );
}

/// Catches: a key of the section missing from the guide's reference, or one documented that
/// the section lacks.
#[test]
fn the_reference_documents_every_key_once() {
    let reference = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/src/reference/configuration.md"),
    )
    .unwrap();
    let (_, table) = reference
        .split_once("\n### database\n")
        .expect("the reference has a `### database` table");
    let table = table.split("\n## ").next().unwrap_or_default();
    let table = table.split("\n### ").next().unwrap_or_default();
    let mut documented = Vec::new();
    for row in table.lines().filter_map(|l| l.strip_prefix("| `database.")) {
        documented.push(row.split('`').next().unwrap_or_default().to_owned());
    }
    let unique: BTreeSet<String> = documented.iter().cloned().collect();
    assert_eq!(
        unique.len(),
        documented.len(),
        "a key twice: {documented:?}"
    );
    assert_eq!(unique, model_keys());
}
