//! The tables as CSV files, for spreadsheets and CI dashboards: `series.csv`, the series over
//! time (one row per entry of `results.json`'s `seconds`), and `requests.csv`, the figures of
//! all requests together and of each request name. Both always start with their header row.

use std::io::Write;
use std::path::{Path, PathBuf};

use super::ExportError;
use crate::results::{RequestResults, Results};

/// The series' file name in the folder [`write()`] fills.
pub const SERIES_FILE: &str = "series.csv";

/// The per-request table's file name in the folder [`write()`] fills.
pub const REQUESTS_FILE: &str = "requests.csv";

/// `series.csv`'s columns: an entry's first second, its responses, OK and KO among them, the
/// users active at its end, and its percentiles (ms).
pub const SERIES_COLUMNS: [&str; 8] = [
    "second",
    "requests",
    "ok",
    "ko",
    "activeUsers",
    "p50",
    "p95",
    "p99",
];

/// `requests.csv`'s columns: the row's scope (`global`, all requests together, or `request`,
/// one request name: a request may be named `Global`), the request name, its responses, OK and
/// KO among them, the response times of all of them (ms) and the responses a second over the
/// run.
pub const REQUESTS_COLUMNS: [&str; 14] = [
    "scope", "name", "count", "ok", "ko", "min", "p50", "p75", "p95", "p99", "max", "mean",
    "stdDev", "meanRps",
];

/// The name of `requests.csv`'s first row, all requests together (as the assertions' scope
/// and the console call it); its scope is `global`.
pub const GLOBAL_ROW: &str = "Global";

/// Writes [`SERIES_FILE`] and [`REQUESTS_FILE`] of `results` into `folder`, creating it when
/// missing; gives their paths.
pub fn write(results: &Results, folder: &Path) -> Result<[PathBuf; 2], ExportError> {
    std::fs::create_dir_all(folder).map_err(ExportError::io(folder))?;
    let series = folder.join(SERIES_FILE);
    write_file(&series, |out| write_series(results, out))?;
    let requests = folder.join(REQUESTS_FILE);
    write_file(&requests, |out| write_requests(results, out))?;
    Ok([series, requests])
}

fn write_file(
    path: &Path,
    fill: impl FnOnce(std::io::BufWriter<std::fs::File>) -> Result<(), ::csv::Error>,
) -> Result<(), ExportError> {
    let file = std::fs::File::create(path).map_err(ExportError::io(path))?;
    fill(std::io::BufWriter::new(file)).map_err(|source| ExportError::Csv {
        path: path.to_path_buf(),
        source,
    })
}

fn writer<W: Write>(out: W) -> ::csv::Writer<W> {
    // Rows are tuples, written under the header written by hand: so the header is there
    // even when there is no row.
    ::csv::WriterBuilder::new()
        .has_headers(false)
        .from_writer(out)
}

/// Writes `series.csv` of `results` into `out`: the header ([`SERIES_COLUMNS`]), then one row
/// per entry of the series. An entry covers `seriesInterval` seconds (one, unless the run could
/// last over an hour), so its counts are over those seconds.
///
/// ```
/// use std::time::Duration;
/// use volley::results::Results;
/// use volley::stats::Stats;
///
/// let mut stats = Stats::new(1);
/// stats.record("quote", 0, 1_000, 1_000, None, 1); // 1 ms, in its first second
/// stats.roll_to(1, 1);
/// let results = Results::new(&stats, String::new(), Duration::from_secs(1), false, Vec::new());
/// let mut csv = Vec::new();
/// volley::export::csv::write_series(&results, &mut csv)?;
/// assert_eq!(
///     String::from_utf8_lossy(&csv),
///     "second,requests,ok,ko,activeUsers,p50,p95,p99\n0,1,1,0,1,1.0,1.0,1.0\n"
/// );
/// # Ok::<(), csv::Error>(())
/// ```
pub fn write_series<W: Write>(results: &Results, out: W) -> Result<(), ::csv::Error> {
    let mut csv = writer(out);
    csv.write_record(SERIES_COLUMNS)?;
    for e in &results.seconds {
        csv.serialize((
            e.second,
            e.requests,
            e.ok,
            e.ko,
            e.active_users,
            e.p50,
            e.p95,
            e.p99,
        ))?;
    }
    csv.flush()?;
    Ok(())
}

/// Writes `requests.csv` of `results` into `out`: the header ([`REQUESTS_COLUMNS`]), the row
/// of all requests together ([`GLOBAL_ROW`]), then one row per request name in name order.
/// The times are those of all responses, OK and KO, as Gatling's tables show them.
///
/// ```
/// use std::time::Duration;
/// use volley::results::Results;
/// use volley::stats::Stats;
///
/// let mut stats = Stats::new(1);
/// stats.record("quote", 0, 12_000, 12_000, None, 1);
/// let results = Results::new(&stats, String::new(), Duration::from_secs(1), false, Vec::new());
/// let mut csv = Vec::new();
/// volley::export::csv::write_requests(&results, &mut csv)?;
/// let text = String::from_utf8_lossy(&csv);
/// let rows: Vec<&str> = text.lines().collect();
/// assert_eq!(rows[0], "scope,name,count,ok,ko,min,p50,p75,p95,p99,max,mean,stdDev,meanRps");
/// assert!(rows[1].starts_with("global,Global,1,1,0,12.0,"));
/// assert!(rows[2].starts_with("request,quote,1,1,0,12.0,"));
/// # Ok::<(), csv::Error>(())
/// ```
pub fn write_requests<W: Write>(results: &Results, out: W) -> Result<(), ::csv::Error> {
    let mut csv = writer(out);
    csv.write_record(REQUESTS_COLUMNS)?;
    let rows = std::iter::once(("global", GLOBAL_ROW, &results.global)).chain(
        results
            .requests
            .iter()
            .map(|(name, r)| ("request", name.as_str(), r)),
    );
    for (scope, name, r) in rows {
        csv.serialize(request_row(scope, name, r))?;
    }
    csv.flush()?;
    Ok(())
}

type RequestRow<'a> = (
    &'a str,
    &'a str,
    u64,
    u64,
    u64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
    f64,
);

/// One row of `requests.csv`, in the order of [`REQUESTS_COLUMNS`].
fn request_row<'a>(scope: &'a str, name: &'a str, r: &RequestResults) -> RequestRow<'a> {
    let t = &r.total;
    (
        scope, name, t.count, r.ok.count, r.ko.count, t.min, t.p50, t.p75, t.p95, t.p99, t.max,
        t.mean, t.std_dev, r.mean_rps,
    )
}
