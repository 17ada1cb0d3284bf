//! `results.json`: the run's figures, and its histograms in HdrHistogram's interchange
//! encoding so that runs from several generators can be merged exactly.
//!
//! The file carries its format's version ([`SCHEMA`]); `volley schema` prints the JSON
//! Schema of every field (committed as `results.schema.json`). A file of a newer schema is
//! refused ([`read`]) rather than misread; a file without one (older volley) still loads.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

use crate::stats::{Ranges, SeriesEntry, Stats, Summary, rate};

/// The version of the `results.json` format this volley writes, and the newest it reads.
/// Raise it when a field changes meaning or a reader would need a new one.
pub const SCHEMA: u32 = 2;

/// One request name's figures.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct RequestResults {
    /// All responses: times from when each request was due (its arrival, its throttle
    /// slot, or, in a closed model, corrected for coordinated omission as
    /// `coordinatedOmission` says; the counts are responses, the percentiles those of the
    /// corrected times).
    pub total: Summary,
    /// OK responses.
    pub ok: Summary,
    /// KO responses.
    pub ko: Summary,
    /// Raw service time (from sending, not from when the request was due). Absent in files
    /// of older volleys.
    #[serde(default)]
    pub service_time: Summary,
    /// Responses a second over the run.
    pub mean_rps: f64,
    /// HdrHistogram V2 (deflate), base64: every response time in µs, with the values a
    /// correction for coordinated omission added (schema 2).
    pub histogram: String,
    /// The same for OK responses.
    pub ok_histogram: String,
    /// The same for KO responses.
    pub ko_histogram: String,
    /// The same for the raw service times. Absent in files of older volleys.
    #[serde(default)]
    pub service_histogram: String,
}

/// The whole run: volley's `results.json`.
#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(title = "volley results.json", deny_unknown_fields)]
pub struct Results {
    /// The version of this format. A reader refuses a file of a newer one; a file without
    /// it was written by an older volley (read as 0).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub schema: u32,
    /// volley's version.
    pub volley: String,
    /// When the run started (RFC 3339).
    pub started_at: String,
    /// How long it ran, seconds.
    pub duration_seconds: f64,
    /// Whether maxDuration cut it.
    pub cut_at_max_duration: bool,
    /// All requests.
    pub global: RequestResults,
    /// Per request name.
    pub requests: BTreeMap<String, RequestResults>,
    /// KO messages and counts. Past 1,000 distinct messages, further new ones are counted
    /// together under one entry that says so.
    pub errors: BTreeMap<String, u64>,
    /// Seconds each entry of `seconds` covers: 1, or more when the run could last over an
    /// hour (at most 3,600 entries). Absent in older files: 1.
    #[serde(default = "one")]
    #[schemars(range(min = 1))]
    pub series_interval: u64,
    /// The series over time, one entry every `seriesInterval` seconds.
    pub seconds: Vec<SeriesEntry>,
    /// The assertions' outcomes.
    pub assertions: Vec<crate::assertions::Outcome>,
    /// The closed model's correction for coordinated omission: `average` or `minimum`; null
    /// when nothing was corrected (an open model, a throttle, or `off`). Absent in older files
    /// (schema 1), which had none.
    #[serde(default)]
    pub coordinated_omission: Option<String>,
    /// The connections opened, and how long opening them took. Absent in older files.
    #[serde(default)]
    pub connections: Connections,
    /// The scenario's `distributionBounds` (ms): the report's response time ranges are OK
    /// responses below the first, between the two, at or above the second, and KO ones.
    /// Absent in older files: Gatling's `[800, 1200]`.
    #[serde(default = "default_bounds")]
    pub distribution_bounds: [u64; 2],
    /// The users of each scenario, by its name; a merge adds them up. Absent in older files.
    #[serde(default)]
    pub users: BTreeMap<String, UserCounts>,
    /// The part of the plan this run was (`volley run --shard i/N`); null for a whole run and
    /// for merged results. Absent in older files.
    #[serde(default)]
    pub shard: Option<crate::shard::Shard>,
    /// Per group (Gatling's `group`), by its path (`checkout`, `checkout / payment` for one
    /// nested in it): counts are the group's executions, OK unless a request in one was KO;
    /// `total`, `ok` and `ko` are the executions' cumulated response times (the sum of their
    /// requests'), `serviceTime` their durations, pauses included. Absent in older files.
    #[serde(default)]
    pub groups: BTreeMap<String, RequestResults>,
}

/// One scenario's users: open-model arrivals and closed-model users alike.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct UserCounts {
    /// Users started.
    pub started: u64,
    /// Users that ran to their end (fewer than started when the run was cut or interrupted).
    pub done: u64,
}

impl UserCounts {
    /// The counts of `run`'s scenarios now, by name (scenarios of one name add up).
    pub fn of(run: &crate::engine::Run) -> BTreeMap<String, UserCounts> {
        use std::sync::atomic::Ordering::Relaxed;
        let mut counts: BTreeMap<String, UserCounts> = BTreeMap::new();
        for u in &run.users {
            counts.entry(u.name.clone()).or_default().add(UserCounts {
                started: u.started.load(Relaxed),
                done: u.done.load(Relaxed),
            });
        }
        counts
    }

    fn add(&mut self, other: UserCounts) {
        self.started += other.started;
        self.done += other.done;
    }
}

/// The connections a run opened: TCP connect and TLS handshake times, apart from the
/// response times (which include them when a request had to open its connection).
#[derive(Debug, Default, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct Connections {
    /// TCP connect times (ms); the count is the connections opened.
    pub connect: Summary,
    /// TLS handshake times (ms), for an `https://` target.
    pub tls_handshake: Summary,
    /// HdrHistogram V2 (deflate), base64: the connect times in µs.
    pub connect_histogram: String,
    /// The same for the TLS handshakes.
    pub tls_handshake_histogram: String,
}

fn one() -> u64 {
    1
}

/// Gatling's distribution bounds (ms), the scenario's default.
pub const DEFAULT_BOUNDS: [u64; 2] = [800, 1200];

fn default_bounds() -> [u64; 2] {
    DEFAULT_BOUNDS
}

fn encode(h: &hdrhistogram::Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    match V2DeflateSerializer::new().serialize(h, &mut bytes) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(bytes),
        Err(_) => String::new(),
    }
}

fn request(t: &crate::stats::Tally, elapsed: Duration) -> RequestResults {
    RequestResults {
        total: Summary::counted(&t.all, t.requests),
        ok: Summary::counted(&t.ok, t.oks),
        ko: Summary::counted(&t.ko, t.kos),
        service_time: Summary::of(&t.service),
        mean_rps: rate(t.requests, elapsed),
        histogram: encode(&t.all),
        ok_histogram: encode(&t.ok),
        ko_histogram: encode(&t.ko),
        service_histogram: encode(&t.service),
    }
}

impl Results {
    /// The results of `stats`.
    pub fn new(
        stats: &Stats,
        started_at: String,
        elapsed: Duration,
        cut: bool,
        assertions: Vec<crate::assertions::Outcome>,
    ) -> Results {
        Results {
            schema: SCHEMA,
            volley: env!("CARGO_PKG_VERSION").to_owned(),
            started_at,
            duration_seconds: elapsed.as_secs_f64(),
            cut_at_max_duration: cut,
            global: request(&stats.global, elapsed),
            requests: stats
                .by_name
                .iter()
                .map(|(k, t)| (k.clone(), request(t, elapsed)))
                .collect(),
            errors: stats.errors.as_map().clone(),
            series_interval: stats.series_interval(),
            seconds: stats.series.clone(),
            assertions,
            coordinated_omission: None,
            connections: Connections {
                connect: Summary::of(&stats.connect),
                tls_handshake: Summary::of(&stats.tls_handshake),
                connect_histogram: encode(&stats.connect),
                tls_handshake_histogram: encode(&stats.tls_handshake),
            },
            distribution_bounds: DEFAULT_BOUNDS,
            users: BTreeMap::new(),
            shard: None,
            groups: stats
                .groups
                .iter()
                .map(|(k, g)| (k.clone(), request(&g.cumulated, elapsed)))
                .collect(),
        }
    }

    /// The response time ranges of all responses at `distributionBounds` (the console's
    /// figures, see [`Ranges::of`]); `None` when the OK histogram does not decode.
    pub fn ranges(&self) -> Option<Ranges> {
        let g = &self.global;
        let ok = if g.ok_histogram.is_empty() {
            crate::stats::histogram()
        } else {
            decode_histogram(&g.ok_histogram).ok()?
        };
        Some(Ranges::of(
            &ok,
            g.ok.count,
            g.ko.count,
            self.distribution_bounds,
        ))
    }
}

/// Why results could not be merged.
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    /// No input.
    #[error("nothing to merge")]
    Empty,
    /// A histogram that does not decode.
    #[error("{file}: histogram of {name:?} does not decode: {message}")]
    Histogram {
        /// The input.
        file: String,
        /// The request name.
        name: String,
        /// Why.
        message: String,
    },
}

/// Decodes a histogram written by `results.json`.
pub fn decode_histogram(text: &str) -> Result<hdrhistogram::Histogram<u64>, String> {
    use hdrhistogram::serialization::Deserializer;
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(text)
        .map_err(|e| e.to_string())?;
    Deserializer::new()
        .deserialize(&mut bytes.as_slice())
        .map_err(|e| format!("{e:?}"))
}

fn decode(file: &str, name: &str, text: &str) -> Result<hdrhistogram::Histogram<u64>, MergeError> {
    decode_histogram(text).map_err(|message| MergeError::Histogram {
        file: file.to_owned(),
        name: name.to_owned(),
        message,
    })
}

fn add(
    into: &mut crate::stats::Tally,
    file: &str,
    name: &str,
    r: &RequestResults,
) -> Result<(), MergeError> {
    let parts = [
        (&mut into.all, &r.histogram),
        (&mut into.ok, &r.ok_histogram),
        (&mut into.ko, &r.ko_histogram),
        (&mut into.service, &r.service_histogram),
    ];
    // The responses counted: a histogram may hold more values (schema 2's correction for
    // coordinated omission); a schema 1 file's counts are its histograms' lengths anyway.
    into.requests += r.total.count;
    into.oks += r.ok.count;
    into.kos += r.ko.count;
    for (target, text) in parts {
        add_histogram(target, file, name, text)?;
    }
    Ok(())
}

/// Adds the histogram `text` encodes (none when empty: an older file's) into `target`.
fn add_histogram(
    target: &mut hdrhistogram::Histogram<u64>,
    file: &str,
    name: &str,
    text: &str,
) -> Result<(), MergeError> {
    if text.is_empty() {
        return Ok(());
    }
    let h = decode(file, name, text)?;
    target.add(&h).map_err(|e| MergeError::Histogram {
        file: file.to_owned(),
        name: name.to_owned(),
        message: format!("{e:?}"),
    })
}

/// Seconds a merged series' entries cover: the least common multiple of the inputs', which
/// is the coarsest when the others divide it (as they do for runs of whole hours), so that
/// no input entry straddles two merged ones.
fn merged_interval(intervals: impl IntoIterator<Item = u64>) -> u64 {
    // Euclid by hand: two lines, not worth a crate.
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 { a } else { gcd(b, a % b) }
    }
    intervals.into_iter().fold(1, |acc, i| {
        let i = i.max(1);
        (acc / gcd(acc, i)).saturating_mul(i)
    })
}

/// How the runs given to [`merge_as`] relate in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Together {
    /// At the same time, from several generator machines: their series add entry by entry,
    /// and the run lasted as long as the longest.
    SideBySide,
    /// One after the other (rounds of one experiment): the series follow each other, and the
    /// run lasted as long as all of them.
    OneAfterAnother,
}

/// Merges the results of several generators run side by side: histograms are added, so the
/// merged percentiles are exactly those of all responses together, and so are the users of
/// each scenario. The series is re-bucketed
/// at the coarsest input's resolution (at their least common multiple when one does not
/// divide another); its counts are summed, an
/// entry's percentiles are the highest any generator saw (those are not mergeable without
/// the entries' histograms), its active users the sum of the generators'. The run's duration
/// is the longest input's.
pub fn merge(inputs: &[(String, Results)]) -> Result<Results, MergeError> {
    merge_as(inputs, Together::SideBySide)
}

/// [`merge`], for runs that were side by side or [one after another](Together); histograms
/// add exactly either way.
pub fn merge_as(inputs: &[(String, Results)], together: Together) -> Result<Results, MergeError> {
    let (_, first) = inputs.first().ok_or(MergeError::Empty)?;
    let interval = merged_interval(inputs.iter().map(|(_, r)| r.series_interval));
    let mut stats = crate::stats::Stats::new(interval);
    let mut longest = 0.0f64;
    let mut total = 0.0f64;
    let mut cut = false;
    let mut series: BTreeMap<u64, SeriesEntry> = BTreeMap::new();
    let mut users: BTreeMap<String, UserCounts> = BTreeMap::new();
    for (file, r) in inputs {
        for (name, counts) in &r.users {
            users.entry(name.clone()).or_default().add(*counts);
        }
        add(&mut stats.global, file, "Global", &r.global)?;
        for (name, req) in &r.requests {
            add(
                stats.by_name.entry(name.clone()).or_default(),
                file,
                name,
                req,
            )?;
        }
        for (path, g) in &r.groups {
            add(
                &mut stats.groups.entry(path.clone()).or_default().cumulated,
                file,
                path,
                g,
            )?;
        }
        for (e, n) in &r.errors {
            stats.errors.add(e, *n);
        }
        for (target, text, name) in [
            (
                &mut stats.connect,
                &r.connections.connect_histogram,
                "connect",
            ),
            (
                &mut stats.tls_handshake,
                &r.connections.tls_handshake_histogram,
                "TLS handshake",
            ),
        ] {
            add_histogram(target, file, name, text)?;
        }
        // Where this run's series starts: where the runs before it ended when they followed
        // each other, rounded down to a whole entry. A run's last entry covers only the
        // fraction of a second it lasted past its last whole entry (a 10.02 s run's entry at
        // 10 s holds 0.02 s, and its users are those still active at the end: none), so the
        // next run's first entry shares it: the two runs join with no entry that stands for
        // a stall which never happened.
        let offset = match together {
            Together::SideBySide => 0,
            Together::OneAfterAnother => (total / interval as f64).floor() as u64 * interval,
        };
        longest = longest.max(r.duration_seconds);
        total += r.duration_seconds;
        cut |= r.cut_at_max_duration;
        // One generator's entries within a merged entry follow each other (their users are
        // the highest count), as do the runs that share the entry where they join;
        // generators side by side add theirs.
        for mut s in crate::stats::rebucket(&r.seconds, interval) {
            s.second += offset;
            match series.get_mut(&s.second) {
                Some(m) => m.absorb(&s, together == Together::SideBySide),
                None => {
                    series.insert(s.second, s);
                }
            }
        }
    }
    stats.series = series.into_values().collect();
    let mut merged = Results::new(
        &stats,
        first.started_at.clone(),
        Duration::from_secs_f64(match together {
            Together::SideBySide => longest,
            Together::OneAfterAnother => total,
        }),
        cut,
        Vec::new(),
    );
    merged.coordinated_omission = first.coordinated_omission.clone();
    merged.distribution_bounds = first.distribution_bounds;
    merged.users = users;
    Ok(merged)
}

/// Why a `results.json` could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not JSON, or not the fields of a results file.
    #[error("{file} is not a volley results.json: {source}")]
    NotResults {
        /// The input.
        file: String,
        /// What serde said.
        source: serde_json::Error,
    },
    /// Written by a newer volley, in a format this one does not know.
    #[error(
        "{file} has results schema {found}, newer than schema {SCHEMA} that this volley ({version}) reads; use a newer volley",
        version = env!("CARGO_PKG_VERSION")
    )]
    NewerSchema {
        /// The input.
        file: String,
        /// Its `schema`.
        found: u64,
    },
}

/// Reads a `results.json` (`file` names it in errors). Its `schema` is looked at first, so a
/// newer file is refused as such rather than misread or reported as broken.
pub fn read(bytes: &[u8], file: &str) -> Result<Results, ReadError> {
    #[derive(Deserialize)]
    struct Version {
        #[serde(default)]
        schema: u64,
    }
    let not_results = |source| ReadError::NotResults {
        file: file.to_owned(),
        source,
    };
    let version: Version = serde_json::from_slice(bytes).map_err(not_results)?;
    if version.schema > u64::from(SCHEMA) {
        return Err(ReadError::NewerSchema {
            file: file.to_owned(),
            found: version.schema,
        });
    }
    serde_json::from_slice(bytes).map_err(not_results)
}

/// The JSON Schema (draft 2020-12) of `results.json`, as `volley schema` prints it.
///
/// It describes the file as volley writes it, every field present; the `default`s say what
/// a reader assumes for the fields that files of older volleys lack.
pub fn json_schema() -> String {
    let schema = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Results>();
    let mut text = serde_json::to_string_pretty(&schema).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of `seconds` seconds with entries of `interval`, one response a second.
    fn run(seconds: u64, interval: u64) -> Results {
        let mut stats = Stats::new(interval);
        for s in 0..seconds {
            stats.record("r", s, 1_000 * (s + 1), 1_000, None, 2);
        }
        stats.roll_to(seconds, 2);
        Results::new(
            &stats,
            "2025-01-01T00:00:00Z".into(),
            Duration::from_secs(seconds),
            false,
            Vec::new(),
        )
    }

    #[test]
    fn merge_rebuckets_runs_of_different_resolutions_at_the_coarsest() {
        let fine = run(12, 1);
        let coarse = run(12, 4);
        assert_eq!(fine.seconds.len(), 12);
        assert_eq!(coarse.seconds.len(), 3);
        let merged = merge(&[("a".into(), fine), ("b".into(), coarse)]).unwrap();
        assert_eq!(merged.series_interval, 4);
        let seconds: Vec<u64> = merged.seconds.iter().map(|e| e.second).collect();
        assert_eq!(seconds, [0, 4, 8]);
        assert!(
            merged.seconds.iter().all(|e| e.requests == 8),
            "4 + 4 a bucket"
        );
        assert!(
            merged.seconds.iter().all(|e| e.active_users == 4),
            "each generator's users once, summed: {:?}",
            merged.seconds
        );
        assert_eq!(merged.global.total.count, 24);

        // Resolutions that do not divide each other meet at their least common multiple.
        let merged = merge(&[("a".into(), run(12, 2)), ("b".into(), run(12, 3))]).unwrap();
        assert_eq!(merged.series_interval, 6);
        assert_eq!(merged.seconds.len(), 2);
        assert_eq!(merged.seconds.iter().map(|e| e.requests).sum::<u64>(), 24);
    }

    /// Connect and TLS handshake times merge exactly, as response times do; an older file
    /// without them adds nothing.
    #[test]
    fn connection_times_merge_exactly() {
        let with = |connects: &[u64]| {
            let mut stats = Stats::new(1);
            for &c in connects {
                stats.record_connection(
                    Duration::from_micros(c),
                    Some(Duration::from_micros(c * 10)),
                );
            }
            Results::new(
                &stats,
                String::new(),
                Duration::from_secs(1),
                false,
                Vec::new(),
            )
        };
        let mut older = with(&[]);
        older.connections = Connections::default();
        let merged = merge(&[
            ("a".into(), with(&[100, 200])),
            ("b".into(), with(&[300])),
            ("c".into(), older),
        ])
        .unwrap();
        let c = &merged.connections;
        assert_eq!((c.connect.count, c.tls_handshake.count), (3, 3));
        assert_eq!((c.connect.min, c.connect.max), (0.1, 0.3));
        assert_eq!(c.tls_handshake.min, 1.0);
        assert!(
            (c.tls_handshake.max - 3.0).abs() < 0.01,
            "{}",
            c.tls_handshake.max
        );
    }

    #[test]
    fn rounds_one_after_another_follow_each_other() {
        let rounds = [
            ("1".into(), run(10, 1)),
            ("2".into(), run(10, 1)),
            ("3".into(), run(7, 1)),
        ];
        let merged = merge_as(&rounds, Together::OneAfterAnother).unwrap();
        assert_eq!(merged.duration_seconds, 27.0);
        let seconds: Vec<u64> = merged.seconds.iter().map(|e| e.second).collect();
        assert_eq!(seconds, (0..27).collect::<Vec<_>>(), "no overlap, no gap");
        assert!(
            merged
                .seconds
                .iter()
                .all(|e| e.requests == 1 && e.active_users == 2)
        );
        assert_eq!(merged.global.total.count, 27);
        // The rate is over all of them: 27 responses in 27 s.
        assert!((merged.global.mean_rps - 1.0).abs() < 1e-9);
        // Side by side, the same runs overlay.
        let side = merge(&rounds).unwrap();
        assert_eq!(side.seconds.len(), 10);
        assert_eq!(side.duration_seconds, 10.0);
    }

    /// Rounds that lasted a fraction of a second past their last whole second, as real
    /// runs do, join where one ends: the next round's first second shares the last one's
    /// partial entry, so the merged series has no entry without requests or users (a stall
    /// that never happened) until the last round's own end.
    ///
    /// Catches: the next round placed after the rounded-up duration (an entry at 10 s holding
    /// 0.02 s of requests and no users), users of rounds that join summed as if side by side.
    #[test]
    fn rounds_one_after_another_join_without_an_empty_entry_between_them() {
        // As the engine's snapshot leaves a run: every second up to the end recorded, the
        // entry it ends in closed with the users active then (none).
        let round = || {
            let mut stats = Stats::new(1);
            for s in 0..=10 {
                stats.record("r", s, 1_000, 1_000, None, 5);
            }
            let mut snapshot = Stats::new(1);
            snapshot.merge_from(&stats);
            Results::new(
                &snapshot,
                "2025-01-01T00:00:00Z".into(),
                Duration::from_millis(10_020),
                false,
                Vec::new(),
            )
        };
        let one = round();
        assert_eq!(one.seconds.len(), 11);
        assert_eq!(one.seconds[10].active_users, 0, "the partial last entry");
        let merged = merge_as(
            &[
                ("1".into(), round()),
                ("2".into(), round()),
                ("3".into(), round()),
            ],
            Together::OneAfterAnother,
        )
        .unwrap();
        let seconds: Vec<u64> = merged.seconds.iter().map(|e| e.second).collect();
        assert_eq!(
            seconds,
            (0..=30).collect::<Vec<_>>(),
            "no gap, no entry added"
        );
        let (last, joined) = merged.seconds.split_last().unwrap();
        assert!(
            joined.iter().all(|e| e.requests > 0 && e.active_users == 5),
            "{:?}",
            merged.seconds
        );
        assert_eq!(
            merged.seconds[10].requests, 2,
            "round 1's partial entry and round 2's first"
        );
        assert_eq!(last.active_users, 0, "the last round's own end");
        assert_eq!(merged.global.total.count, 33);
        assert!((merged.duration_seconds - 30.06).abs() < 1e-9);
    }

    /// The report's ranges, from `results.json` alone, are the console's (from the run's
    /// histograms), corrected values scaled to responses as there; a merge keeps the first
    /// input's bounds.
    #[test]
    fn ranges_read_back_are_the_consoles_and_a_merge_keeps_the_bounds() {
        let mut stats = Stats::new(1);
        for ms in [100, 300, 700, 900] {
            stats.record_corrected("r", 0, ms * 1_000, 1_000, None, 1, 150_000);
        }
        stats.record("r", 0, 5_000, 1_000, Some("KO"), 1);
        let mut results = Results::new(
            &stats,
            String::new(),
            Duration::from_secs(1),
            false,
            Vec::new(),
        );
        results.distribution_bounds = [250, 600];
        let text = serde_json::to_vec(&results).unwrap();
        let read_back = read(&text, "results.json").unwrap();
        assert_eq!(read_back.distribution_bounds, [250, 600]);
        let g = &stats.global;
        assert!(g.ok.len() > g.oks, "the correction added values");
        let console = Ranges::of(&g.ok, g.oks, g.kos, [250, 600]);
        assert_eq!(read_back.ranges(), Some(console));
        assert_eq!(console.total(), 5);

        let other = run(2, 1);
        assert_eq!(other.distribution_bounds, DEFAULT_BOUNDS);
        let merged = merge(&[("a".into(), read_back), ("b".into(), other)]).unwrap();
        assert_eq!(merged.distribution_bounds, [250, 600]);
    }

    /// Groups merge exactly: the merged percentiles of their cumulated times and durations
    /// are those of all executions together, and their counts add up.
    ///
    /// Catches: groups left out of a merge, their durations or KOs dropped.
    #[test]
    fn groups_merge_exactly() {
        let part = |offset: u64| {
            let mut stats = crate::stats::Stats::new(1);
            for i in 0..50 {
                stats.record_group(
                    "checkout",
                    (offset + i) * 1000,
                    (offset + i) * 3000,
                    i % 10 != 0,
                );
            }
            stats
        };
        let (a, b) = (part(0), part(50));
        let mut whole = crate::stats::Stats::new(1);
        whole.merge_from(&a);
        whole.merge_from(&b);
        let results = |s: &crate::stats::Stats| {
            Results::new(s, String::new(), Duration::from_secs(1), false, Vec::new())
        };
        let merged = merge(&[("a".into(), results(&a)), ("b".into(), results(&b))]).unwrap();
        let (got, want) = (
            &merged.groups["checkout"],
            &results(&whole).groups["checkout"],
        );
        assert_eq!(got.total, want.total);
        assert_eq!(got.service_time, want.service_time);
        assert_eq!((got.ok.count, got.ko.count), (90, 10));
        assert_eq!(got.total.p99, want.total.p99);
    }

    /// The users of each scenario add up in a merge, as the shards of a run started them; a
    /// file without them (older volley) adds none, and the merged run is no shard.
    #[test]
    fn users_add_up_in_a_merge() {
        let with = |open: u64, closed: u64, shard: &str| {
            let mut r = run(2, 1);
            r.users = BTreeMap::from([
                (
                    "open".to_owned(),
                    UserCounts {
                        started: open,
                        done: open,
                    },
                ),
                (
                    "closed".to_owned(),
                    UserCounts {
                        started: closed,
                        done: closed - 1,
                    },
                ),
            ]);
            r.shard = crate::shard::Shard::parse(shard, None).ok();
            r
        };
        let mut older = serde_json::to_value(run(2, 1)).unwrap();
        let fields = older.as_object_mut().unwrap();
        fields.remove("users");
        fields.remove("shard");
        let older = read(&serde_json::to_vec(&older).unwrap(), "older.json").unwrap();
        assert!(older.users.is_empty() && older.shard.is_none());
        let merged = merge(&[
            ("0".into(), with(4, 2, "0/3")),
            ("1".into(), with(3, 2, "1/3")),
            ("2".into(), with(3, 1, "2/3")),
            ("older".into(), older),
        ])
        .unwrap();
        assert_eq!(
            merged.users["open"],
            UserCounts {
                started: 10,
                done: 10
            }
        );
        assert_eq!(
            merged.users["closed"],
            UserCounts {
                started: 5,
                done: 2
            }
        );
        assert_eq!(merged.shard, None);
    }

    #[test]
    fn a_newer_schema_is_refused_and_a_missing_one_still_loads() {
        let results = run(3, 1);
        assert_eq!(results.schema, SCHEMA);
        let mut json = serde_json::to_value(&results).unwrap();
        json["schema"] = serde_json::json!(SCHEMA + 1);
        let err = read(&serde_json::to_vec(&json).unwrap(), "new.json").unwrap_err();
        assert!(
            matches!(err, ReadError::NewerSchema { found: 3, .. }),
            "{err}"
        );
        assert!(
            err.to_string()
                .starts_with("new.json has results schema 3, newer than schema 2")
        );
        let old = json.as_object_mut().unwrap();
        old.remove("schema");
        old.remove("seriesInterval");
        old.remove("distributionBounds");
        let read_back = read(&serde_json::to_vec(&old).unwrap(), "old.json").unwrap();
        assert_eq!(read_back.schema, 0);
        assert_eq!(read_back.series_interval, 1);
        assert_eq!(read_back.distribution_bounds, [800, 1200]);
        assert!(matches!(
            read(b"{\"schema\": \"one\"}", "odd.json"),
            Err(ReadError::NotResults { .. })
        ));
    }
}
