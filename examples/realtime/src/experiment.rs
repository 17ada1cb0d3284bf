//! The seed experiment in one command: the same service under the seed's "before" and
//! "after" configs (plus the production config we recommend, and the same handlers on a naive
//! Rust setup), each loaded by volley with the seed's 100 closed-model users, side by side.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use volley::scenario::{Injection, Request, Scenario, Simulation, Step};

/// The seed's figures (DropWizard, Gatling 2, ~10 minutes).
const SEED: &str = "before 25,873 OK / 4,210 KO; after 113,011 OK / 264 KO: 4.4x";

struct Options {
    /// Load per config, over all rounds.
    duration: Duration,
    users: u32,
    /// The configs take turns this many times, each for `duration / rounds`: this machine's
    /// speed drifts over minutes, and alternating keeps that drift out of the ratios.
    rounds: u32,
    /// volley's threads: one, as `wrk -t1`, leaves the service its share of a small machine.
    volley_threads: usize,
    out: PathBuf,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        duration: Duration::from_secs(30),
        users: 100,
        rounds: 3,
        volley_threads: 1,
        out: PathBuf::from("target/experiment"),
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{a} needs a value"))
        };
        match a.as_str() {
            "--duration" => {
                let v = value()?;
                o.duration = v
                    .parse::<ferrowizard::config::Duration>()
                    .map_err(|e| format!("--duration: {e}"))?
                    .get();
            }
            "--users" => o.users = value()?.parse().map_err(|e| format!("--users: {e}"))?,
            "--rounds" => {
                o.rounds = value()?
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or("--rounds takes a whole number from 1 up")?;
            }
            "--volley-threads" => {
                o.volley_threads = value()?
                    .parse()
                    .ok()
                    .filter(|n| *n >= 1)
                    .ok_or("--volley-threads takes a whole number from 1 up")?;
            }
            "--out" => o.out = PathBuf::from(value()?),
            other => {
                return Err(format!(
                    "unknown argument {other:?} (use --duration 30s, --users 100, --rounds 3, --volley-threads 1, --out DIR)"
                ));
            }
        }
    }
    if o.duration < Duration::from_secs(u64::from(o.rounds)) {
        return Err(format!(
            "--duration {} s is less than a second per round ({} rounds)",
            o.duration.as_secs_f64(),
            o.rounds
        ));
    }
    Ok(o)
}

/// One configuration of the experiment.
struct Setting {
    name: &'static str,
    what: &'static str,
    args: Vec<String>,
    /// The files its logs go to (to count the lines written).
    logs: Vec<PathBuf>,
    /// The request-log file, when lossless (every response must have its line).
    request_log: Option<PathBuf>,
}

fn settings(dir: &Path) -> Vec<Setting> {
    let config = Path::new(env!("CARGO_MANIFEST_DIR")).join("config");
    let s = |v: &str| v.to_owned();
    let production = dir.join("production.yaml");
    let _ = std::fs::write(
        &production,
        format!(
            "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  adminConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  \
             requestLog:\n    appenders:\n      - type: file\n        currentLogFilename: {d}/production-requests.log\n        \
             archivedLogFilenamePattern: {d}/production-requests-%d-%i.log.gz\n        maxFileSize: 100MiB\n\
             logging:\n  level: INFO\n  appenders:\n    - type: file\n      currentLogFilename: {d}/production-app.log\n      \
             archivedLogFilenamePattern: {d}/production-app-%d-%i.log.gz\n      maxFileSize: 100MiB\n",
            d = dir.display()
        ),
    );
    let ports = [
        "--set",
        "http.port=0",
        "--set",
        "http.adminPort=0",
        "--set",
        "http.bindHost=127.0.0.1",
    ]
    .map(s);
    let with_ports = |file: PathBuf| {
        let mut v = vec![s("server"), file.display().to_string()];
        v.extend(ports.iter().cloned());
        v
    };
    vec![
        Setting {
            name: "before",
            what: "the seed's start: root DEBUG, console appender, console request log (stdout to a file)",
            args: with_ports(config.join("before.yaml")),
            logs: vec![dir.join("before.stdout")],
            request_log: None,
        },
        Setting {
            name: "after",
            what: "the seed's config.yaml (jetty/http/metrics at WARN, console off, request log off)",
            args: with_ports(config.join("after.yaml")),
            logs: vec![dir.join("after.stdout")],
            request_log: None,
        },
        Setting {
            name: "production",
            what: "INFO to a rotating file, request log to a rotating file (lossless)",
            args: vec![s("server"), production.display().to_string()],
            logs: vec![
                dir.join("production-app.log"),
                dir.join("production-requests.log"),
            ],
            request_log: Some(dir.join("production-requests.log")),
        },
        Setting {
            name: "naive-rust",
            what: "the same handlers on plain axum, tracing-subscriber fmt at DEBUG to stdout",
            args: vec![s("naive-server"), s("0")],
            logs: vec![dir.join("naive-rust.stdout")],
            request_log: None,
        },
    ]
}

/// Starts the service; returns the child and its application and admin addresses.
fn start(
    exe: &Path,
    setting: &Setting,
    dir: &Path,
) -> Result<(Child, String, Option<String>), String> {
    let stdout_path = dir.join(format!("{}.stdout", setting.name));
    let stdout = std::fs::File::create(&stdout_path)
        .map_err(|e| format!("{}: {e}", stdout_path.display()))?;
    let stderr_path = dir.join(format!("{}.stderr", setting.name));
    let stderr = std::fs::File::create(&stderr_path)
        .map_err(|e| format!("{}: {e}", stderr_path.display()))?;
    let child = Command::new(exe)
        .args(&setting.args)
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", exe.display()))?;
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        let text = std::fs::read_to_string(&stdout_path).unwrap_or_default();
        let find = |role: &str| {
            text.lines()
                .find(|l| l.contains(&format!("{role} listening on")))
                .and_then(|l| l.rsplit("://").next())
                .map(|a| a.replace("0.0.0.0", "127.0.0.1"))
        };
        if let Some(app) = find("application") {
            return Ok((child, app, find("admin")));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!(
        "{} did not start; see {}",
        setting.name,
        stderr_path.display()
    ))
}

/// Waits until `GET url` answers 200 (the health check, or a quote for the naive server).
fn wait_healthy(addr: &str, path: &str) -> Result<(), String> {
    use std::io::{Read, Write};
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(mut s) = std::net::TcpStream::connect(addr) {
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            let _ = write!(
                s,
                "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            );
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            if out.starts_with("HTTP/1.1 200") {
                return Ok(());
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Err(format!("http://{addr}{path} never answered 200"))
}

fn simulation(app: &str, users: u32, duration: Duration) -> Simulation {
    let request = |name: &str, method: &str, path: &str, body: Option<&str>, status: u16| Step {
        request: Some(Request {
            name: name.into(),
            method: method.into(),
            path: path.into(),
            body: body.map(str::to_owned),
            headers: [("Content-Type".to_owned(), "application/json".to_owned())].into(),
            status: Some(vec![status]),
            ..Default::default()
        }),
        ..Default::default()
    };
    Simulation {
        base_url: format!("http://{app}"),
        console_interval: ferrowizard::config::Duration::seconds(5),
        max_duration: (duration + Duration::from_secs(30)).into(),
        scenarios: vec![Scenario {
            name: "Realtime interface".into(),
            injection: vec![Injection {
                constant_concurrent_users: Some(users),
                during: Some(duration.into()),
                ..Default::default()
            }],
            steps: vec![
                request("quote", "GET", "/realtime/quotes/ACME", None, 200),
                request(
                    "event",
                    "POST",
                    "/realtime/events",
                    Some(r#"{"symbol":"ACME","kind":"trade","quantity":1,"price":10}"#),
                    202,
                ),
            ],
        }],
        ..Default::default()
    }
}

/// One config in one round.
struct Round {
    results: volley::results::Results,
    lines: u64,
    dropped: u64,
}

/// One config over every round.
struct Outcome {
    name: &'static str,
    what: &'static str,
    ok: u64,
    ko: u64,
    rps: f64,
    p50: f64,
    p99: f64,
    lines: u64,
    dropped: u64,
    /// Its req/s over `after`'s in each round.
    ratios: Vec<f64>,
    report: PathBuf,
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// Lines in each file and in its rotated archives (`<stem>-...`, gzipped or not).
fn count_lines(paths: &[PathBuf]) -> u64 {
    use std::io::Read;
    let lines = |bytes: &[u8]| bytes.iter().filter(|c| **c == b'\n').count() as u64;
    let mut total = 0;
    for path in paths {
        total += std::fs::read(path).map_or(0, |b| lines(&b));
        let (Some(dir), Some(stem)) = (path.parent(), path.file_stem().and_then(|s| s.to_str()))
        else {
            continue;
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.starts_with(&format!("{stem}-")) {
                continue;
            }
            let mut bytes = Vec::new();
            let read = match std::fs::File::open(entry.path()) {
                Ok(f) if name.ends_with(".gz") => {
                    flate2::read::GzDecoder::new(f).read_to_end(&mut bytes)
                }
                Ok(mut f) => f.read_to_end(&mut bytes),
                Err(e) => Err(e),
            };
            if read.is_ok() {
                total += lines(&bytes);
            }
        }
    }
    total
}

/// Removes the rounds' folders of an earlier run in `out` (only those: the folders hold
/// nothing but the experiment's own files).
fn clean_rounds(out: &Path) {
    if let Ok(entries) = std::fs::read_dir(out) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("round-") {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Removes what an earlier run left in `dir` (only the experiment's own files).
fn clean(dir: &Path) {
    let ours = ["before.", "after.", "production", "naive-rust.", "summary."];
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if ours.iter().any(|p| name.starts_with(p)) {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// `N of M events dropped` in the service's exit summary, summed.
fn dropped(stderr: &Path) -> u64 {
    std::fs::read_to_string(stderr)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.contains("events dropped"))
        .filter_map(|l| {
            l.rsplit("): ")
                .next()?
                .split(' ')
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

fn run_one(
    exe: &Path,
    setting: &Setting,
    o: &Options,
    dir: &Path,
    label: &str,
    runtime: &tokio::runtime::Runtime,
) -> Result<Round, String> {
    println!("\n==== {} ({}), {label} ====", setting.name, setting.what);
    let (mut child, app, admin) = start(exe, setting, dir)?;
    let healthy = match &admin {
        Some(a) => wait_healthy(a, "/healthcheck"),
        None => wait_healthy(&app, "/realtime/quotes/ACME"),
    };
    if let Err(e) = healthy {
        let _ = child.kill();
        return Err(e);
    }
    let sim = simulation(&app, o.users, o.duration / o.rounds);
    let (stats, elapsed) = runtime.block_on(async {
        let run = volley::engine::prepare(&sim, Path::new("."))?;
        let printer = {
            let run = run.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval_at(
                    tokio::time::Instant::now() + Duration::from_secs(5),
                    Duration::from_secs(5),
                );
                loop {
                    tick.tick().await;
                    print!(
                        "{}",
                        volley::console::block(&run, &run.snapshot(), run.started.elapsed())
                    );
                }
            })
        };
        volley::engine::execute(run.clone(), &sim).await;
        printer.abort();
        Ok::<_, String>((run.snapshot(), run.started.elapsed()))
    })?;
    print!("{}", volley::console::summary(&stats, elapsed, (800, 1200)));
    stop(&mut child, setting.name)?;
    Ok(Round {
        results: volley::results::Results::new(&stats, String::new(), elapsed, false, Vec::new()),
        lines: count_lines(&setting.logs),
        dropped: dropped(&dir.join(format!("{}.stderr", setting.name))),
    })
}

/// How long a service may take to write its logs and exit after SIGTERM.
const STOP_GRACE: Duration = Duration::from_secs(30);

/// Stops the service as an operator would (SIGTERM) and waits for it to write its logs and
/// exit. One that fails, or is still running after [`STOP_GRACE`] (then killed), is an
/// error: its logs and counts would not be whole.
fn stop(child: &mut Child, name: &str) -> Result<(), String> {
    use nix::sys::signal::{Signal, kill};
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).unwrap_or(i32::MAX));
    if let Err(e) = kill(pid, Signal::SIGTERM) {
        let _ = child.kill();
        let _ = child.wait();
        return Err(format!("{name}: cannot send SIGTERM ({e}); killed"));
    }
    let deadline = Instant::now() + STOP_GRACE;
    loop {
        match child.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => return Err(format!("{name} {status} after SIGTERM")),
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            Ok(None) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!(
                    "{name} was still running {} s after SIGTERM; killed",
                    STOP_GRACE.as_secs()
                ));
            }
            Err(e) => return Err(format!("{name}: cannot wait for it to exit: {e}")),
        }
    }
}

/// A config's rounds together: histograms merged exactly, the series one round after the
/// other (in its HTML report too).
fn combine(
    name: &'static str,
    what: &'static str,
    rounds: Vec<Round>,
    ratios: Vec<f64>,
    out: &Path,
) -> Result<Outcome, String> {
    let lines = rounds.iter().map(|r| r.lines).sum();
    let dropped = rounds.iter().map(|r| r.dropped).sum();
    let inputs: Vec<(String, volley::results::Results)> = rounds
        .into_iter()
        .enumerate()
        .map(|(i, r)| (format!("round {}", i + 1), r.results))
        .collect();
    let merged = volley::results::merge_as(&inputs, volley::results::Together::OneAfterAnother)
        .map_err(|e| e.to_string())?;
    let report = out.join(format!("{name}.html"));
    let html = volley::report::render(&merged, &format!("Realtime interface: {name}"))
        .map_err(|e| e.to_string())?;
    std::fs::write(&report, html).map_err(|e| format!("{}: {e}", report.display()))?;
    let g = &merged.global;
    Ok(Outcome {
        name,
        what,
        ok: g.ok.count,
        ko: g.ko.count,
        rps: g.mean_rps,
        p50: g.total.p50,
        p99: g.total.p99,
        lines,
        dropped,
        ratios,
        report,
    })
}

/// Runs the experiment; exit 1 if a setting served nothing, a lossless request log lost a
/// line, or the summary could not be written.
pub fn main(args: &[String]) -> ExitCode {
    let o = match parse(args) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("realtime experiment: {e}");
            return ExitCode::from(1);
        }
    };
    if let Err(e) = std::fs::create_dir_all(&o.out) {
        eprintln!("realtime experiment: {}: {e}", o.out.display());
        return ExitCode::from(1);
    }
    clean(&o.out);
    clean_rounds(&o.out);
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("realtime experiment: {e}");
            return ExitCode::from(1);
        }
    };
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(o.volley_threads)
        .enable_all()
        .build()
    else {
        eprintln!("realtime experiment: cannot start a runtime");
        return ExitCode::from(1);
    };
    let names: Vec<(&'static str, &'static str)> =
        settings(&o.out).iter().map(|s| (s.name, s.what)).collect();
    let mut rounds: Vec<Vec<Round>> = names.iter().map(|_| Vec::new()).collect();
    let mut ratios: Vec<Vec<f64>> = names.iter().map(|_| Vec::new()).collect();
    let mut failures = Vec::new();
    for round in 1..=o.rounds {
        // Each round's logs in a folder of their own, so that each is counted on its own.
        let dir = o.out.join(format!("round-{round}"));
        if let Err(e) = std::fs::create_dir_all(&dir) {
            eprintln!("realtime experiment: {}: {e}", dir.display());
            return ExitCode::from(1);
        }
        clean(&dir);
        let label = format!("round {round} of {}", o.rounds);
        let mut this_round: Vec<Option<f64>> = Vec::new();
        for (i, setting) in settings(&dir).into_iter().enumerate() {
            match run_one(&exe, &setting, &o, &dir, &label, &runtime) {
                Ok(r) => {
                    let g = &r.results.global;
                    if g.ok.count == 0 {
                        failures.push(format!("{} served no request in {label}", setting.name));
                    }
                    if let Some(log) = &setting.request_log {
                        let lines = count_lines(std::slice::from_ref(log));
                        // The health-check request is logged too.
                        let responses = g.ok.count + g.ko.count;
                        if lines < responses {
                            failures.push(format!(
                                "{}, {label}: {lines} request-log lines for {responses} responses",
                                setting.name
                            ));
                        }
                    }
                    this_round.push(Some(g.mean_rps));
                    rounds[i].push(r);
                }
                Err(e) => {
                    this_round.push(None);
                    failures.push(format!("{}, {label}: {e}", setting.name));
                }
            }
        }
        let after = names
            .iter()
            .position(|(n, _)| *n == "after")
            .and_then(|i| this_round.get(i).copied().flatten())
            .filter(|a| *a > 0.0);
        let mut line = format!("{label}, req/s vs after:");
        for (i, rps) in this_round.iter().enumerate() {
            if let (Some(rps), Some(after)) = (rps, after) {
                ratios[i].push(rps / after);
                let _ = write!(line, " {} {:.2}", names[i].0, rps / after);
            }
        }
        println!("\n{line}");
    }
    let mut outcomes = Vec::new();
    for (((name, what), r), ratio) in names.iter().zip(rounds).zip(ratios) {
        if r.is_empty() {
            continue;
        }
        match combine(name, what, r, ratio, &o.out) {
            Ok(outcome) => outcomes.push(outcome),
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    let mut table = String::new();
    let _ = writeln!(
        table,
        "| config | OK | KO | req/s | p50 (ms) | p99 (ms) | log lines written | lines dropped | req/s vs after (median of rounds) | each round |"
    );
    let _ = writeln!(table, "|---|---|---|---|---|---|---|---|---|---|");
    for x in &outcomes {
        let each: Vec<String> = x.ratios.iter().map(|r| format!("{r:.2}")).collect();
        let _ = writeln!(
            table,
            "| {} | {} | {} | {:.0} | {:.1} | {:.1} | {} | {} | {:.2} | {} |",
            x.name,
            x.ok,
            x.ko,
            x.rps,
            x.p50,
            x.p99,
            x.lines,
            x.dropped,
            median(&x.ratios),
            each.join(" / ")
        );
    }
    let summary = format!(
        "# The seed experiment\n\n{} closed-model users for {} s per config ({} rounds of {} s, the configs taking turns), volley on {} thread(s), on this machine.\n\n{table}\nThe seed (DropWizard + Gatling, ~10 min): {SEED}.\n\n{}\n",
        o.users,
        o.duration.as_secs(),
        o.rounds,
        (o.duration / o.rounds).as_secs_f64(),
        o.volley_threads,
        outcomes
            .iter()
            .map(|x| format!("- {}: {} (report: {})", x.name, x.what, x.report.display()))
            .collect::<Vec<_>>()
            .join("\n")
    );
    println!("\n{summary}");
    let json = serde_json::json!({
        "users": o.users,
        "durationSeconds": o.duration.as_secs_f64(),
        "rounds": o.rounds,
        "volleyThreads": o.volley_threads,
        "seed": SEED,
        "configs": outcomes.iter().map(|x| serde_json::json!({
            "name": x.name, "ok": x.ok, "ko": x.ko, "rps": x.rps, "p50": x.p50, "p99": x.p99,
            "logLines": x.lines, "dropped": x.dropped, "ratioToAfter": median(&x.ratios),
            "ratioToAfterByRound": x.ratios,
        })).collect::<Vec<_>>(),
        "failures": failures,
    });
    let written = std::fs::write(o.out.join("summary.md"), &summary).and_then(|()| {
        std::fs::write(
            o.out.join("summary.json"),
            serde_json::to_vec_pretty(&json).unwrap_or_default(),
        )
    });
    if let Err(e) = written {
        failures.push(format!("cannot write the summary: {e}"));
    }
    println!("Summary: {}", o.out.join("summary.md").display());
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for f in &failures {
            eprintln!("realtime experiment: {f}");
        }
        ExitCode::from(1)
    }
}
