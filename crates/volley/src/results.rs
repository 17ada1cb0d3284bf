//! `results.json`: the run's figures, and its histograms in HdrHistogram's interchange
//! encoding so that runs from several generators can be merged exactly.

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2DeflateSerializer};
use serde::Serialize;

use crate::stats::{Second, Stats, Summary, rate};

/// One request name's figures.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestResults {
    /// All responses.
    pub total: Summary,
    /// OK responses.
    pub ok: Summary,
    /// KO responses.
    pub ko: Summary,
    /// Responses a second over the run.
    pub mean_rps: f64,
    /// HdrHistogram V2 (deflate), base64: every response time in µs.
    pub histogram: String,
}

/// The whole run.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Results {
    /// volley's version.
    pub volley: &'static str,
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
        mean_rps: rate(t.all.len(), elapsed),
        histogram: encode(&t.all),
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
            volley: env!("CARGO_PKG_VERSION"),
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
