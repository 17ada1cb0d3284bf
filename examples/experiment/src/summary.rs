//! Each config's rounds together (one report each), and the summary of them all:
//! `summary.md` (the table, what it says, what became of the services' output) and
//! `summary.json`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use volley::results::{Results, Together};

use crate::output::{Ledger, Written, size};
use crate::verdict::{Compared, SEED};

/// One config in one round.
pub struct Round {
    /// The round (from 1).
    pub round: u32,
    /// volley's results.
    pub results: Results,
    /// What the service wrote.
    pub written: Written,
    /// Events its logging dropped.
    pub dropped: u64,
    /// Where its output was kept, if it was.
    pub kept: Option<PathBuf>,
}

/// One config over every round.
pub struct Outcome {
    /// The config.
    pub name: &'static str,
    /// What it is.
    pub what: &'static str,
    /// OK responses.
    pub ok: u64,
    /// KO responses.
    pub ko: u64,
    /// Responses a second, over every round.
    pub rps: f64,
    /// Median response time (ms).
    pub p50: f64,
    /// 99th percentile (ms).
    pub p99: f64,
    /// What the service wrote, over every round.
    pub written: Written,
    /// Events its logging dropped.
    pub dropped: u64,
    /// Its req/s over `after`'s in each round.
    pub ratios: Vec<f64>,
    /// Each round's output and where it was kept.
    pub rounds: Vec<(u32, Written, Option<PathBuf>)>,
    /// The HTML report.
    pub report: PathBuf,
    /// The merged `results.json`.
    pub results: PathBuf,
}

impl Outcome {
    /// Its comparison with `after`.
    pub fn compared(&self) -> Compared {
        Compared {
            name: self.name.to_owned(),
            ratios: self.ratios.clone(),
            ratio: median(&self.ratios),
            ok: self.ok,
            ko: self.ko,
        }
    }
}

/// The middle value (the mean of the two middle ones for an even count; 0 for none).
pub fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => 0.0,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// A config's rounds together: histograms merged exactly, the series one round after the
/// other; its HTML report (`<name>.html`) and merged results (`<name>.json`) written to
/// `out`.
pub fn combine(
    name: &'static str,
    what: &'static str,
    rounds: Vec<Round>,
    ratios: Vec<f64>,
    out: &Path,
) -> Result<Outcome, String> {
    let written = rounds.iter().map(|r| r.written).sum();
    let dropped = rounds.iter().map(|r| r.dropped).sum();
    let each = rounds
        .iter()
        .map(|r| (r.round, r.written, r.kept.clone()))
        .collect();
    let inputs: Vec<(String, Results)> = rounds
        .into_iter()
        .map(|r| (format!("round {}", r.round), r.results))
        .collect();
    let merged =
        volley::results::merge_as(&inputs, Together::OneAfterAnother).map_err(|e| e.to_string())?;
    let write = |path: PathBuf, bytes: &[u8]| {
        std::fs::write(&path, bytes)
            .map(|()| path.clone())
            .map_err(|e| format!("{}: {e}", path.display()))
    };
    let html = volley::report::render(&merged, &format!("Realtime interface: {name}"))
        .map_err(|e| e.to_string())?;
    let report = write(out.join(format!("{name}.html")), html.as_bytes())?;
    let json = serde_json::to_vec_pretty(&merged).map_err(|e| e.to_string())?;
    let results = write(out.join(format!("{name}.json")), &json)?;
    let g = &merged.global;
    Ok(Outcome {
        name,
        what,
        ok: g.ok.count,
        ko: g.ko.count,
        rps: g.mean_rps,
        p50: g.total.p50,
        p99: g.total.p99,
        written,
        dropped,
        ratios,
        rounds: each,
        report,
        results,
    })
}

/// What the summary is made of.
pub struct Summary<'a> {
    /// When the first round started (RFC 3339).
    pub started_at: &'a str,
    /// The command line.
    pub options: &'a crate::options::Options,
    /// Each config's outcome.
    pub outcomes: &'a [Outcome],
    /// What became of the services' output.
    pub ledger: &'a Ledger,
    /// The service binaries.
    pub services: &'a crate::services::Services,
    /// What went wrong.
    pub failures: &'a [String],
}

impl Summary<'_> {
    /// `summary.md`.
    pub fn markdown(&self) -> String {
        let o = self.options;
        let mut table = String::new();
        let _ = writeln!(
            table,
            "| config | OK | KO | req/s | p50 (ms) | p99 (ms) | log lines written | log bytes written | lines dropped | req/s vs after (median of rounds) | each round |"
        );
        let _ = writeln!(table, "|---|---|---|---|---|---|---|---|---|---|---|");
        for x in self.outcomes {
            let each: Vec<String> = x.ratios.iter().map(|r| format!("{r:.2}")).collect();
            let _ = writeln!(
                table,
                "| {} | {} | {} | {:.0} | {:.1} | {:.1} | {} | {} | {} | {:.2} | {} |",
                x.name,
                x.ok,
                x.ko,
                x.rps,
                x.p50,
                x.p99,
                x.written.lines,
                size(x.written.bytes),
                x.dropped,
                median(&x.ratios),
                each.join(" / ")
            );
        }
        let compared: Vec<Compared> = self.outcomes.iter().map(Outcome::compared).collect();
        let placed: Vec<(&str, u64, u64)> = self
            .outcomes
            .iter()
            .map(|x| (x.name, x.written.lines, x.ok + x.ko))
            .collect();
        let configs = self
            .outcomes
            .iter()
            .map(|x| format!("- {}: {} (report: {})", x.name, x.what, x.report.display()))
            .collect::<Vec<_>>()
            .join("\n");
        format!(
            "# The 2014 DropWizard logging report's experiment\n\n\
             Started {}: {} closed-model users for {} s per config ({} rounds of {} s, the configs taking turns), \
             volley on {} thread(s), on this machine.\n\n\
             {table}\n\
             The report (DropWizard + Gatling, ~10 min): {}.\n\n\
             {}\n\n\
             {}\n\n\
             {}\n\n\
             {configs}\n",
            self.started_at,
            o.users,
            o.duration.as_secs_f64(),
            o.rounds,
            o.round_length().as_secs_f64(),
            o.volley_threads,
            SEED.line(),
            crate::verdict::paragraph(&compared, &SEED),
            crate::curve::paragraph(&placed),
            self.ledger.paragraph(o.keep_logs),
        )
    }

    /// `summary.json`.
    pub fn json(&self) -> serde_json::Value {
        let o = self.options;
        let path = |p: &Option<PathBuf>| p.as_ref().map(|p| p.display().to_string());
        serde_json::json!({
            "startedAt": self.started_at,
            "users": o.users,
            "durationSeconds": o.duration.as_secs_f64(),
            "rounds": o.rounds,
            "volleyThreads": o.volley_threads,
            "report": SEED.line(),
            "services": {
                "realtime": self.services.realtime.display().to_string(),
                "realtime-bare": self.services.bare.display().to_string(),
                "found": self.services.found,
            },
            "configs": self.outcomes.iter().map(|x| serde_json::json!({
                "name": x.name, "ok": x.ok, "ko": x.ko, "rps": x.rps, "p50": x.p50, "p99": x.p99,
                "logLines": x.written.lines, "logBytes": x.written.bytes, "dropped": x.dropped,
                "ratioToAfter": median(&x.ratios), "ratioToAfterByRound": x.ratios,
                "report": x.report.display().to_string(),
                "results": x.results.display().to_string(),
                "byRound": x.rounds.iter().map(|(round, w, kept)| serde_json::json!({
                    "round": round, "logLines": w.lines, "logBytes": w.bytes, "kept": path(kept),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "logs": {
                "keep": o.keep_logs.name(),
                "writtenLines": self.ledger.written.lines,
                "writtenBytes": self.ledger.written.bytes,
                "keptBytes": self.ledger.kept.bytes,
                "keptForDiagnosisBytes": self.ledger.failed.bytes,
                "deletedBytes": self.ledger.deleted(),
                "kept": self.ledger.kept_folders.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
                "keptForDiagnosis": self.ledger.failed_folders.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
            },
            "failures": self.failures,
        })
    }
}
