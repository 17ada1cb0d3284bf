//! The experiment's five configurations: which binary each starts, with which arguments.
//!
//! The YAML files are built into the experiment (the report's `before.yaml` and `after.yaml`
//! from the realtime package, `production.yaml` from this one) and written to the output
//! directory, so that the experiment runs the same wherever its binary is.

use std::path::{Path, PathBuf};

use crate::services::Services;

const BEFORE: &str = include_str!("../../realtime/config/before.yaml");
const BEFORE_LOSSLESS: &str = include_str!("../../realtime/config/before-lossless.yaml");
const AFTER: &str = include_str!("../../realtime/config/after.yaml");
const PRODUCTION: &str = include_str!("../config/production.yaml");

/// One configuration of the experiment.
#[derive(Clone, Debug)]
pub struct Config {
    /// Its name in the summary (`before`).
    pub name: &'static str,
    /// What it is, in a line.
    pub what: &'static str,
    /// The binary started.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// What the request log's files (the current one and its archives) start with in the
    /// run's folder, when it is lossless: every response must have its line.
    pub request_log: Option<&'static str>,
}

/// The name the experiment's ratios are taken against.
pub const BASELINE: &str = "after";

/// Writes the YAML files into `dir` (the output directory's `config/`).
pub fn write(dir: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    for (name, text) in [
        ("before.yaml", BEFORE),
        ("before-lossless.yaml", BEFORE_LOSSLESS),
        ("after.yaml", AFTER),
        ("production.yaml", PRODUCTION),
    ] {
        std::fs::write(dir.join(name), text)?;
    }
    Ok(())
}

/// The five configurations, their YAML files in `dir` (see [`write()`]). Each service runs
/// in a folder of its own, where its stdout, stderr and log files land.
pub fn all(services: &Services, dir: &Path) -> Vec<Config> {
    let file = |name: &str| dir.join(name).display().to_string();
    // The report's files are DropWizard 0.6 layout: ports are set on the command line.
    let seed = |name: &str| {
        let mut args = vec!["server".to_owned(), file(name)];
        for set in ["http.port=0", "http.adminPort=0", "http.bindHost=127.0.0.1"] {
            args.extend(["--set".to_owned(), set.to_owned()]);
        }
        args
    };
    vec![
        Config {
            name: "before",
            what: "the report's start: root DEBUG, console appender, console request log (stdout to a file)",
            program: services.realtime.clone(),
            args: seed("before.yaml"),
            request_log: None,
        },
        Config {
            name: "before-lossless",
            what: "`before` with discardingThreshold: 0: not a line dropped, a full queue waits",
            program: services.realtime.clone(),
            args: seed("before-lossless.yaml"),
            request_log: None,
        },
        Config {
            name: BASELINE,
            what: "the report's config.yaml (jetty/http/metrics at WARN, console off, request log off)",
            program: services.realtime.clone(),
            args: seed("after.yaml"),
            request_log: None,
        },
        Config {
            name: "production",
            what: "INFO to a rotating file, request log to a rotating file (lossless)",
            program: services.realtime.clone(),
            args: vec!["server".to_owned(), file("production.yaml")],
            request_log: Some("requests"),
        },
        Config {
            name: "naive-rust",
            what: "the same handlers on plain axum, tracing-subscriber fmt at DEBUG to stdout",
            program: services.bare.clone(),
            args: vec!["--naive-logging".to_owned(), "0".to_owned()],
            request_log: None,
        },
    ]
}
