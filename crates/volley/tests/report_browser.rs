//! The HTML report in a real browser: a `results.json` whose figures reach five digits is
//! rendered by `volley report`, loaded in headless Chromium at 1,200 px wide, and what the
//! page recorded about itself after drawing (its charts draw on canvases, which a DOM dump
//! cannot read) is checked: axis labels in full, no sideways scroll, the response time
//! ranges, no red for a KO count of 0, no script error. Whether each axis label fits inside
//! its axis is measured by a script of the test's own, run in the page ([`PROBE`]), not by
//! the page's functions that size the axes.
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

/// The test's own measure of the charts' axes, run in the page before the page's chart
/// script. It keeps every uPlot the page makes (uPlot's constructor behind a `Proxy`) and,
/// once the page has loaded and drawn, lays out each label uPlot drew on each axis (uPlot's
/// own list of them) as text in a `<span>` of its own, in the axis's font, and records on
/// `<body>` as `data-probe`, for each chart and axis: the room uPlot's element for the axis
/// takes in the page (its width for a vertical axis, its height for a horizontal one), the
/// ticks and gap uPlot draws between the plot and the labels, and each label's width (a
/// vertical axis) or height (a horizontal one, its lines `lineGap` font sizes apart as uPlot
/// draws them). It calls none of the page's functions: a page that sizes an axis too small,
/// or measures its labels too short, shows here.
const PROBE: &str = r#"
const probedCharts = [];
uPlot = new Proxy(uPlot, {
  construct(target, args) {
    const u = Reflect.construct(target, args);
    probedCharts.push(u);
    return u;
  },
});
function probeText(text, font) {
  const span = document.createElement("span");
  span.style.cssText = "position: absolute; left: 0; top: 0; visibility: hidden; white-space: pre";
  span.style.font = font;
  span.textContent = text;
  document.body.appendChild(span);
  const box = span.getBoundingClientRect();
  span.remove();
  return box;
}
addEventListener("load", () => setTimeout(() => {
  const ratio = uPlot.pxRatio;
  const found = probedCharts.map(u => ({
    chart: u.root.parentElement.id,
    axes: u.axes.map(axis => {
      const vertical = axis.side % 2 == 1;
      const element = axis._el ? axis._el.getBoundingClientRect() : null;
      const labels = (axis._values || []).filter(v => v != null).map(String);
      return {
        side: axis.side,
        room: element && (vertical ? element.width : element.height),
        before: (axis.ticks.show ? axis.ticks.size : 0) + axis.gap,
        labels: labels.map(label => {
          const lines = label.split("\n").map(line => probeText(line, axis.font[0]));
          const extent = vertical
            ? Math.max(...lines.map(box => box.width))
            : (lines.length - 1) * axis.lineGap * axis.font[1] + lines[lines.length - 1].height;
          return { label, extent: extent / ratio };
        }),
      };
    }),
  }));
  // Angle brackets as JSON's escapes: the attribute reads back the same however the DOM
  // dump writes them.
  document.body.dataset.probe = JSON.stringify(found)
    .replace(/</g, "\\u003c")
    .replace(/>/g, "\\u003e");
}));
"#;

/// How far a label may reach past its axis's room, px: the page sizes an axis to whole
/// pixels from the canvas's measure of its labels, which may differ from a `<span>`'s by a
/// fraction of a pixel. A label cut by an axis too small is cut by more.
const SLACK: f64 = 1.0;

/// A copy of `page` beside it with [`PROBE`] run just before the page's own chart script
/// (its last script), so that the probe sees every chart made: the copy's path.
fn with_probe(page: &Path) -> PathBuf {
    let html = std::fs::read_to_string(page).unwrap();
    let at = html
        .rfind("<script>")
        .unwrap_or_else(|| panic!("no script in {}", page.display()));
    let probed = page.with_file_name("probed.html");
    let text = format!("{}<script>{PROBE}</script>\n{}", &html[..at], &html[at..]);
    std::fs::write(&probed, text).unwrap();
    probed
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

/// The report of [`results`] in headless Chromium at 1,200 px: no script error; every label
/// of every chart's axes inside the room uPlot gave its axis, as the test's own script
/// measures the labels laid out in the axis's font ([`PROBE`]); the rates' five-digit labels
/// written in full; no sideways scroll; the response time ranges in the chart and the table;
/// KO counts in red only above 0.
///
/// Catches: an axis sized too small for its labels (the page's sizing function giving less
/// than they need, or measuring them short: the labels drawn cut), labels abbreviated, a
/// table that widens the page, the ranges at other bounds, a KO count of 0 in red.
#[test]
fn the_report_reads_in_full_at_1200_px_in_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let page = with_probe(&report(dir.path()));
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

    // Every axis of every chart has room for its labels, as the probe measured them: a
    // label's width (a vertical axis) or height (a horizontal one) within the axis's room
    // less the ticks and gap uPlot draws before it.
    let charts = ["users", "rps", "percentiles", "distribution", "ranges"];
    let probe = recorded(&dom, "report", "data-probe");
    let probed = probe.as_array().unwrap();
    let ids: Vec<&str> = probed
        .iter()
        .map(|c| c["chart"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(ids, charts, "the charts the probe saw made");
    for chart in probed {
        let id = chart["chart"].as_str().unwrap();
        let axes = chart["axes"].as_array().unwrap();
        assert_eq!(axes.len(), 2, "#{id}: {axes:?}");
        let drawn = recorded(&dom, id, "data-axes");
        for (i, axis) in axes.iter().enumerate() {
            let labels = axis["labels"].as_array().unwrap();
            assert!(!labels.is_empty(), "#{id}: an axis without labels: {axis}");
            assert_eq!(
                labels.iter().map(|l| &l["label"]).collect::<Vec<_>>(),
                drawn[i]["labels"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .collect::<Vec<_>>(),
                "#{id}: the probe's labels are the ones the page recorded"
            );
            let room = axis["room"]
                .as_f64()
                .unwrap_or_else(|| panic!("#{id}: uPlot made no element for the axis {axis}"));
            let before = axis["before"].as_f64().unwrap();
            let across = if axis["side"].as_u64().unwrap() % 2 == 1 {
                "wide"
            } else {
                "tall"
            };
            for label in labels {
                let text = label["label"].as_str().unwrap();
                let extent = label["extent"]
                    .as_f64()
                    .unwrap_or_else(|| panic!("#{id}: {text:?} was not measured: {axis}"));
                assert!(
                    text.is_empty() || extent >= 1.0,
                    "#{id}: {text:?} measured {extent} px: the probe measured no text"
                );
                assert!(
                    extent <= room - before + SLACK,
                    "#{id}: the label {text:?} is {extent:.1} px {across}, but its axis has \
                     {room} px, {before} px of them before the labels: it is cut"
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
