//! The 2014 DropWizard logging report's experiment in one command: the "Realtime interface" service under the report's
//! `before` and `after` configs (plus the production config we recommend, and the same
//! handlers on plain axum), each loaded by volley with the report's closed-model users, side
//! by side.
//!
//! A run: [`services`] finds the service binaries, [`configs`] says how each config starts
//! one, and for every round and config [`service`] starts it in a folder of its own,
//! [`load`] runs volley against it, and [`output`] counts what it wrote and keeps or deletes
//! it. [`summary`] merges each config's rounds into its report and writes `summary.md`, where
//! [`verdict`] says what the numbers mean; [`out_dir`] says where all of it goes.
#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod configs;
pub mod curve;
pub mod load;
pub mod options;
pub mod out_dir;
pub mod output;
pub mod service;
pub mod services;
pub mod summary;
pub mod verdict;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub use options::Options;

use configs::Config;
use output::{Fate, Ledger, Written, size, thousands};
use summary::Round;

/// Why the experiment could not run at all (a config that fails is a failure of the run,
/// reported in [`Report::failures`], not this).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The service binaries were not found.
    #[error(transparent)]
    Locate(#[from] services::LocateError),
    /// The output directory could not be made.
    #[error("{}: {source}", path.display())]
    Output {
        /// The path.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// volley's runtime could not be started.
    #[error("cannot start volley's runtime: {0}")]
    Runtime(std::io::Error),
}

/// What a run produced.
#[derive(Debug)]
pub struct Report {
    /// `summary.md`.
    pub summary: PathBuf,
    /// What went wrong: a config that served no request, a lossless request log that lost
    /// a line, a service that did not start or stop, a summary that could not be written.
    pub failures: Vec<String>,
}

/// Runs the experiment as `options` say, printing its progress; see [`Report`].
pub fn run(options: &Options) -> Result<Report, Error> {
    let o = options;
    let services = services::locate()?;
    println!(
        "Services: {} and {} ({})",
        services.realtime.display(),
        services.bare.display(),
        services.found
    );
    let out = o.out.clone().unwrap_or_else(out_dir::default_out);
    // Absolute: each service runs in a folder of its own, and is given its config's path.
    let out = std::path::absolute(&out).unwrap_or(out);
    let output_error = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Output { path, source }
    };
    std::fs::create_dir_all(&out).map_err(output_error(&out))?;
    clean(&out);
    let config_dir = out.join("config");
    configs::write(&config_dir).map_err(output_error(&config_dir))?;
    println!("Output: {}", out.display());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.volley_threads)
        .enable_all()
        .build()
        .map_err(Error::Runtime)?;
    let started_at = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let configs = configs::all(&services, &config_dir);
    let mut rounds: Vec<Vec<Round>> = configs.iter().map(|_| Vec::new()).collect();
    let mut ratios: Vec<Vec<f64>> = configs.iter().map(|_| Vec::new()).collect();
    let mut failures = Vec::new();
    let mut ledger = Ledger::default();
    for round in 1..=o.rounds {
        let label = format!("round {round} of {}", o.rounds);
        let mut this_round: Vec<Option<f64>> = Vec::new();
        for (i, config) in configs.iter().enumerate() {
            println!("\n==== {} ({}), {label} ====", config.name, config.what);
            let folder = out.join(format!("round-{round}")).join(config.name);
            let (figures, problems) = run_config(config, round, &folder, o, &runtime, &mut ledger);
            for p in problems {
                failures.push(format!("{}, {label}: {p}", config.name));
            }
            this_round.push(figures.as_ref().map(|r| r.results.global.mean_rps));
            rounds[i].extend(figures);
        }
        let baseline = configs
            .iter()
            .position(|c| c.name == configs::BASELINE)
            .and_then(|i| this_round.get(i).copied().flatten())
            .filter(|a| *a > 0.0);
        let mut line = format!("{label}, req/s vs {}:", configs::BASELINE);
        for (i, rps) in this_round.iter().enumerate() {
            if let (Some(rps), Some(baseline)) = (rps, baseline) {
                ratios[i].push(rps / baseline);
                let _ = write!(line, " {} {:.2}", configs[i].name, rps / baseline);
            }
        }
        println!("\n{line}");
    }
    let mut outcomes = Vec::new();
    for ((config, r), ratio) in configs.iter().zip(rounds).zip(ratios) {
        if r.is_empty() {
            continue;
        }
        match summary::combine(config.name, config.what, r, ratio, &out) {
            Ok(outcome) => outcomes.push(outcome),
            Err(e) => failures.push(format!("{}: {e}", config.name)),
        }
    }
    let summary = summary::Summary {
        started_at: &started_at,
        options: o,
        outcomes: &outcomes,
        ledger: &ledger,
        services: &services,
        failures: &failures,
    };
    let (markdown, json) = (summary.markdown(), summary.json());
    println!("\n{markdown}");
    let path = out.join("summary.md");
    let written = std::fs::write(&path, &markdown).and_then(|()| {
        std::fs::write(
            out.join("summary.json"),
            serde_json::to_vec_pretty(&json).unwrap_or_default(),
        )
    });
    if let Err(e) = written {
        failures.push(format!("cannot write the summary: {e}"));
    }
    println!("Summary: {}", path.display());
    Ok(Report {
        summary: path,
        failures,
    })
}

/// One config in one round: its service started in `folder`, loaded and stopped, then what
/// it wrote counted, and kept or deleted as `--keep-logs` says (kept whatever it says when
/// the run failed). Returns the round's figures (none when the run did not finish) and what
/// went wrong.
fn run_config(
    config: &Config,
    round: u32,
    folder: &Path,
    o: &Options,
    runtime: &tokio::runtime::Runtime,
    ledger: &mut Ledger,
) -> (Option<Round>, Vec<String>) {
    let mut problems = Vec::new();
    let results = std::fs::create_dir_all(folder)
        .map_err(|e| format!("{}: {e}", folder.display()))
        .and_then(|()| serve_and_load(config, folder, o, runtime));
    let written = match output::count(folder) {
        Ok(files) => {
            if let (Ok(results), Some(prefix)) = (&results, config.request_log) {
                lossless(&files, prefix, results, &mut problems);
            }
            files.iter().map(|f| f.written).sum()
        }
        Err(e) => {
            problems.push(format!("cannot count its output: {e}"));
            Written::default()
        }
    };
    let dropped = service::dropped(folder);
    match &results {
        Ok(r) if r.global.ok.count == 0 => problems.push("served no request".into()),
        Ok(_) => {}
        Err(e) => problems.push(e.clone()),
    }
    let keep = o.keep_logs.keeps(round, o.rounds);
    let fate = ledger.settle(folder, written, keep, !problems.is_empty());
    println!(
        "{}, round {round} of {}: the service wrote {} lines ({}); {}",
        config.name,
        o.rounds,
        thousands(written.lines),
        size(written.bytes),
        match &fate {
            Ok(Fate::Deleted) =>
                format!("counted, then deleted (--keep-logs {})", o.keep_logs.name()),
            Ok(Fate::Kept) => format!("kept in {}", folder.display()),
            Ok(Fate::KeptFailed) => format!("kept in {} (the run failed)", folder.display()),
            Err(e) => format!("cannot delete {}: {e}", folder.display()),
        }
    );
    let kept = matches!(fate, Ok(Fate::Kept | Fate::KeptFailed)).then(|| folder.to_path_buf());
    let figures = results.ok().map(|results| Round {
        round,
        results,
        written,
        dropped,
        kept,
    });
    (figures, problems)
}

/// Starts `config`'s service in `folder`, loads it for a round, and stops it.
fn serve_and_load(
    config: &Config,
    folder: &Path,
    o: &Options,
    runtime: &tokio::runtime::Runtime,
) -> Result<volley::results::Results, String> {
    let service = service::start(config, folder).map_err(|e| e.to_string())?;
    service.wait_healthy().map_err(|e| e.to_string())?;
    let simulation = load::simulation(&service.app, o.users, o.round_length());
    let results = load::run(runtime, &simulation)?;
    service.stop().map_err(|e| e.to_string())?;
    Ok(results)
}

/// Notes in `problems` a lossless request log (its files start with `prefix`) with fewer
/// lines than the responses volley received.
fn lossless(
    files: &[output::FileCount],
    prefix: &str,
    results: &volley::results::Results,
    problems: &mut Vec<String>,
) {
    let lines: u64 = files
        .iter()
        .filter(|f| f.name.starts_with(prefix))
        .map(|f| f.written.lines)
        .sum();
    // The health check's request is logged too: more lines than responses is right.
    let responses = results.global.ok.count + results.global.ko.count;
    if lines < responses {
        problems.push(format!(
            "{lines} request-log lines for {responses} responses"
        ));
    }
}

/// Removes what an earlier run left in `out`: the rounds' folders, the reports and
/// summaries (only the experiment's own files; the configs are written over).
fn clean(out: &Path) {
    let ours = [
        "before.",
        "before-lossless.",
        "after.",
        "production",
        "naive-rust.",
        "summary.",
    ];
    let Ok(entries) = std::fs::read_dir(out) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if path.is_dir() && name.starts_with("round-") {
            let _ = std::fs::remove_dir_all(&path);
        } else if path.is_file() && ours.iter().any(|p| name.starts_with(p)) {
            let _ = std::fs::remove_file(&path);
        }
    }
}
