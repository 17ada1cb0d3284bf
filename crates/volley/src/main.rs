//! `volley run|check SCENARIO.yaml`, `volley report|merge|compare|import`, `volley schema`: the command
//! line over the library.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use volley::engine;

#[derive(Parser)]
#[command(name = "volley", version, about = "A Gatling-style load tester")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a scenario file.
    Run {
        /// The scenario (YAML).
        scenario: PathBuf,
        /// Override a value: `scenarios[0].injection[0].during=10s`.
        #[arg(long = "set", value_name = "PATH=VALUE")]
        overrides: Vec<String>,
        /// Where `results.json` goes.
        #[arg(long, default_value = "target/volley")]
        out: PathBuf,
        #[command(flatten)]
        exports: Exports,
        /// Run only the i-th of N parts of the plan (from 0), for N generators whose results
        /// `merge` puts together; `N` alone takes i from `JOB_COMPLETION_INDEX`, as a
        /// Kubernetes Indexed Job sets it.
        #[arg(long, value_name = "[i/]N")]
        shard: Option<String>,
        /// Serve the running test's counters and response-time summaries at
        /// `http://ADDR/metrics`, for a Prometheus to scrape (e.g. `127.0.0.1:9464`).
        #[arg(long, value_name = "ADDR")]
        prometheus: Option<std::net::SocketAddr>,
    },
    /// Merge the results of several generators into one, exactly (HDR histograms add).
    Merge {
        /// `results.json` files.
        #[arg(required = true, num_args = 1..)]
        inputs: Vec<PathBuf>,
        /// Where the merged results go.
        #[arg(short = 'o', long = "output")]
        output: PathBuf,
    },
    /// Render `index.html` again from a `results.json` (and the JUnit and CSV files asked for).
    Report {
        /// The results.
        results: PathBuf,
        /// Where `index.html` goes (default: beside the results).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        #[command(flatten)]
        exports: Exports,
    },
    /// Compare two runs' results.json, Global and per request: throughput, KO share and the
    /// OK responses' percentiles from the exact histograms. Exits 2 when a threshold fails:
    /// a CI job's baseline gate.
    Compare {
        /// The base run's results.json (the main branch's, say).
        base: PathBuf,
        /// The new run's results.json.
        new: PathBuf,
        /// How much worse a figure may get, e.g. `p99=10%`, `*:ko=1` (each request, KO share
        /// up by at most 1 point), `login:p95=5ms`, `rps=5%`. Repeat for more.
        #[arg(long = "threshold", value_name = "[SCOPE:]METRIC=LIMIT")]
        thresholds: Vec<String>,
        /// A file of thresholds, one a line (`#` starts a comment).
        #[arg(long, value_name = "FILE")]
        threshold_file: Option<PathBuf>,
        /// Also write the comparison as Markdown, for a pull request's comment.
        #[arg(long, value_name = "FILE")]
        markdown: Option<PathBuf>,
        /// Also write the thresholds as a JUnit XML file, a test case each.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
    },
    /// Write a scenario from a recorded browser session (a HAR file, as a browser's developer
    /// tools save it): its requests in order with their pauses, static assets left out,
    /// cookies left to the jar.
    Import {
        /// The HAR file.
        har: PathBuf,
        /// Where the scenario goes (default: printed).
        #[arg(short = 'o', long = "output")]
        output: Option<PathBuf>,
        /// Keep the static assets (style sheets, scripts, images, fonts).
        #[arg(long)]
        keep_static: bool,
        /// Leave out pauses shorter than this, in milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 100)]
        min_pause: u64,
        /// The scenario's name.
        #[arg(long, default_value = "recorded")]
        name: String,
    },
    /// Print the JSON Schema of `results.json`.
    Schema,
    /// Load and validate a scenario file, then exit.
    Check {
        /// The scenario (YAML).
        scenario: PathBuf,
        /// Overrides, as for `run`.
        #[arg(long = "set", value_name = "PATH=VALUE")]
        overrides: Vec<String>,
    },
}

/// The files for CI that `run` writes beside `results.json` and `report` from one.
#[derive(clap::Args)]
struct Exports {
    /// Also write the assertions as a JUnit XML file: a test case each, failed when the
    /// assertion failed (a run without assertions is a suite of no test cases).
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Also write the series over time (`series.csv`) and the figures per request
    /// (`requests.csv`) into this folder.
    #[arg(long, value_name = "DIR")]
    csv: Option<PathBuf>,
}

impl Exports {
    /// Writes the files asked for, each one even when another fails, and says where they went
    /// or why not; true when all were written. `suite` names the JUnit test suite.
    fn write(&self, results: &volley::results::Results, suite: &str) -> bool {
        let mut written = true;
        if let Some(path) = &self.junit {
            match volley::export::junit::write(results, suite, path) {
                Ok(()) => println!("JUnit: {}", path.display()),
                Err(e) => {
                    eprintln!("volley: {e}");
                    written = false;
                }
            }
        }
        if let Some(folder) = &self.csv {
            match volley::export::csv::write(results, folder) {
                Ok([series, requests]) => {
                    println!("CSV: {}, {}", series.display(), requests.display())
                }
                Err(e) => {
                    eprintln!("volley: {e}");
                    written = false;
                }
            }
        }
        written
    }
}

/// Raises the open-files soft limit to the hard limit: every user holds a connection, and a
/// shell's default soft limit (1,024) is far below what a load test opens.
fn raise_open_files_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE)
        && soft < hard
    {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() {
                ExitCode::from(1)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        Command::Schema => {
            print!("{}", volley::results::json_schema());
            ExitCode::SUCCESS
        }
        Command::Check {
            scenario,
            overrides,
        } => match volley::scenario::load(&scenario, &overrides) {
            Ok(_) => {
                println!("Scenario is OK");
                ExitCode::SUCCESS
            }
            Err(report) => {
                eprintln!("{report}");
                ExitCode::from(1)
            }
        },
        Command::Report {
            results,
            output,
            exports,
        } => match report(&results, output.as_deref(), &exports) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("volley: {e:#}");
                ExitCode::from(1)
            }
        },
        Command::Compare {
            base,
            new,
            thresholds,
            threshold_file,
            markdown,
            junit,
        } => {
            let outputs = CompareOutputs { markdown, junit };
            match compare(
                &base,
                &new,
                &thresholds,
                threshold_file.as_deref(),
                &outputs,
            ) {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("volley: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Import {
            har,
            output,
            keep_static,
            min_pause,
            name,
        } => {
            let options = volley::har::Options {
                keep_static,
                min_pause: Duration::from_millis(min_pause),
                name,
            };
            match import(&har, output.as_deref(), &options) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("volley: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
        Command::Merge { inputs, output } => match merge(&inputs, &output) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("volley: {e:#}");
                ExitCode::from(1)
            }
        },
        Command::Run {
            scenario,
            overrides,
            out,
            exports,
            shard,
            prometheus,
        } => {
            raise_open_files_limit();
            match run(
                &scenario,
                &overrides,
                &out,
                &exports,
                shard.as_deref(),
                prometheus,
            ) {
                Ok(code) => code,
                Err(e) => {
                    eprintln!("volley: {e:#}");
                    ExitCode::from(1)
                }
            }
        }
    }
}

fn report(
    results: &std::path::Path,
    output: Option<&std::path::Path>,
    exports: &Exports,
) -> anyhow::Result<ExitCode> {
    use anyhow::Context as _;
    let name = results.display().to_string();
    let bytes = std::fs::read(results).with_context(|| format!("cannot read {name}"))?;
    let parsed = volley::results::read(&bytes, &name)?;
    let html = volley::report::render(&parsed, &title(&parsed, &name))?;
    let target = match output {
        Some(o) => o.to_path_buf(),
        None => results.with_file_name("index.html"),
    };
    std::fs::write(&target, html).with_context(|| format!("cannot write {}", target.display()))?;
    println!("Report: {}", target.display());
    if !exports.write(&parsed, &name) {
        return Ok(ExitCode::from(1));
    }
    Ok(ExitCode::SUCCESS)
}

fn import(
    har: &std::path::Path,
    output: Option<&std::path::Path>,
    options: &volley::har::Options,
) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let name = har.display().to_string();
    let text = std::fs::read_to_string(har).with_context(|| format!("cannot read {name}"))?;
    let yaml = volley::har::import(&name, &text, options)?;
    match output {
        Some(path) => {
            std::fs::write(path, &yaml)
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("Scenario: {}", path.display());
        }
        None => print!("{yaml}"),
    }
    Ok(())
}

/// The files `volley compare` writes beside what it prints.
struct CompareOutputs {
    markdown: Option<PathBuf>,
    junit: Option<PathBuf>,
}

fn compare(
    base: &std::path::Path,
    new: &std::path::Path,
    thresholds: &[String],
    threshold_file: Option<&std::path::Path>,
    outputs: &CompareOutputs,
) -> anyhow::Result<ExitCode> {
    use anyhow::Context as _;
    use volley::compare::threshold::{Threshold, parse_file};
    let mut gates = Vec::new();
    if let Some(file) = threshold_file {
        let name = file.display().to_string();
        let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {name}"))?;
        gates.extend(parse_file(&name, &text).map_err(anyhow::Error::msg)?);
    }
    for t in thresholds {
        gates.push(
            t.parse::<Threshold>()
                .map_err(|e| anyhow::anyhow!("--threshold {e}"))?,
        );
    }
    let read = |path: &std::path::Path| {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {name}"))?;
        anyhow::Ok((volley::results::read(&bytes, &name)?, name))
    };
    let (base, base_name) = read(base)?;
    let (new, new_name) = read(new)?;
    let c = volley::compare::compare(&base, &base_name, &new, &new_name, &gates)?;
    print!(
        "{}",
        volley::compare::table::text(&c, &base_name, &new_name)
    );
    if let Some(path) = &outputs.markdown {
        std::fs::write(
            path,
            volley::compare::table::markdown(&c, &base_name, &new_name),
        )
        .with_context(|| format!("cannot write {}", path.display()))?;
        println!("Markdown: {}", path.display());
    }
    if let Some(path) = &outputs.junit {
        let outcomes: Vec<_> = c.verdicts.iter().map(|v| v.outcome()).collect();
        let suite = volley::export::junit::Suite {
            name: "volley compare",
            started_at: &new.started_at,
            seconds: new.duration_seconds,
        };
        volley::export::junit::write_outcomes(&outcomes, &suite, path)?;
        println!("JUnit: {}", path.display());
    }
    let failed = c.verdicts.iter().filter(|v| !v.passed).count();
    if failed > 0 {
        println!("{failed} of {} thresholds failed", c.verdicts.len());
        return Ok(ExitCode::from(2));
    }
    Ok(ExitCode::SUCCESS)
}

/// A report's title: the run's scenarios by name, or `file` for results that name none.
fn title(results: &volley::results::Results, file: &str) -> String {
    if results.users.is_empty() {
        return file.to_owned();
    }
    let names: Vec<&str> = results.users.keys().map(String::as_str).collect();
    names.join(", ")
}

fn merge(inputs: &[PathBuf], output: &std::path::Path) -> anyhow::Result<()> {
    use anyhow::Context as _;
    let mut all = Vec::new();
    for path in inputs {
        let name = path.display().to_string();
        let bytes = std::fs::read(path).with_context(|| format!("cannot read {name}"))?;
        let results = volley::results::read(&bytes, &name)?;
        all.push((name, results));
    }
    // A split missing a part (a generator that failed) still merges, said: what ran is worth
    // reading, but it is not the whole plan.
    let shards: Vec<_> = all.iter().map(|(_, r)| r.shard).collect();
    if let Err(incomplete) = volley::shard::whole(&shards) {
        eprintln!("volley: warning: {incomplete}");
    }
    let merged = volley::results::merge(&all)?;
    std::fs::write(output, serde_json::to_vec_pretty(&merged)?)
        .with_context(|| format!("cannot write {}", output.display()))?;
    let g = &merged.global.total;
    println!(
        "Merged {} runs into {}: {} requests, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        all.len(),
        output.display(),
        g.count,
        g.p50,
        g.p99,
        g.max
    );
    Ok(())
}

fn run(
    path: &std::path::Path,
    overrides: &[String],
    out: &std::path::Path,
    exports: &Exports,
    shard: Option<&str>,
    prometheus: Option<std::net::SocketAddr>,
) -> anyhow::Result<ExitCode> {
    use volley::shard::{JOB_INDEX_VAR, Shard};
    let shard = match shard {
        None => Shard::WHOLE,
        Some(arg) => {
            let job_index = std::env::var_os(JOB_INDEX_VAR);
            Shard::parse(
                arg,
                job_index.as_deref().map(|v| v.to_string_lossy()).as_deref(),
            )?
        }
    };
    let simulation = match volley::scenario::load(path, overrides) {
        Ok(s) => s,
        Err(report) => {
            eprintln!("{report}");
            return Ok(ExitCode::from(1));
        }
    };
    // Taken before the run: an address in use is an error before any request is sent.
    let live = prometheus
        .map(|addr| {
            let listener = std::net::TcpListener::bind(addr)
                .map_err(|e| anyhow::anyhow!("--prometheus {addr}: {e}"))?;
            listener.set_nonblocking(true)?;
            anyhow::Ok(listener)
        })
        .transpose()?;
    let mut builder = tokio::runtime::Builder::new_multi_thread();
    if simulation.threads > 0 {
        builder.worker_threads(simulation.threads);
    }
    let runtime = builder.enable_all().build()?;
    // Truncated to the second: rounded, it could say the run started after it did.
    let started_at = jiff::Timestamp::now()
        .round(
            jiff::TimestampRound::new()
                .smallest(jiff::Unit::Second)
                .mode(jiff::RoundMode::Trunc),
        )?
        .to_string();
    let name = path.file_stem().unwrap_or_default().to_string_lossy();
    let (stats_text, results, interrupted) = runtime.block_on(async {
        let run = engine::prepare_shard(
            &simulation,
            path.parent().unwrap_or(std::path::Path::new(".")),
            shard,
        )
        .map_err(anyhow::Error::msg)?;
        // Ctrl-C is handled from before the start is announced: an interrupt sent as soon as
        // the line is read writes the results, never ends the process by the default action.
        let mut interrupt =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::interrupt())?;
        // SIGTERM likewise (a Kubernetes pod stopped, a CI job cancelled): what ran is kept.
        let mut terminate =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
        let metrics = match live {
            Some(listener) => {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                println!(
                    "Prometheus metrics: http://{}/metrics",
                    listener.local_addr()?
                );
                Some(tokio::spawn(volley::live::serve(listener, run.clone())))
            }
            None => None,
        };
        let part = if shard.is_whole() {
            String::new()
        } else {
            format!(" (shard {shard})")
        };
        println!("Simulation {name}{part} started...");
        std::io::stdout().flush()?;
        let interval = simulation
            .console_interval
            .get()
            .max(Duration::from_millis(100));
        let printer = {
            let run = run.clone();
            let simulation = simulation.clone();
            tokio::spawn(async move {
                let mut tick =
                    tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
                loop {
                    tick.tick().await;
                    // Once every user has arrived, the run may end any moment: the block waits
                    // a little, and a run that ends meanwhile aborts it, leaving the end's
                    // block (at 100%) as the only one, not a second at 99% just before it.
                    if run.users.iter().all(|u| {
                        u.started.load(std::sync::atomic::Ordering::Relaxed)
                            >= u.planned.load(std::sync::atomic::Ordering::Relaxed)
                    }) {
                        tokio::time::sleep((interval / 2).min(Duration::from_secs(1))).await;
                    }
                    let block = volley::console::block(
                        &run,
                        &run.snapshot(),
                        run.started.elapsed(),
                        &simulation,
                    );
                    let _ = std::io::stdout().write_all(block.as_bytes());
                }
            })
        };
        // Ctrl-C or SIGTERM stops the injection; what ran is still summarized and written.
        let (finished, interrupted) = tokio::select! {
            finished = engine::execute(run.clone(), &simulation) => (finished, None),
            _ = interrupt.recv() => {
                eprintln!("volley: interrupted; writing the results of what ran");
                (false, Some(130))
            }
            _ = terminate.recv() => {
                eprintln!("volley: terminated; writing the results of what ran");
                (false, Some(143))
            }
        };
        printer.abort();
        if let Some(metrics) = metrics {
            metrics.abort();
        }
        let elapsed = run.started.elapsed();
        // Close the last second so that the series covers the whole run.
        let stats = run.snapshot();
        let [low, high] = simulation.distribution_bounds;
        let mut text = format!(
            "{}{}",
            volley::console::block(&run, &stats, elapsed, &simulation),
            volley::console::summary(&stats, elapsed, (low, high))
        );
        if let Some(note) = volley::console::omission_note(&stats, &simulation) {
            text.push_str(&note);
        }
        let outcomes = volley::assertions::check(&simulation.assertions, &stats, elapsed);
        for o in &outcomes {
            text.push_str(&volley::assertions::line(o));
            text.push('\n');
        }
        let mut results =
            volley::results::Results::new(&stats, started_at, elapsed, !finished, outcomes);
        results.coordinated_omission = simulation
            .corrects_omission()
            .then(|| simulation.coordinated_omission.name().to_owned());
        results.distribution_bounds = simulation.distribution_bounds;
        results.users = volley::results::UserCounts::of(&run);
        results.shard = (!shard.is_whole()).then_some(shard);
        anyhow::Ok((text, results, interrupted))
    })?;
    std::io::stdout().write_all(stats_text.as_bytes())?;
    std::fs::create_dir_all(out)?;
    let file = out.join("results.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&results)?)?;
    println!("Results: {}", file.display());
    let html = volley::report::render(&results, &title(&results, &name))?;
    let page = out.join("index.html");
    std::fs::write(&page, html)?;
    println!("Report: {}", page.display());
    // What was measured is on disk by now; a file for CI that cannot be written is a failed
    // run whatever the assertions say (exit 1, as for bad arguments).
    if !exports.write(&results, &name) {
        return Ok(ExitCode::from(1));
    }
    // Gatling's exit codes: KOs alone are no failure; a failed assertion is 2.
    if results.assertions.iter().any(|a| !a.passed) {
        return Ok(ExitCode::from(2));
    }
    if let Some(code) = interrupted {
        return Ok(ExitCode::from(code));
    }
    Ok(ExitCode::SUCCESS)
}
