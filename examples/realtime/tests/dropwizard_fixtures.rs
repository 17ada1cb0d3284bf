//! DropWizard's own logging fixtures that a migrating user could paste: each passes `check`
//! (see `tests/cases/valid-dropwizard-*.yaml`) and, here, starts the real binary, which then
//! serves.

mod common;

use common::{connect, get, start, write_config};

const SERVER: &str = "server:\n  applicationConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  \
                      adminConnectors: [{type: http, port: 0, bindHost: 127.0.0.1}]\n  requestLog: {appenders: []}\n";

fn serves(logging: &str) {
    let dir = tempfile::tempdir().unwrap();
    let ca = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    std::fs::write(dir.path().join("ca.pem"), ca.cert.pem()).unwrap();
    let config = write_config(dir.path(), &format!("{SERVER}{logging}"));
    let service = start(&config);
    let mut c = connect(service.app);
    assert_eq!(
        get(&mut c, "/realtime/quotes/ACME").unwrap(),
        200,
        "{logging}"
    );
}

#[test]
fn dropwizards_time_zones_tls_appender_and_external_logging_start_the_server() {
    for case in ["time-zones", "tls", "external"] {
        let text = std::fs::read_to_string(format!(
            "{}/tests/cases/valid-dropwizard-{case}.yaml",
            env!("CARGO_MANIFEST_DIR")
        ))
        .unwrap();
        // The TLS receiver's CA, as the test makes it.
        let text = text.replace("/etc/ssl/certs/ca-certificates.crt", "DIR/ca.pem");
        serves(&text);
    }
}
