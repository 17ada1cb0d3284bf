//! Every key of `httpClient` names the test that shows it at work (`tests/keys/behaviour.tsv`),
//! and every DropWizard key with no meaning here is refused with why.

#[path = "../../db/tests/support/behaviour_table.rs"]
mod behaviour_table;

use std::collections::BTreeSet;

use behaviour_table::section_keys;
use ferrowizard_client::{HttpClientConfiguration, TlsConfiguration};

#[test]
fn every_key_names_its_behaviour_test() {
    let rows = behaviour_table::keys_with_tests(env!("CARGO_MANIFEST_DIR"));
    let mut keys = section_keys(&HttpClientConfiguration::default());
    keys.extend(
        section_keys(&TlsConfiguration::default())
            .into_iter()
            .map(|k| format!("tls.{k}")),
    );
    assert_eq!(rows, keys);
}

#[test]
fn dropwizard_keys_with_no_meaning_here_are_refused_with_why() {
    let refused: BTreeSet<&str> = [
        ("cookiesEnabled: true", "keeps no cookies"),
        ("proxy: {host: proxy.internal}", "directly"),
        (
            "validateAfterInactivityPeriod: 1s",
            "noticed when it closes",
        ),
        ("gzipEnabled: false", "no compression"),
        ("gzipEnabledForRequests: true", "Content-Encoding"),
        ("chunkedEncodingEnabled: false", "the body decides"),
        ("minThreads: 1", "tokio runtime"),
        ("maxThreads: 1", "tokio runtime"),
        ("workQueueSize: 1", "connectionRequestTimeout"),
        ("tls: {protocol: TLSv1.2}", "server picks"),
        ("tls: {trustStorePath: /etc/ts.jks}", "caFile"),
        ("tls: {keyStorePath: /etc/ks.jks}", "client certificates"),
        ("tls: {trustSelfSignedCertificates: true}", "caFile"),
    ]
    .into_iter()
    .map(|(yaml, why)| {
        let err = ferrowizard::config::loader(&[])
            .load_str::<HttpClientConfiguration>("client.yaml", yaml)
            .unwrap_err()
            .to_string();
        assert!(err.contains(why), "{yaml}: {err}");
        yaml
    })
    .collect();
    assert_eq!(refused.len(), 13);
}

#[test]
fn bad_values_are_refused_where_they_are() {
    for (yaml, said) in [
        ("timeout: 0ms", "timeout"),
        ("maxConnections: 0", "maxConnections"),
        (
            "maxConnections: 4\nmaxConnectionsPerRoute: 8",
            "above maxConnections",
        ),
        ("retries: 1001", "retries"),
        (
            "tls: {insecure: true, verifyHostname: false, caFile: ca.pem}",
            "caFile",
        ),
    ] {
        let err = ferrowizard::config::loader(&[])
            .load_str::<HttpClientConfiguration>("client.yaml", yaml)
            .unwrap_err()
            .to_string();
        assert!(err.contains(said), "{yaml}: {err}");
    }
}
