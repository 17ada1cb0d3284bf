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
    duration: Duration,
    users: u32,
    out: PathBuf,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        duration: Duration::from_secs(30),
        users: 100,
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
            "--out" => o.out = PathBuf::from(value()?),
            other => {
                return Err(format!(
                    "unknown argument {other:?} (use --duration 30s, --users 100, --out DIR)"
                ));
            }
        }
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
            "server:\n  applicationConnectors: [{{type: http, port: 0, bindHost: 127.0.0.1}}]\n  adminConnectors: [{{type: http, port: 0}}]\n  \
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
    report: PathBuf,
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
    runtime: &tokio::runtime::Runtime,
) -> Result<Outcome, String> {
    println!("\n==== {} ({}) ====", setting.name, setting.what);
    let (mut child, app, admin) = start(exe, setting, &o.out)?;
    let healthy = match &admin {
        Some(a) => wait_healthy(a, "/healthcheck"),
        None => wait_healthy(&app, "/realtime/quotes/ACME"),
    };
    if let Err(e) = healthy {
        let _ = child.kill();
        return Err(e);
    }
    let sim = simulation(&app, o.users, o.duration);
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
    // Stop the service as an operator would, and let it write its logs.
    let _ = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status();
    let _ = child.wait();
    let results = volley::results::Results::new(&stats, String::new(), elapsed, false, Vec::new());
    let report = o.out.join(format!("{}.html", setting.name));
    let html = volley::report::render(&results, &format!("Realtime interface: {}", setting.name))
        .map_err(|e| e.to_string())?;
    std::fs::write(&report, html).map_err(|e| e.to_string())?;
    let g = &results.global;
    Ok(Outcome {
        name: setting.name,
        what: setting.what,
        ok: g.ok.count,
        ko: g.ko.count,
        rps: g.mean_rps,
        p50: g.total.p50,
        p99: g.total.p99,
        lines: count_lines(&setting.logs),
        dropped: dropped(&o.out.join(format!("{}.stderr", setting.name))),
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
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => {
            eprintln!("realtime experiment: {e}");
            return ExitCode::from(1);
        }
    };
    let Ok(runtime) = tokio::runtime::Runtime::new() else {
        eprintln!("realtime experiment: cannot start a runtime");
        return ExitCode::from(1);
    };
    let mut outcomes = Vec::new();
    let mut failures = Vec::new();
    for setting in settings(&o.out) {
        match run_one(&exe, &setting, &o, &runtime) {
            Ok(outcome) => {
                if outcome.ok == 0 {
                    failures.push(format!("{} served no request", outcome.name));
                }
                if let Some(log) = &setting.request_log {
                    let lines = count_lines(std::slice::from_ref(log));
                    // The health-check request is logged too.
                    if lines < outcome.ok + outcome.ko {
                        failures.push(format!(
                            "{}: {} request-log lines for {} responses",
                            outcome.name,
                            lines,
                            outcome.ok + outcome.ko
                        ));
                    }
                }
                outcomes.push(outcome);
            }
            Err(e) => failures.push(format!("{}: {e}", setting.name)),
        }
    }
    let after = outcomes
        .iter()
        .find(|o| o.name == "after")
        .map(|o| o.rps)
        .unwrap_or(0.0);
    let mut table = String::new();
    let _ = writeln!(
        table,
        "| config | OK | KO | req/s | p50 (ms) | p99 (ms) | log lines written | lines dropped | req/s vs after |"
    );
    let _ = writeln!(table, "|---|---|---|---|---|---|---|---|---|");
    for x in &outcomes {
        let ratio = if after > 0.0 { x.rps / after } else { 0.0 };
        let _ = writeln!(
            table,
            "| {} | {} | {} | {:.0} | {:.1} | {:.1} | {} | {} | {:.2} |",
            x.name, x.ok, x.ko, x.rps, x.p50, x.p99, x.lines, x.dropped, ratio
        );
    }
    let summary = format!(
        "# The seed experiment\n\n{} closed-model users for {} s per config, on this machine.\n\n{table}\nThe seed (DropWizard + Gatling, ~10 min): {SEED}.\n\n{}\n",
        o.users,
        o.duration.as_secs(),
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
        "seed": SEED,
        "configs": outcomes.iter().map(|x| serde_json::json!({
            "name": x.name, "ok": x.ok, "ko": x.ko, "rps": x.rps, "p50": x.p50, "p99": x.p99,
            "logLines": x.lines, "dropped": x.dropped, "ratioToAfter": if after > 0.0 { x.rps / after } else { 0.0 },
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
