//! Every key of ferrowizard-auth's sections names the test that shows it at work
//! (`tests/keys/behaviour.tsv`).

#[path = "../../db/tests/support/behaviour_table.rs"]
mod behaviour_table;

use ferrowizard_auth::CachePolicy;

#[test]
fn every_key_names_its_behaviour_test() {
    let rows = behaviour_table::keys_with_tests(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(rows, behaviour_table::section_keys(&CachePolicy::default()));
}
