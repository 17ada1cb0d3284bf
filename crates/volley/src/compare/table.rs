//! A comparison as tables: Markdown for a pull request's comment, aligned text for the
//! console. Both show the same cells.

use std::fmt::Write as _;

use super::threshold::{Limit, Metric};
use super::{Comparison, SHOWN, Verdict};

/// The figures' table: a line per row and metric, with the base's, the new run's, and the
/// change.
fn figures(c: &Comparison) -> Vec<[String; 5]> {
    let mut lines = Vec::new();
    for row in &c.rows {
        let requests = |f: &Option<super::Figures>| {
            f.as_ref()
                .map_or("-".to_owned(), |f| f.requests.to_string())
        };
        lines.push([
            row.name.clone(),
            "requests".into(),
            requests(&row.base),
            requests(&row.new),
            match (&row.base, &row.new) {
                (None, _) => "new request".into(),
                (_, None) => "gone".into(),
                (Some(b), Some(n)) => relative(b.requests as f64, n.requests as f64),
            },
        ]);
        for metric in SHOWN {
            let base = row.base.as_ref().and_then(|f| f.value(metric));
            let new = row.new.as_ref().and_then(|f| f.value(metric));
            lines.push([
                String::new(),
                metric.to_string(),
                figure(base, metric),
                figure(new, metric),
                change(base, new, metric),
            ]);
        }
    }
    lines
}

fn figure(v: Option<f64>, metric: Metric) -> String {
    match (v, metric) {
        (None, _) => "-".into(),
        (Some(v), Metric::Ko) => format!("{v:.2}%"),
        (Some(v), Metric::Rps) => format!("{v:.1}"),
        (Some(v), _) => format!("{v:.2} ms"),
    }
}

fn relative(base: f64, new: f64) -> String {
    if base == 0.0 {
        return if new == 0.0 {
            "0%".into()
        } else {
            "new".into()
        };
    }
    format!("{:+.1}%", 100.0 * (new - base) / base)
}

fn change(base: Option<f64>, new: Option<f64>, metric: Metric) -> String {
    let (Some(b), Some(n)) = (base, new) else {
        return String::new();
    };
    match metric {
        Metric::Ko => format!("{:+.2} pp", n - b),
        Metric::Rps => relative(b, n),
        _ => format!("{:+.2} ms ({})", n - b, relative(b, n)),
    }
}

/// The thresholds' table: a line per verdict.
fn verdicts(c: &Comparison) -> Vec<[String; 5]> {
    c.verdicts
        .iter()
        .map(|v| {
            [
                v.description(),
                figure(v.base, v.threshold.metric),
                figure(v.new, v.threshold.metric),
                worse(v),
                if v.passed { "passed" } else { "FAILED" }.into(),
            ]
        })
        .collect()
}

/// How much worse, in the limit's terms.
fn worse(v: &Verdict) -> String {
    match (v.worse, v.threshold.limit) {
        (None, _) => "-".into(),
        (Some(w), Limit::Relative(_)) => format!("{w:+.1}%"),
        (Some(w), Limit::Absolute(_)) => format!("{w:+.2}{}", v.threshold.metric.unit()),
    }
}

fn escape(cell: &str) -> String {
    cell.replace('|', "\\|").replace('\n', " ")
}

/// The comparison in Markdown: a heading naming the two runs, the figures, and the
/// thresholds with the verdict.
///
/// ```
/// use std::time::Duration;
/// use volley::compare::{compare, table};
/// use volley::results::Results;
/// use volley::stats::Stats;
///
/// let mut stats = Stats::new(1);
/// stats.record("home", 0, 2_000, 2_000, None, 1);
/// let run = Results::new(&stats, String::new(), Duration::from_secs(1), false, Vec::new());
/// let c = compare(&run, "base.json", &run, "new.json", &["p99=10%".parse()?])?;
/// let md = table::markdown(&c, "base.json", "new.json");
/// assert!(md.contains("| Global: p99 at most 10% higher | 2.00 ms | 2.00 ms | +0.0% | passed |"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn markdown(c: &Comparison, base: &str, new: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "### volley compare: `{}` → `{}`\n",
        base.replace('`', "'"),
        new.replace('`', "'")
    );
    if c.verdicts.is_empty() {
        out.push_str("No thresholds given.\n\n");
    } else {
        let failed = c.verdicts.iter().filter(|v| !v.passed).count();
        let _ = writeln!(
            out,
            "**{}**: {} of {} thresholds failed.\n",
            if failed == 0 { "Passed" } else { "Failed" },
            failed,
            c.verdicts.len()
        );
        out.push_str("| Threshold | Base | New | Worse by | Result |\n|---|--:|--:|--:|---|\n");
        for line in verdicts(c) {
            let _ = writeln!(out, "| {} |", line.map(|s| escape(&s)).join(" | "));
        }
        out.push('\n');
    }
    out.push_str("| Request | Metric | Base | New | Change |\n|---|---|--:|--:|--:|\n");
    for line in figures(c) {
        let _ = writeln!(out, "| {} |", line.map(|s| escape(&s)).join(" | "));
    }
    out.push_str(
        "\nTimes are the OK responses', in ms, from each run's exact histograms; ko is the KO \
         share, rps responses a second.\n",
    );
    out
}

/// The comparison as aligned text for the console.
pub fn text(c: &Comparison, base: &str, new: &str) -> String {
    let mut out = format!("Comparing {base} (base) with {new} (new)\n\n");
    align(
        &mut out,
        ["Request", "Metric", "Base", "New", "Change"],
        &figures(c),
    );
    if !c.verdicts.is_empty() {
        out.push('\n');
        align(
            &mut out,
            ["Threshold", "Base", "New", "Worse by", "Result"],
            &verdicts(c),
        );
    }
    out
}

fn align(out: &mut String, head: [&str; 5], lines: &[[String; 5]]) {
    let mut widths = head.map(|h| h.chars().count());
    for line in lines {
        for (w, cell) in widths.iter_mut().zip(line) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut write = |cells: [&str; 5]| {
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            let pad = w - cell.chars().count();
            if i == 4 {
                out.push_str(cell);
            } else if i < 2 {
                out.push_str(cell);
                out.extend(std::iter::repeat_n(' ', pad));
            } else {
                out.extend(std::iter::repeat_n(' ', pad));
                out.push_str(cell);
            }
            out.push_str(if i == 4 { "\n" } else { "  " });
        }
    };
    write(head);
    for line in lines {
        write(line.each_ref().map(String::as_str));
    }
}
