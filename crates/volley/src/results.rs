//! `results.json`: the run's figures, and its histograms in HdrHistogram's interchange
//! encoding so that runs from several generators can be merged exactly.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use serde::{Deserialize, Serialize};

use crate::stats::{Second, Stats, Summary, rate};

/// One request name's figures.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestResults {
    /// All responses.
    pub total: Summary,
    /// OK responses.
    pub ok: Summary,
    /// KO responses.
    pub ko: Summary,
    /// Raw service time (from sending, not from when the request was due).
    #[serde(default)]
    pub service_time: Summary,
    /// Responses a second over the run.
    pub mean_rps: f64,
    /// HdrHistogram V2 (deflate), base64: every response time in µs.
    pub histogram: String,
    /// The same for OK responses.
    pub ok_histogram: String,
    /// The same for KO responses.
    pub ko_histogram: String,
    /// The same for the raw service times.
    #[serde(default)]
    pub service_histogram: String,
}

/// The whole run.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Results {
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
    /// KO messages and counts.
    pub errors: BTreeMap<String, u64>,
    /// One entry a second.
    pub seconds: Vec<Second>,
    /// The assertions' outcomes.
    pub assertions: Vec<crate::assertions::Outcome>,
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
        total: Summary::of(&t.all),
        ok: Summary::of(&t.ok),
        ko: Summary::of(&t.ko),
        service_time: Summary::of(&t.service),
        mean_rps: rate(t.all.len(), elapsed),
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
            errors: stats.errors.clone(),
            seconds: stats.seconds.clone(),
            assertions,
        }
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
    for (target, text) in parts {
        if text.is_empty() {
            continue;
        }
        let h = decode(file, name, text)?;
        target.add(&h).map_err(|e| MergeError::Histogram {
            file: file.to_owned(),
            name: name.to_owned(),
            message: format!("{e:?}"),
        })?;
    }
    Ok(())
}

/// Merges the results of several generators run side by side: histograms are added, so the
/// merged percentiles are exactly those of all responses together. Per-second counts are
/// summed; a second's percentiles are the highest any generator saw (those are not mergeable
/// without the per-second histograms). The run's duration is the longest input's.
pub fn merge(inputs: &[(String, Results)]) -> Result<Results, MergeError> {
    let (_, first) = inputs.first().ok_or(MergeError::Empty)?;
    let mut stats = crate::stats::Stats::default();
    let mut longest = 0.0f64;
    let mut cut = false;
    let mut seconds: BTreeMap<u64, Second> = BTreeMap::new();
    for (file, r) in inputs {
        add(&mut stats.global, file, "Global", &r.global)?;
        for (name, req) in &r.requests {
            add(
                stats.by_name.entry(name.clone()).or_default(),
                file,
                name,
                req,
            )?;
        }
        for (e, n) in &r.errors {
            *stats.errors.entry(e.clone()).or_default() += n;
        }
        longest = longest.max(r.duration_seconds);
        cut |= r.cut_at_max_duration;
        for s in &r.seconds {
            match seconds.get_mut(&s.second) {
                Some(m) => m.absorb(s, true),
                None => {
                    seconds.insert(s.second, s.clone());
                }
            }
        }
    }
    stats.seconds = seconds.into_values().collect();
    let mut merged = Results::new(
        &stats,
        first.started_at.clone(),
        Duration::from_secs_f64(longest),
        cut,
        Vec::new(),
    );
    merged.seconds = stats.seconds;
    Ok(merged)
}
