//! Every key of ferrowizard-auth's sections names the test that shows it at work
//! (`tests/keys/behaviour.tsv`: `cache.KEY` for a `CachePolicy`, `jwt.KEY` and
//! `jwt.keys[].KEY` for a `JwtFactory`).

#[path = "../../db/tests/support/behaviour_table.rs"]
mod behaviour_table;

use std::collections::BTreeSet;

use behaviour_table::section_keys;
use ferrowizard_auth::{CachePolicy, JwtFactory, JwtKeyFactory};

#[test]
fn every_key_names_its_behaviour_test() {
    let rows = behaviour_table::keys_with_tests(env!("CARGO_MANIFEST_DIR"));
    let mut keys = BTreeSet::new();
    let prefixed = |prefix: &'static str, keys: BTreeSet<String>| {
        keys.into_iter().map(move |k| format!("{prefix}{k}"))
    };
    keys.extend(prefixed("cache.", section_keys(&CachePolicy::default())));
    keys.extend(prefixed("jwt.", section_keys(&JwtFactory::default())));
    keys.extend(prefixed(
        "jwt.keys[].",
        section_keys(&JwtKeyFactory::default()),
    ));
    assert_eq!(rows, keys);
}
