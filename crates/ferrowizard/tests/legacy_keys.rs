//! Every key of DropWizard 0.6's layout lands on the 4.x key it stands for: a file written
//! either way loads to the same configuration (and so acts as the 4.x key's own test shows).

use ferrowizard::config::{FrameworkConfiguration, load_str};

fn load(text: &str) -> FrameworkConfiguration {
    load_str::<FrameworkConfiguration>("config.yaml", text, &[])
        .unwrap_or_else(|r| panic!("{r}\n{text}"))
}

/// The 4.x server a 0.6 `http:` becomes around `extra` (its application connector gets
/// `connector`, its admin connector `admin`).
fn server(extra: &str, connector: &str, admin: &str, request_log: &str) -> String {
    format!(
        "server:\n  type: default\n  applicationConnectors:\n    - {{type: http, port: 8080{connector}}}\n  \
         adminConnectors:\n    - {{type: http, port: 8081{admin}}}\n  requestLog:\n    appenders: {request_log}\n{extra}"
    )
}

#[test]
fn each_0_6_key_loads_as_its_4x_key() {
    let console = "[{type: console}]";
    for (old, new) in [
        (
            "http:\n  port: 9000\n",
            server("", "", "", console).replace("port: 8080", "port: 9000"),
        ),
        (
            "http:\n  adminPort: 9001\n",
            server("", "", "", console).replace("port: 8081", "port: 9001"),
        ),
        (
            "http:\n  bindHost: 10.1.2.3\n",
            server("", ", bindHost: 10.1.2.3", "", console),
        ),
        (
            "http:\n  adminBindHost: 10.1.2.3\n",
            server("", "", ", bindHost: 10.1.2.3", console),
        ),
        (
            "http:\n  maxIdleTime: 5s\n",
            server("", ", idleTimeout: 5s", "", console),
        ),
        (
            "http:\n  maxThreads: 7\n",
            server("  maxThreads: 7\n", "", "", console),
        ),
        (
            "http:\n  maxQueuedRequests: 7\n",
            server("  maxQueuedRequests: 7\n", "", "", console),
        ),
        (
            "http:\n  rootPath: /api\n",
            server("  rootPath: /api\n", "", "", console),
        ),
        (
            "http:\n  gzip: {enabled: false}\n",
            server("  gzip: {enabled: false}\n", "", "", console),
        ),
        (
            "http:\n  shutdownGracePeriod: 5s\n",
            server("  shutdownGracePeriod: 5s\n", "", "", console),
        ),
        (
            "http:\n  requestLog:\n    console: {enabled: false}\n",
            server("", "", "", "[]"),
        ),
        (
            "http:\n  requestLog:\n    console: {enabled: false}\n    file: {enabled: true, currentLogFilename: r.log, archive: false}\n",
            server(
                "",
                "",
                "",
                "[{type: file, currentLogFilename: r.log, archive: false}]",
            ),
        ),
        (
            "http:\n  requestLog:\n    console: {enabled: false}\n    syslog: {enabled: true, host: 10.1.2.3}\n",
            server("", "", "", "[{type: syslog, host: 10.1.2.3}]"),
        ),
        (
            "logging:\n  console: {enabled: false}\n  file: {enabled: true, currentLogFilename: a.log, archive: false}\n",
            "logging:\n  appenders: [{type: file, currentLogFilename: a.log, archive: false}]\n"
                .to_owned(),
        ),
        (
            "logging:\n  console: {enabled: false}\n  syslog: {enabled: true, host: 10.1.2.3}\n",
            "logging:\n  appenders: [{type: syslog, host: 10.1.2.3}]\n".to_owned(),
        ),
        (
            "logging:\n  console: {enabled: false}\n",
            "logging:\n  appenders: []\n".to_owned(),
        ),
    ] {
        assert_eq!(load(old), load(&new), "{old}");
    }
}
