//! The HTML report in a real browser: a `results.json` whose figures reach five digits is
//! rendered by `volley report`, loaded in headless Chromium at 1,200 px wide, and what the
//! page recorded about itself after drawing (its charts draw on canvases, which a DOM dump
//! cannot read) is checked: axis labels in full and inside their axes, no sideways scroll,
//! the response time ranges, no red for a KO count of 0, no script error.
//!
//! Needs Chromium (`apt-get install chromium`); without it the test fails and says so.

use std::path::{Path, PathBuf};
use std::time::Duration;

use assert_cmd::Command;
use volley::results::Results;
use volley::stats::Stats;

/// A request name longer than a table cell, with nowhere to break a line: the per-request
/// table must not widen the page for it.
const LONG_NAME: &str = "submitLimitOrderWithRiskChecksAndAConfirmationStepForTheEuroDesk";

/// Chromium, from `PATH` or where Debian's package puts it.
fn chromium() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|dir| dir.join("chromium"))
        .find(|p| p.is_file());
    on_path
        .or_else(|| Some(PathBuf::from("/usr/bin/chromium")).filter(|p| p.is_file()))
        .unwrap_or_else(|| {
            panic!(
                "this test loads the report in headless Chromium, which is not installed: \
                 `apt-get install chromium` (Debian's package) and run it again"
            )
        })
}

/// Three seconds of 12,250 responses a second: `quote`, 11,000 OK under 500 ms a second
/// (never a KO); [`LONG_NAME`], 600 OK at 700 ms, 400 OK at 1,500 ms and 250 KO a second.
/// The distribution bounds are `[500, 1000]`, so the ranges are 33,000, 1,800, 1,200 and
/// 750.
fn results() -> Results {
    let mut stats = Stats::new(1);
    for second in 0..3 {
        for i in 0..11_000u64 {
            let micros = 20_000 + (i % 380) * 1_000;
            stats.record("quote", second, micros, micros, None, 40);
        }
        for i in 0..1_250u64 {
            let (micros, error) = match i {
                0..600 => (700_000, None),
                600..1_000 => (1_500_000, None),
                _ => (50_000, Some("status.find.in(200), but actually found 503")),
            };
            stats.record(LONG_NAME, second, micros, micros, error, 40);
        }
    }
    stats.roll_to(3, 40);
    let mut results = Results::new(
        &stats,
        "2025-01-01T00:00:00Z".into(),
        Duration::from_secs(3),
        false,
        Vec::new(),
    );
    results.distribution_bounds = [500, 1_000];
    results
}

/// `volley report` of [`results`], written in `dir`: the page's path.
fn report(dir: &Path) -> PathBuf {
    let file = dir.join("results.json");
    std::fs::write(&file, serde_json::to_vec_pretty(&results()).unwrap()).unwrap();
    Command::cargo_bin("volley")
        .unwrap()
        .arg("report")
        .arg(&file)
        .timeout(Duration::from_secs(60))
        .assert()
        .success();
    dir.join("index.html")
}

/// Loads `page` in headless Chromium with a 1,200 px wide window, offline, and gives the DOM
/// after its scripts ran and Chromium's log.
fn load(page: &Path, profile: &Path) -> (String, String) {
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--lang=en-US",
            "--window-size=1200,2000",
            "--virtual-time-budget=5000",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("file://{}", page.display()))
        .timeout(Duration::from_secs(120))
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    let log = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        dom.contains("</html>"),
        "Chromium dumped no page ({}):\n{log}",
        out.status
    );
    (dom, log)
}

/// An attribute's text as the DOM dump escapes it.
fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&nbsp;", "\u{a0}")
        .replace("&amp;", "&")
}

/// The attribute `name` of the element whose `id` is `id`.
fn attribute(dom: &str, id: &str, name: &str) -> Option<String> {
    let tag = regex::Regex::new(&format!(r#"<[a-z]+ [^>]*id="{id}"[^>]*>"#)).unwrap();
    let tag = tag.find(dom)?.as_str();
    let value = regex::Regex::new(&format!(r#"\s{name}="([^"]*)""#)).unwrap();
    Some(unescape(&value.captures(tag)?[1]))
}

/// The JSON the page put in the attribute `name` of `id`.
fn recorded(dom: &str, id: &str, name: &str) -> serde_json::Value {
    let text = attribute(dom, id, name)
        .unwrap_or_else(|| panic!("the page recorded no {name} on #{id}; did its script run?"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name} on #{id}: {e}: {text}"))
}

/// One table cell: its attributes and its text.
#[derive(Debug)]
struct Cell {
    attributes: String,
    text: String,
}

/// The rows of the table whose `id` is `id`, each its cells (header cells too).
fn table(dom: &str, id: &str) -> Vec<Vec<Cell>> {
    let start = dom
        .find(&format!(r#"<table id="{id}""#))
        .unwrap_or_else(|| panic!("no table #{id}"));
    let end = start + dom[start..].find("</table>").unwrap();
    let row = regex::Regex::new(r"(?s)<tr[^>]*>(.*?)</tr>").unwrap();
    let cell = regex::Regex::new(r"(?s)<t[dh]([^>]*)>(.*?)</t[dh]>").unwrap();
    row.captures_iter(&dom[start..end])
        .map(|r| {
            cell.captures_iter(&r[1])
                .map(|c| Cell {
                    attributes: c[1].to_owned(),
                    text: unescape(&c[2]),
                })
                .collect()
        })
        .collect()
}

/// A label as a number: `"12,000"` is 12000; `None` if it is not a whole number written in
/// full with thousands grouped.
fn number(label: &str) -> Option<u64> {
    let grouped = regex::Regex::new(r"^\d{1,3}(,\d{3})*$").unwrap();
    grouped
        .is_match(label)
        .then(|| label.replace(',', "").parse().ok())
        .flatten()
}

#[test]
fn the_report_reads_in_full_at_1200_px_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let page = report(dir.path());
    let profile = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let (dom, log) = load(&page, profile.path());
    eprintln!("Chromium: {:.1} s", started.elapsed().as_secs_f64());

    // No script error. Chromium logs every console message as `INFO:CONSOLE`, whatever its
    // level, and the page writes none: any there is the browser's complaint, or an error.
    let console: Vec<&str> = log
        .lines()
        .filter(|l| l.contains(":CONSOLE") || l.contains("Uncaught"))
        .collect();
    assert!(
        console.is_empty(),
        "console messages:\n{}",
        console.join("\n")
    );
    assert_eq!(
        recorded(&dom, "report", "data-errors"),
        serde_json::json!([]),
        "errors the page caught"
    );

    // Every axis of every chart has room for its labels.
    let charts = ["users", "rps", "percentiles", "distribution", "ranges"];
    for id in charts {
        let axes = recorded(&dom, id, "data-axes");
        let axes = axes.as_array().unwrap();
        assert_eq!(axes.len(), 2, "#{id}: {axes:?}");
        for axis in axes {
            let labels = axis["labels"].as_array().unwrap();
            let fits = axis["fits"].as_array().unwrap();
            assert!(!labels.is_empty(), "#{id}: an axis without labels: {axis}");
            assert_eq!(labels.len(), fits.len(), "#{id}: {axis}");
            for (label, fit) in labels.iter().zip(fits) {
                assert_eq!(
                    fit,
                    &serde_json::json!(true),
                    "#{id}: the label {label} does not fit its axis (it is cut): {axis}"
                );
            }
        }
    }
    // The rates reach 12,250 a second: the y-axis labels are five digits, written in full.
    let axes = recorded(&dom, "rps", "data-axes");
    let y: Vec<&str> = axes[1]["labels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap())
        .collect();
    let values: Vec<u64> = y
        .iter()
        .map(|l| number(l).unwrap_or_else(|| panic!("y-axis label {l:?} is no number: {y:?}")))
        .collect();
    assert!(y.contains(&"10,000"), "{y:?}");
    assert!(
        values.iter().max() >= Some(&12_250),
        "a label at or above the highest rate: {y:?}"
    );

    // No sideways scroll: the page is no wider than the window's 1,200 px.
    let width = |name: &str| {
        let value = recorded(&dom, "report", name);
        value
            .as_u64()
            .unwrap_or_else(|| panic!("{name} is no width: {value}"))
    };
    let (scroll, client) = (width("data-scroll-width"), width("data-client-width"));
    assert_eq!(width("data-window-width"), 1_200, "the window's width");
    assert!(
        scroll <= client,
        "the page scrolls sideways: {scroll} px wide in {client} px"
    );

    // The ranges at the results' bounds (500 and 1,000 ms), in the chart and in the table.
    let labels = [
        "t < 500 ms",
        "500 ms <= t < 1000 ms",
        "t >= 1000 ms",
        "failed",
    ];
    let counts = [33_000u64, 1_800, 1_200, 750];
    assert_eq!(
        recorded(&dom, "ranges", "data-axes")[0]["labels"],
        serde_json::json!(labels),
        "the ranges chart's bars"
    );
    assert_eq!(
        recorded(&dom, "ranges", "data-counts"),
        serde_json::json!(counts),
        "the ranges chart's bars"
    );
    let rows = table(&dom, "ranges-table");
    let shown: Vec<(&str, &str)> = rows
        .iter()
        .skip(1)
        .map(|r| (r[0].text.as_str(), r[1].text.as_str()))
        .collect();
    assert_eq!(
        shown,
        [
            (labels[0], "33000"),
            (labels[1], "1800"),
            (labels[2], "1200"),
            (labels[3], "750")
        ]
    );
    assert!(
        rows[4][1].attributes.contains(r#"class="ko""#),
        "failed responses are red: {:?}",
        rows[4]
    );

    // KO counts: 0 is not red, more is.
    let rows = table(&dom, "requests");
    let ko = |name: &str| {
        let row = rows
            .iter()
            .find(|r| r[0].text == name)
            .unwrap_or_else(|| panic!("no row {name}: {rows:?}"));
        assert_eq!(
            row[3].text.parse::<u64>().ok(),
            Some(if name == "quote" { 0 } else { 750 })
        );
        row[3].attributes.contains(r#"class="ko""#)
    };
    assert!(!ko("quote"), "a KO count of 0 is shown in red");
    assert!(ko(LONG_NAME), "a KO count above 0 is not shown in red");
}
