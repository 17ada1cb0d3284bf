//! `index.html`: one self-contained file (uPlot embedded, no network needed) with the
//! figures of `results.json` and Gatling's charts.

use serde::Serialize;

use crate::results::Results;
use crate::stats::Ranges;

const UPLOT_JS: &str = include_str!("../assets/uPlot.iife.min.js");
const UPLOT_CSS: &str = include_str!("../assets/uPlot.min.css");
const TEMPLATE: &str = include_str!("../assets/report.html.j2");

/// Why the report could not be made.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The template failed.
    #[error("cannot render the report: {0}")]
    Template(#[from] minijinja::Error),
}

/// The charts' data: per series entry (`t`, its first second), the distribution, and the
/// response time ranges.
#[derive(Serialize, Default, Debug, PartialEq)]
struct Charts {
    t: Vec<u64>,
    active: Vec<u64>,
    /// Rates: an entry's counts divided by the seconds it covers.
    requests: Vec<f64>,
    ok: Vec<f64>,
    ko: Vec<f64>,
    p50: Vec<f64>,
    p95: Vec<f64>,
    p99: Vec<f64>,
    bucket: Vec<f64>,
    count: Vec<u64>,
    /// Gatling's four ranges (OK below, between and above `distributionBounds`, and KO):
    /// their labels and counts, empty when the OK histogram does not decode.
    range_labels: Vec<String>,
    ranges: Vec<u64>,
}

/// Responses by time, in `bins` equal slices from the fastest to the 99.9th percentile (the
/// slowest 0.1 % go to the last slice).
fn distribution(results: &Results, bins: usize) -> (Vec<f64>, Vec<u64>) {
    let Ok(h) = crate::results::decode_histogram(&results.global.histogram) else {
        return (Vec::new(), Vec::new());
    };
    if h.is_empty() {
        return (Vec::new(), Vec::new());
    }
    let low = h.min() as f64;
    let high = (h.value_at_quantile(0.999) as f64).max(low + 1.0);
    let width = (high - low) / bins as f64;
    let mut counts = vec![0u64; bins];
    for v in h.iter_recorded() {
        let i = (((v.value_iterated_to() as f64 - low) / width) as usize).min(bins - 1);
        counts[i] += v.count_at_value();
    }
    let buckets = (0..bins)
        .map(|i| (low + width * (i as f64 + 0.5)) / 1000.0)
        .collect();
    (buckets, counts)
}

/// When the run started, to the second, in UTC (a file's own text when it does not parse).
fn started(started_at: &str) -> String {
    match started_at.parse::<jiff::Timestamp>() {
        Ok(t) => t.strftime("%Y-%m-%d %H:%M:%S UTC").to_string(),
        Err(_) => started_at.to_owned(),
    }
}

fn charts(results: &Results) -> Charts {
    let mut charts = Charts::default();
    let interval = results.series_interval.max(1) as f64;
    for s in &results.seconds {
        // The last entry covers only what is left of the run: its counts are divided by
        // that, so a final partial second shows the rate it had, not a fall towards 0. A
        // sliver under a quarter of an entry is left out: a few responses in it would read
        // as a spike.
        let seconds = (results.duration_seconds - s.second as f64).min(interval);
        if seconds < interval / 4.0 {
            continue;
        }
        charts.t.push(s.second);
        charts.active.push(s.active_users);
        charts.requests.push(s.requests as f64 / seconds);
        charts.ok.push(s.ok as f64 / seconds);
        charts.ko.push(s.ko as f64 / seconds);
        charts.p50.push(s.p50);
        charts.p95.push(s.p95);
        charts.p99.push(s.p99);
    }
    (charts.bucket, charts.count) = distribution(results, 40);
    if let Some(ranges) = results.ranges() {
        charts.range_labels = Ranges::ok_labels(results.distribution_bounds).into();
        charts.range_labels.push("failed".into());
        charts.ranges = ranges.counts().into();
    }
    charts
}

/// The ranges table's rows: label, responses, their share of all (%), and whether they are
/// the failed ones (the last).
fn ranges(charts: &Charts) -> Vec<(String, u64, f64, bool)> {
    let total = charts.ranges.iter().sum::<u64>().max(1) as f64;
    let last = charts.ranges.len().saturating_sub(1);
    charts
        .range_labels
        .iter()
        .zip(&charts.ranges)
        .enumerate()
        .map(|(i, (label, &n))| (label.clone(), n, 100.0 * n as f64 / total, i == last))
        .collect()
}

/// Renders the report of `results`; `title` heads it (the scenario file, say).
pub fn render(results: &Results, title: &str) -> Result<String, ReportError> {
    let charts = charts(results);
    let g = &results.global;
    let f = |v: f64| format!("{v:.2}");
    let mut rows: Vec<(String, String, String, String)> = vec![
        (
            "request count".into(),
            g.total.count.to_string(),
            g.ok.count.to_string(),
            g.ko.count.to_string(),
        ),
        (
            "mean throughput (rps)".into(),
            format!("{:.2}", g.mean_rps),
            "".into(),
            "".into(),
        ),
    ];
    for (k, (label, figure)) in crate::stats::TIME_ROWS.iter().enumerate() {
        rows.insert(
            1 + k,
            (
                (*label).into(),
                f(figure(&g.total)),
                f(figure(&g.ok)),
                f(figure(&g.ko)),
            ),
        );
    }
    let total_errors: u64 = results.errors.values().sum();
    let mut errors: Vec<(String, u64, f64)> = results
        .errors
        .iter()
        .map(|(e, n)| {
            (
                e.clone(),
                *n,
                100.0 * *n as f64 / total_errors.max(1) as f64,
            )
        })
        .collect();
    errors.sort_by_key(|e| std::cmp::Reverse(e.1));
    let ranges = ranges(&charts);
    let mut env = minijinja::Environment::new();
    // Named `.html`, the template's values are HTML-escaped (a KO message or a request name
    // may hold `<`); the embedded uPlot and the charts' JSON are marked safe.
    env.add_template("report.html", TEMPLATE)?;
    let html = env
        .get_template("report.html")?
        .render(minijinja::context! {
            title => title,
            started => started(&results.started_at),
            r => results,
            requests => &results.requests,
            groups => &results.groups,
            global_rows => rows,
            errors => errors,
            ranges => ranges,
            charts => charts,
            uplot_js => UPLOT_JS,
            uplot_css => UPLOT_CSS,
        })?;
    Ok(html)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charts_show_rates_whatever_the_entries_cover() {
        let mut stats = crate::stats::Stats::new(10);
        for second in 0..20 {
            stats.record(
                "r",
                second,
                1_000,
                1_000,
                (second % 2 == 0).then_some("KO"),
                3,
            );
        }
        stats.roll_to(20, 3);
        stats.record_connection(
            std::time::Duration::from_micros(250),
            Some(std::time::Duration::from_micros(1_500)),
        );
        let results = Results::new(
            &stats,
            String::new(),
            std::time::Duration::from_secs(20),
            false,
            Vec::new(),
        );
        let charts = charts(&results);
        assert_eq!(charts.t, [0, 10]);
        assert_eq!(
            charts.requests,
            [1.0, 1.0],
            "10 responses in 10 s: 1 a second"
        );
        assert_eq!(charts.ok, [0.5, 0.5]);
        assert_eq!(charts.ko, [0.5, 0.5]);
        assert_eq!(charts.active, [3, 3]);
        let html = render(&results, "t").unwrap();
        assert!(
            html.contains("\"requests\":[1.0,1.0]"),
            "the page carries the rates"
        );
        assert!(
            html.contains("<td>TCP connect</td><td>1</td><td>0.25</td>")
                && html.contains("<td>TLS handshake</td><td>1</td><td>1.50</td>"),
            "the connections' times are shown apart"
        );
    }

    /// A run of 2.5 s at 10 responses a second: the last entry covers half a second with 5
    /// responses, and the chart shows 10 a second there too. The start is shown to the
    /// second, the Global times with decimals.
    ///
    /// Catches: the final partial second divided by a whole one (a fall to 5 a second that
    /// looks like a collapse), a start time written to the nanosecond, and the Global table
    /// rounded to whole milliseconds (0.25 ms shown as 0).
    #[test]
    fn the_last_partial_second_keeps_its_rate_and_times_keep_their_decimals() {
        let mut stats = crate::stats::Stats::new(1);
        for tenth in 0..25u64 {
            stats.record("r", tenth / 10, 250, 250, None, 1);
        }
        stats.roll_to(3, 1);
        let results = Results::new(
            &stats,
            "2026-12-04T02:16:17.123456789Z".into(),
            std::time::Duration::from_millis(2_500),
            false,
            Vec::new(),
        );
        let charts = charts(&results);
        assert_eq!(charts.t, [0, 1, 2]);
        assert_eq!(charts.requests, [10.0, 10.0, 10.0]);
        let html = render(&results, "t").unwrap();
        assert!(html.contains("Started 2026-12-04 02:16:17 UTC,"), "{html}");
        assert!(
            html.contains("<tr><td>min response time (ms)</td><td>0.25</td>"),
            "{html}"
        );
    }

    /// The ranges are at the results' bounds, in the chart's data and the table; a KO count
    /// is red only above 0.
    #[test]
    fn ranges_follow_the_bounds_and_only_kos_above_0_are_red() {
        let mut stats = crate::stats::Stats::new(1);
        stats.record("fast", 0, 10_000, 10_000, None, 1);
        stats.record("fast", 0, 100_000, 100_000, None, 1);
        stats.record("slow", 0, 200_000, 200_000, Some("KO"), 1);
        let mut results = Results::new(
            &stats,
            String::new(),
            std::time::Duration::from_secs(1),
            false,
            Vec::new(),
        );
        results.distribution_bounds = [50, 150];
        let charts = charts(&results);
        assert_eq!(
            charts.range_labels,
            ["t < 50 ms", "50 ms <= t < 150 ms", "t >= 150 ms", "failed"]
        );
        assert_eq!(charts.ranges, [1, 1, 0, 1]);
        let html = render(&results, "t").unwrap();
        assert!(
            html.contains("<tr><td>t &gt;= 150 ms</td><td>0</td>")
                && html.contains(r#"<tr><td>failed</td><td class="ko">1</td>"#),
            "the ranges table"
        );
        assert!(
            html.contains("<td>fast</td><td>2</td><td>2</td><td>0</td>"),
            "a KO count of 0 is not red"
        );
        assert!(
            html.contains(r#"<td>slow</td><td>1</td><td>0</td><td class="ko">1</td>"#),
            "a KO count above 0 is"
        );
        let mut stats = crate::stats::Stats::new(1);
        stats.record("fast", 0, 10_000, 10_000, None, 1);
        let results = Results::new(
            &stats,
            String::new(),
            std::time::Duration::from_secs(1),
            false,
            Vec::new(),
        );
        assert!(
            render(&results, "t")
                .unwrap()
                .contains("<tr><td>failed</td><td>0</td>"),
            "no failed responses: not red"
        );
    }

    fn results_of(stats: &crate::stats::Stats) -> Results {
        Results::new(
            stats,
            String::new(),
            std::time::Duration::from_secs(1),
            false,
            Vec::new(),
        )
    }

    /// 1,000 responses, 1 to 1,000 ms, one each: 40 slices of 25 ms from the fastest to the
    /// 99.9th percentile, each with its 25 responses, labelled at its middle in ms.
    ///
    /// Catches: slices of another width or start, a response counted in the wrong slice or
    /// more than once, a label off the slice's middle.
    #[test]
    fn the_distribution_slices_the_responses_from_the_fastest_to_the_999th_percentile() {
        let mut stats = crate::stats::Stats::new(1);
        for ms in 1..=1000 {
            stats.record("r", 0, ms * 1000, ms * 1000, None, 1);
        }
        let (buckets, counts) = distribution(&results_of(&stats), 40);
        assert_eq!(buckets.len(), 40);
        assert_eq!(counts.iter().sum::<u64>(), 1000, "{counts:?}");
        // The histogram keeps 3 significant digits: the bounds are within 1 ms of these.
        let low = 1.0;
        let high = 999.0;
        let width = (high - low) / 40.0;
        for (i, b) in buckets.iter().enumerate() {
            let middle = low + width * (i as f64 + 0.5);
            assert!((b - middle).abs() < 1.5, "slice {i}: {b} ms, not {middle}");
        }
        for (i, &n) in counts.iter().enumerate() {
            assert!(
                (24..=27).contains(&n),
                "slice {i}: {n} responses: {counts:?}"
            );
        }
    }

    /// Responses all of one time still make slices of a width (1 µs in all), so that the
    /// chart's x axis runs forward.
    ///
    /// Catches: slices of no width when the fastest is the 99.9th percentile (every label
    /// the same).
    #[test]
    fn responses_of_one_time_make_slices_of_a_width() {
        let mut stats = crate::stats::Stats::new(1);
        // 1 ms: below 2,048 µs the histogram keeps every value exactly, so the fastest is
        // the 99.9th percentile.
        for _ in 0..10 {
            stats.record("r", 0, 1_000, 1_000, None, 1);
        }
        let (buckets, counts) = distribution(&results_of(&stats), 40);
        assert!(
            buckets.windows(2).all(|w| w[0] < w[1]),
            "labels run forward: {buckets:?}"
        );
        assert_eq!(counts.iter().sum::<u64>(), 10, "{counts:?}");
    }

    /// The ranges' and the errors' shares are of their own totals, in per cent; the summary
    /// table lists the count, the eight time rows in order, then the throughput.
    ///
    /// Catches: a share computed against anything but its total or not in per cent, the time
    /// rows out of place.
    #[test]
    fn shares_are_per_cent_of_their_totals_and_rows_keep_their_order() {
        let mut stats = crate::stats::Stats::new(1);
        stats.record("a", 0, 10_000, 10_000, None, 1);
        stats.record("a", 0, 100_000, 100_000, None, 1);
        stats.record("a", 0, 1_000_000, 1_000_000, None, 1);
        for _ in 0..3 {
            stats.record("a", 0, 10_000, 10_000, Some("status 500"), 1);
        }
        stats.record("a", 0, 10_000, 10_000, Some("timeout"), 1);
        let mut results = results_of(&stats);
        results.distribution_bounds = [50, 500];
        let rows = ranges(&charts(&results));
        let shares: Vec<(u64, f64, bool)> = rows.iter().map(|r| (r.1, r.2, r.3)).collect();
        let seventh = 100.0 / 7.0;
        assert_eq!(shares.len(), 4);
        for (got, want) in shares.iter().zip([
            (1, seventh, false),
            (1, seventh, false),
            (1, seventh, false),
            (4, 4.0 * seventh, true),
        ]) {
            assert_eq!((got.0, got.2), (want.0, want.2));
            assert!((got.1 - want.1).abs() < 1e-9, "{shares:?}");
        }
        let html = render(&results, "t").unwrap();
        assert!(
            html.contains("<tr><td>status 500</td><td>3</td><td>75.00</td></tr>"),
            "{html}"
        );
        assert!(html.contains("<tr><td>timeout</td><td>1</td><td>25.00</td></tr>"));
        let mut labels = vec!["request count"];
        labels.extend(crate::stats::TIME_ROWS.iter().map(|(label, _)| *label));
        labels.push("mean throughput (rps)");
        let at: Vec<usize> = labels
            .iter()
            .map(|l| {
                html.find(&format!("<tr><td>{l}</td>"))
                    .unwrap_or_else(|| panic!("no row {l}"))
            })
            .collect();
        assert!(
            at.windows(2).all(|w| w[0] < w[1]),
            "rows out of order: {at:?}"
        );
    }
}
