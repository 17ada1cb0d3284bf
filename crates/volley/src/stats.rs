//! What a run measured: HDR histograms per request name and in all, errors, and a series
//! per second for charts.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// 1 µs to 1 h at 3 significant digits, as HdrHistogram users expect.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("constant bounds are valid")
}

/// Histograms of one request name (or of all).
#[derive(Clone, Debug)]
pub struct Tally {
    /// Every response.
    pub all: Histogram<u64>,
    /// OK responses.
    pub ok: Histogram<u64>,
    /// KO responses.
    pub ko: Histogram<u64>,
    /// Raw service time of every response: from when the request was sent (not when it was
    /// due) to its last byte. Beside `all`, it shows how much of a response time was the
    /// wait before sending.
    pub service: Histogram<u64>,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            all: histogram(),
            ok: histogram(),
            ko: histogram(),
            service: histogram(),
        }
    }
}

impl Tally {
    fn record(&mut self, micros: u64, service: u64, ok: bool) {
        let _ = self.service.record(service.clamp(1, 3_600_000_000));
        let v = micros.clamp(1, 3_600_000_000);
        let _ = self.all.record(v);
        let _ = if ok {
            self.ok.record(v)
        } else {
            self.ko.record(v)
        };
    }
}

/// One second of the run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Second {
    /// Seconds since the start.
    pub second: u64,
    /// Responses received this second.
    pub requests: u64,
    /// OK among them.
    pub ok: u64,
    /// KO among them.
    pub ko: u64,
    /// Users active at the end of the second.
    pub active_users: u64,
    /// Response-time percentiles this second, in ms.
    pub p50: f64,
    /// 95th percentile, ms.
    pub p95: f64,
    /// 99th percentile, ms.
    pub p99: f64,
}

impl Second {
    /// Adds another share of the same second: counts add; percentiles, which cannot be
    /// merged without the second's histograms, take the highest; active users add when the
    /// shares are separate generators (`sum_users`), else take the highest.
    pub fn absorb(&mut self, other: &Second, sum_users: bool) {
        self.requests += other.requests;
        self.ok += other.ok;
        self.ko += other.ko;
        self.active_users = if sum_users {
            self.active_users + other.active_users
        } else {
            self.active_users.max(other.active_users)
        };
        self.p50 = self.p50.max(other.p50);
        self.p95 = self.p95.max(other.p95);
        self.p99 = self.p99.max(other.p99);
    }
}

/// Everything measured so far.
#[derive(Debug, Default)]
pub struct Stats {
    /// Per request name.
    pub by_name: BTreeMap<String, Tally>,
    /// All requests.
    pub global: Tally,
    /// KO messages and how often they happened.
    pub errors: BTreeMap<String, u64>,
    /// Finished seconds.
    pub seconds: Vec<Second>,
    current: Option<(u64, Histogram<u64>, u64, u64)>,
}

impl Stats {
    /// Records one response `micros` long, `second`s into the run.
    pub fn record(
        &mut self,
        name: &str,
        second: u64,
        micros: u64,
        service: u64,
        error: Option<&str>,
        active: u64,
    ) {
        let ok = error.is_none();
        match self.by_name.get_mut(name) {
            Some(t) => t.record(micros, service, ok),
            None => {
                let mut t = Tally::default();
                t.record(micros, service, ok);
                self.by_name.insert(name.to_owned(), t);
            }
        }
        self.global.record(micros, service, ok);
        if let Some(e) = error {
            *self.errors.entry(e.to_owned()).or_default() += 1;
        }
        self.roll_to(second, active);
        if let Some((_, h, oks, kos)) = &mut self.current {
            let _ = h.record(micros.clamp(1, 3_600_000_000));
            if ok {
                *oks += 1;
            } else {
                *kos += 1;
            }
        }
    }

    /// Closes the seconds before `second` (a response that arrives for a second already
    /// closed counts in the current one).
    pub fn roll_to(&mut self, second: u64, active: u64) {
        let Some((s, h, ok, ko)) = self.current.take() else {
            self.current = Some((second, histogram(), 0, 0));
            return;
        };
        if s >= second {
            self.current = Some((s, h, ok, ko));
            return;
        }
        let ms = |q: f64| {
            if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(q) as f64 / 1000.0
            }
        };
        self.seconds.push(Second {
            second: s,
            requests: ok + ko,
            ok,
            ko,
            active_users: active,
            p50: ms(0.5),
            p95: ms(0.95),
            p99: ms(0.99),
        });
        for empty in s + 1..second {
            self.seconds.push(Second {
                second: empty,
                requests: 0,
                ok: 0,
                ko: 0,
                active_users: active,
                p50: 0.0,
                p95: 0.0,
                p99: 0.0,
            });
        }
        self.current = Some((second, histogram(), 0, 0));
    }
}

impl Tally {
    fn add(&mut self, other: &Tally) {
        let _ = self.all.add(&other.all);
        let _ = self.ok.add(&other.ok);
        let _ = self.ko.add(&other.ko);
        let _ = self.service.add(&other.service);
    }
}

impl Stats {
    /// Adds `other` (another thread's share of the same run) into this one. Histograms add
    /// exactly; a second's percentiles are the highest of the shares'.
    pub fn merge_from(&mut self, other: &Stats) {
        self.global.add(&other.global);
        for (name, t) in &other.by_name {
            self.by_name.entry(name.clone()).or_default().add(t);
        }
        for (e, n) in &other.errors {
            *self.errors.entry(e.clone()).or_default() += n;
        }
        let mut seconds: BTreeMap<u64, Second> =
            self.seconds.drain(..).map(|s| (s.second, s)).collect();
        let open = other.current.as_ref().map(|(s, h, ok, ko)| {
            let ms = |q: f64| {
                if h.is_empty() {
                    0.0
                } else {
                    h.value_at_quantile(q) as f64 / 1000.0
                }
            };
            Second {
                second: *s,
                requests: ok + ko,
                ok: *ok,
                ko: *ko,
                active_users: 0,
                p50: ms(0.5),
                p95: ms(0.95),
                p99: ms(0.99),
            }
        });
        for s in other.seconds.iter().cloned().chain(open) {
            match seconds.get_mut(&s.second) {
                // Shards of one run see the same users: the count is not added.
                Some(m) => m.absorb(&s, false),
                None => {
                    seconds.insert(s.second, s);
                }
            }
        }
        self.seconds = seconds.into_values().collect();
    }
}

/// The summary of one histogram in Gatling's terms (times in ms).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Responses.
    pub count: u64,
    /// Shortest.
    pub min: f64,
    /// Longest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub std_dev: f64,
    /// 50th percentile.
    pub p50: f64,
    /// 75th.
    pub p75: f64,
    /// 95th.
    pub p95: f64,
    /// 99th.
    pub p99: f64,
}

impl Summary {
    /// Of `h` (values in µs).
    pub fn of(h: &Histogram<u64>) -> Summary {
        if h.is_empty() {
            return Summary::default();
        }
        let ms = |v: u64| v as f64 / 1000.0;
        Summary {
            count: h.len(),
            min: ms(h.min()),
            max: ms(h.max()),
            mean: h.mean() / 1000.0,
            std_dev: h.stdev() / 1000.0,
            p50: ms(h.value_at_quantile(0.50)),
            p75: ms(h.value_at_quantile(0.75)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
        }
    }
}

/// A figure of a [`Summary`].
pub type Figure = fn(&Summary) -> f64;

/// The response-time rows of Gatling's Global Information table: label, and the figure (ms).
pub const TIME_ROWS: &[(&str, Figure)] = &[
    ("min response time (ms)", |s| s.min),
    ("max response time (ms)", |s| s.max),
    ("mean response time (ms)", |s| s.mean),
    ("std deviation (ms)", |s| s.std_dev),
    ("response time 50th percentile (ms)", |s| s.p50),
    ("response time 75th percentile (ms)", |s| s.p75),
    ("response time 95th percentile (ms)", |s| s.p95),
    ("response time 99th percentile (ms)", |s| s.p99),
];

/// Requests per second over `elapsed`.
pub fn rate(count: u64, elapsed: Duration) -> f64 {
    let s = elapsed.as_secs_f64();
    if s > 0.0 { count as f64 / s } else { 0.0 }
}
