//! Gatling's console: the periodic block and the end-of-run tables.

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use crate::engine::Run;
use crate::scenario::{Scenario, Shape, Simulation};
use crate::stats::{Ranges, Stats, Summary, Tally, rate};

const WIDTH: usize = 120;

fn rule(out: &mut String, c: char) {
    out.extend(std::iter::repeat_n(c, WIDTH));
    out.push('\n');
}

fn heading(out: &mut String, title: &str, tail: &str) {
    let head = format!("---- {title} ");
    let fill = WIDTH.saturating_sub(head.chars().count() + tail.chars().count());
    out.push_str(&head);
    out.extend(std::iter::repeat_n('-', fill));
    out.push_str(tail);
    out.push('\n');
}

fn request_row(out: &mut String, name: &str, t: &Tally) {
    let label = format!("> {name}");
    let _ = writeln!(
        out,
        "{label:<85}|{:>10} |{:>10} |{:>9}",
        t.requests, t.oks, t.kos
    );
}

/// The block printed every `consoleInterval`, for `run` of `simulation` `elapsed` into it.
pub fn block(run: &Run, stats: &Stats, elapsed: Duration, simulation: &Simulation) -> String {
    let mut out = String::new();
    rule(&mut out, '=');
    let now = jiff::ZonedDateTime::now();
    let stamp = now.strftime("%Y-%m-%d %H:%M:%S %Z").to_string();
    let since = format!("{}s elapsed", elapsed.as_secs());
    let _ = writeln!(
        out,
        "{stamp}{since:>width$}",
        width = WIDTH - stamp.chars().count()
    );
    heading(&mut out, "Requests", "|---Total---|-----OK----|----KO----");
    request_row(&mut out, "Global", &stats.global);
    for (name, t) in &stats.by_name {
        request_row(&mut out, name, t);
    }
    if !stats.groups.is_empty() {
        heading(&mut out, "Groups", "|---Total---|-----OK----|----KO----");
        for (path, g) in &stats.groups {
            request_row(&mut out, path, &g.cumulated);
        }
    }
    if !stats.errors.is_empty() {
        heading(&mut out, "Errors", "");
        errors(&mut out, stats);
    }
    for (users, scenario) in run.users.iter().zip(&simulation.scenarios) {
        out.push('\n');
        heading(&mut out, &users.name, "");
        let planned = users.planned.load(Relaxed);
        let started = users.started.load(Relaxed);
        let done = users.done.load(Relaxed);
        let waiting = planned.saturating_sub(started);
        let active = started.saturating_sub(done);
        let share = progress(scenario, simulation, planned, done, elapsed);
        let bar_width = WIDTH - 8;
        let filled = ((share * bar_width as f64) as usize).min(bar_width);
        let _ = writeln!(
            out,
            "[{}{}]{:>5}%",
            "#".repeat(filled),
            " ".repeat(bar_width - filled),
            (share * 100.0) as u32
        );
        let _ = writeln!(
            out,
            "          waiting: {waiting:>9} / active: {active:>9}  / done: {done:>9}"
        );
    }
    rule(&mut out, '=');
    out
}

/// How far a scenario is, from 0 to 1: the users done of those planned in an open model;
/// the time elapsed of the injection's length in a closed one (any `constantConcurrentUsers`
/// or `rampConcurrentUsers` step), whose users are started as others finish, so that the
/// users planned so far are always nearly all done.
fn progress(
    scenario: &Scenario,
    simulation: &Simulation,
    planned: u64,
    done: u64,
    elapsed: Duration,
) -> f64 {
    let shapes: Vec<Shape> = scenario
        .injection
        .iter()
        .filter_map(|i| i.shape().ok())
        .collect();
    let closed = shapes
        .iter()
        .any(|s| matches!(s, Shape::Concurrent(..) | Shape::RampConcurrent(..)));
    if closed {
        let length: Duration = shapes
            .iter()
            .map(|s| match *s {
                Shape::AtOnce(_) => Duration::ZERO,
                Shape::Ramp(_, d)
                | Shape::Rate(_, _, d)
                | Shape::Nothing(d)
                | Shape::Concurrent(_, d)
                | Shape::RampConcurrent(_, _, d) => d,
            })
            .sum::<Duration>()
            .min(simulation.max_duration.get());
        if length.is_zero() {
            return 1.0;
        }
        return (elapsed.as_secs_f64() / length.as_secs_f64()).min(1.0);
    }
    if planned == 0 {
        0.0
    } else {
        done as f64 / planned as f64
    }
}

fn errors(out: &mut String, stats: &Stats) {
    let total = stats.errors.total();
    let mut sorted: Vec<(&String, &u64)> = stats.errors.iter().collect();
    sorted.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (message, n) in sorted {
        let share = 100.0 * *n as f64 / total.max(1) as f64;
        let label = format!("> {message}");
        let label: String = label.chars().take(WIDTH - 20).collect();
        let _ = writeln!(out, "{label:<100}{n:>9} ({share:>5.2}%)");
    }
}

/// The end of a run: Global Information, the response time distribution, errors.
pub fn summary(stats: &Stats, elapsed: Duration, bounds: (u64, u64)) -> String {
    let mut out = String::new();
    rule(&mut out, '=');
    heading(&mut out, "Global Information", "");
    let all = Summary::counted(&stats.global.all, stats.global.requests);
    let ok = Summary::counted(&stats.global.ok, stats.global.oks);
    let ko = Summary::counted(&stats.global.ko, stats.global.kos);
    let row = |out: &mut String, label: &str, f: &dyn Fn(&Summary) -> String| {
        let _ = writeln!(
            out,
            "> {label:<80}{:>10} ({:>8}) ({:>8})",
            f(&all),
            f(&ok),
            f(&ko)
        );
    };
    let _ = writeln!(
        out,
        "> {:<80}{:>10} ({:>8}) ({:>8})",
        "", "Total", "OK", "KO"
    );
    row(&mut out, "request count", &|s| s.count.to_string());
    for (label, figure) in crate::stats::TIME_ROWS {
        row(&mut out, label, &|s| format!("{:.2}", figure(s)));
    }
    row(&mut out, "mean throughput (rps)", &|s| {
        format!("{:.2}", rate(s.count, elapsed))
    });
    heading(&mut out, "Response Time Distribution", "");
    let (low, high) = bounds;
    let g = &stats.global;
    let ranges = Ranges::of(&g.ok, g.oks, g.kos, [low, high]);
    let total = g.requests.max(1);
    let [below, between, above] = Ranges::ok_labels([low, high]);
    for (label, n) in [
        (format!("OK: {below}"), ranges.below),
        (format!("OK: {between}"), ranges.between),
        (format!("OK: {above}"), ranges.above),
        ("KO".to_owned(), ranges.failed),
    ] {
        let _ = writeln!(
            out,
            "> {label:<80}{n:>10} ({:>3.0}%)",
            100.0 * n as f64 / total as f64
        );
    }
    connections(&mut out, stats);
    groups(&mut out, stats);
    if !stats.errors.is_empty() {
        heading(&mut out, "Errors", "");
        errors(&mut out, stats);
    }
    rule(&mut out, '=');
    out
}

/// Each group's executions, their cumulated response times (the sum of their requests') and
/// their durations (pauses included).
fn groups(out: &mut String, stats: &Stats) {
    if stats.groups.is_empty() {
        return;
    }
    heading(out, "Groups", "");
    for (path, g) in &stats.groups {
        let t = &g.cumulated;
        let _ = writeln!(
            out,
            "> {:<80}{:>10}",
            format!("{path}: count (OK / KO)"),
            format!("{} ({} / {})", t.requests, t.oks, t.kos)
        );
        for (label, s) in [
            (
                "cumulated response time",
                Summary::counted(&t.all, t.requests),
            ),
            ("duration", Summary::of(g.duration())),
        ] {
            let _ = writeln!(
                out,
                "> {:<80}{:>10}",
                format!("  {label} (ms): mean / p50 / p99 / max"),
                format!("{:.2} / {:.2} / {:.2} / {:.2}", s.mean, s.p50, s.p99, s.max)
            );
        }
    }
}

/// The connections opened, and their connect and TLS handshake times (not in the response
/// times above unless a request waited for its connection to open).
fn connections(out: &mut String, stats: &Stats) {
    if stats.connect.is_empty() {
        return;
    }
    heading(out, "Connections", "");
    let _ = writeln!(
        out,
        "> {:<80}{:>10}",
        "connections opened",
        stats.connect.len()
    );
    for (label, h) in [
        ("connect time (ms)", &stats.connect),
        ("TLS handshake time (ms)", &stats.tls_handshake),
    ] {
        if h.is_empty() {
            continue;
        }
        let s = Summary::of(h);
        let _ = writeln!(
            out,
            "> {:<80}{:>10}",
            format!("{label}: min / p50 / p99 / max"),
            format!("{:.1} / {:.1} / {:.1} / {:.1}", s.min, s.p50, s.p99, s.max)
        );
    }
}

/// One line when a closed model's corrected p99 is far above its raw p99 (the service time
/// from each send): the users waited for the server, so what they measured is not what users
/// arriving on their own would see.
pub fn omission_note(stats: &Stats, simulation: &crate::scenario::Simulation) -> Option<String> {
    let closed = simulation.corrects_omission();
    let (all, raw) = (&stats.global.all, &stats.global.service);
    if !closed || all.is_empty() || raw.is_empty() {
        return None;
    }
    let ms = |v: u64| v as f64 / 1000.0;
    let (corrected, measured) = (
        ms(all.value_at_quantile(0.99)),
        ms(raw.value_at_quantile(0.99)),
    );
    (corrected > 2.0 * measured && corrected - measured >= 10.0).then(|| {
        format!(
            "Coordinated omission: p99 {corrected:.0} ms corrected (coordinatedOmission: {}), {measured:.0} ms as sent: \
             the closed model's users waited for the server; an open model (constantUsersPerSec) measures what arriving users see\n",
            simulation.coordinated_omission.name()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Injection, Scenario};

    fn simulation(injection: Injection) -> Simulation {
        Simulation {
            base_url: "http://127.0.0.1:1".into(),
            scenarios: vec![Scenario {
                name: "s".into(),
                injection: vec![injection],
                steps: Vec::new(),
            }],
            ..Default::default()
        }
    }

    /// The progress bar of a closed model is the time elapsed of the injection's length (5 s
    /// of 10: 50 %), although every user started so far is done; an open model's is the
    /// users done of those planned.
    ///
    /// Catches: a closed model's bar read from its users (99 % from the first block on).
    #[test]
    fn the_progress_bar_follows_time_in_a_closed_model_and_users_in_an_open_one() {
        let bar = |sim: &Simulation, planned: u64, done: u64, elapsed: u64| {
            let run = crate::engine::prepare(sim, std::path::Path::new(".")).unwrap();
            let users = &run.users[0];
            users.planned.store(planned, Relaxed);
            users.started.store(planned, Relaxed);
            users.done.store(done, Relaxed);
            let text = block(&run, &Stats::default(), Duration::from_secs(elapsed), sim);
            text.lines()
                .find(|l| l.starts_with('['))
                .map(|l| l[l.rfind(']').unwrap() + 1..].trim().to_owned())
                .unwrap()
        };
        let closed = simulation(Injection {
            constant_concurrent_users: Some(4),
            during: Some(ferrowizard_config::Duration::seconds(10)),
            ..Default::default()
        });
        assert_eq!(bar(&closed, 400, 399, 5), "50%");
        assert_eq!(bar(&closed, 800, 800, 12), "100%");
        let open = simulation(Injection {
            at_once_users: Some(10),
            ..Default::default()
        });
        assert_eq!(bar(&open, 10, 3, 5), "30%");
    }
}
