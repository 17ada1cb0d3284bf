//! What a run measured: HDR histograms per request name and in all, KO messages, and a
//! series over time for charts (an entry a second, or every few seconds past an hour), all
//! bounded in memory however long the run.

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
    /// Responses, OK and KO, counted: `all`, `ok` and `ko` may also hold the values a
    /// closed-model run's correction for coordinated omission adds, which are no responses.
    pub requests: u64,
    /// OK responses.
    pub oks: u64,
    /// KO responses.
    pub kos: u64,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            all: histogram(),
            ok: histogram(),
            ko: histogram(),
            service: histogram(),
            requests: 0,
            oks: 0,
            kos: 0,
        }
    }
}

/// The most values one response's correction adds: beyond it, the values are recorded in
/// groups (each value standing for several, by `record_n`), so that a long stall under a
/// short interval costs a bounded time to record.
const MAX_BACK_FILL: u64 = 1_000;

/// HdrHistogram's correction for coordinated omission (`recordValueWithExpectedInterval`):
/// a response `v` µs long, where one was expected every `interval` µs, stands for the
/// responses that would have been sent meanwhile and waited `v - interval`, `v - 2 interval`...
/// down to `interval`. Adds those to `h`.
fn back_fill(h: &mut Histogram<u64>, v: u64, interval: u64) {
    if interval == 0 || v <= interval {
        return;
    }
    let missing = (v / interval).saturating_sub(1);
    let group = missing.div_ceil(MAX_BACK_FILL).max(1);
    let mut k = 1;
    while k <= missing {
        let n = group.min(missing - k + 1);
        let _ = h.record_n((v - k * interval).clamp(1, 3_600_000_000), n);
        k += n;
    }
}

impl Tally {
    /// One response `micros` long from when it was due, `service` from its send, corrected
    /// for an expected `interval` (µs; 0: none, see [`back_fill`]).
    fn record(&mut self, micros: u64, service: u64, ok: bool, interval: u64) {
        let _ = self.service.record(service.clamp(1, 3_600_000_000));
        let v = micros.clamp(1, 3_600_000_000);
        self.requests += 1;
        let _ = self.all.record(v);
        back_fill(&mut self.all, v, interval);
        let h = if ok {
            self.oks += 1;
            &mut self.ok
        } else {
            self.kos += 1;
            &mut self.ko
        };
        let _ = h.record(v);
        back_fill(h, v, interval);
    }
}

/// One group's executions (Gatling's `group`): `cumulated` holds each execution's
/// cumulated response time (the sum of its requests' times, µs), OK unless one of them was
/// KO; `duration` how long each took from its first step to its last, pauses included (its
/// `service` histogram).
#[derive(Clone, Debug, Default)]
pub struct GroupTally {
    /// Cumulated response times, and the executions counted OK and KO.
    pub cumulated: Tally,
}

impl GroupTally {
    /// The executions' durations, µs.
    pub fn duration(&self) -> &Histogram<u64> {
        &self.cumulated.service
    }
}

/// The most entries a run's series has: one a second up to an hour, then each entry covers
/// several seconds ([`series_interval`]), so that memory and `results.json` stay bounded
/// however long the run.
pub const MAX_SERIES_ENTRIES: u64 = 3_600;

/// Seconds each entry of the series covers for a run of at most `max_duration`: 1 up to an
/// hour, then as many as keep the run within [`MAX_SERIES_ENTRIES`].
pub fn series_interval(max_duration: Duration) -> u64 {
    max_duration
        .as_secs()
        .saturating_add(u64::from(max_duration.subsec_nanos() > 0))
        .div_ceil(MAX_SERIES_ENTRIES)
        .max(1)
}

/// One entry of the per-second series: `seriesInterval` seconds of the run (one, unless the
/// run may last more than an hour).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
pub struct SeriesEntry {
    /// Seconds since the start when the entry begins (a multiple of `seriesInterval`).
    pub second: u64,
    /// Responses received in the entry (over all its seconds: divide by `seriesInterval`
    /// for a rate).
    pub requests: u64,
    /// OK among them.
    pub ok: u64,
    /// KO among them.
    pub ko: u64,
    /// Users active at the end of the entry.
    pub active_users: u64,
    /// Median response time in the entry, ms.
    pub p50: f64,
    /// 95th percentile, ms.
    pub p95: f64,
    /// 99th percentile, ms.
    pub p99: f64,
}

impl SeriesEntry {
    fn empty(second: u64, active_users: u64) -> SeriesEntry {
        SeriesEntry {
            second,
            requests: 0,
            ok: 0,
            ko: 0,
            active_users,
            p50: 0.0,
            p95: 0.0,
            p99: 0.0,
        }
    }

    /// Adds another share of the same entry: counts add; percentiles, which cannot be
    /// merged without the entry's histograms, take the highest; active users add when the
    /// shares are separate generators (`sum_users`), else take the highest.
    pub fn absorb(&mut self, other: &SeriesEntry, sum_users: bool) {
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

/// `series` in entries of `interval` seconds (a multiple of the entries' own): the entries
/// that fall in one are absorbed into it (counts add, percentiles and active users take the
/// highest). At most [`MAX_SERIES_ENTRIES`] come out; anything later counts in the last.
pub fn rebucket(series: &[SeriesEntry], interval: u64) -> Vec<SeriesEntry> {
    let interval = interval.max(1);
    let mut out: BTreeMap<u64, SeriesEntry> = BTreeMap::new();
    for e in series {
        let second = (e.second / interval).min(MAX_SERIES_ENTRIES - 1) * interval;
        match out.get_mut(&second) {
            Some(m) => m.absorb(e, false),
            None => {
                out.insert(
                    second,
                    SeriesEntry {
                        second,
                        ..e.clone()
                    },
                );
            }
        }
    }
    out.into_values().collect()
}

/// The most distinct KO messages kept apart; further new ones are counted under
/// [`OTHER_ERRORS`], so a target that puts an id in every error message cannot grow the
/// run's memory.
pub const MAX_DISTINCT_ERRORS: usize = 1_000;

/// The entry that counts the KO messages past the first [`MAX_DISTINCT_ERRORS`] distinct
/// ones.
pub const OTHER_ERRORS: &str = "(other KO messages: past 1000 distinct ones, counted together)";

/// KO messages and how often each happened, at most [`MAX_DISTINCT_ERRORS`] apart.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Errors {
    counts: BTreeMap<String, u64>,
}

impl Errors {
    /// Counts `n` more of `message`.
    pub fn add(&mut self, message: &str, n: u64) {
        if let Some(count) = self.counts.get_mut(message) {
            *count += n;
            return;
        }
        let distinct = self.counts.len() - usize::from(self.counts.contains_key(OTHER_ERRORS));
        let key = if distinct >= MAX_DISTINCT_ERRORS {
            OTHER_ERRORS
        } else {
            message
        };
        *self.counts.entry(key.to_owned()).or_default() += n;
    }

    /// The messages and their counts, by message.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &u64)> {
        self.counts.iter()
    }

    /// How often `message` happened.
    pub fn get(&self, message: &str) -> Option<u64> {
        self.counts.get(message).copied()
    }

    /// The entries (distinct messages, and [`OTHER_ERRORS`] if any).
    pub fn len(&self) -> usize {
        self.counts.len()
    }

    /// No KO at all.
    pub fn is_empty(&self) -> bool {
        self.counts.is_empty()
    }

    /// KOs in all.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }

    /// The counts by message.
    pub fn as_map(&self) -> &BTreeMap<String, u64> {
        &self.counts
    }
}

/// The series entry being filled: its first second, its response times, its OKs and KOs.
#[derive(Debug)]
struct Open {
    second: u64,
    times: Histogram<u64>,
    ok: u64,
    ko: u64,
}

impl Open {
    fn new(second: u64) -> Open {
        Open {
            second,
            times: histogram(),
            ok: 0,
            ko: 0,
        }
    }

    fn close(&self, active_users: u64) -> SeriesEntry {
        let ms = |q: f64| {
            if self.times.is_empty() {
                0.0
            } else {
                self.times.value_at_quantile(q) as f64 / 1000.0
            }
        };
        SeriesEntry {
            second: self.second,
            requests: self.ok + self.ko,
            ok: self.ok,
            ko: self.ko,
            active_users,
            p50: ms(0.5),
            p95: ms(0.95),
            p99: ms(0.99),
        }
    }
}

/// Everything measured so far.
#[derive(Debug)]
pub struct Stats {
    /// Per request name.
    pub by_name: BTreeMap<String, Tally>,
    /// All requests.
    pub global: Tally,
    /// KO messages and how often they happened.
    pub errors: Errors,
    /// Finished entries of the series, each [`Stats::series_interval`] seconds.
    pub series: Vec<SeriesEntry>,
    /// TCP connect times of the connections opened, µs (apart from the response times,
    /// which count them too when a request had to open one).
    pub connect: Histogram<u64>,
    /// TLS handshake times of the connections opened to an `https://` target, µs.
    pub tls_handshake: Histogram<u64>,
    /// Per group, by its path (`checkout`, `checkout / payment` for one nested in it).
    pub groups: BTreeMap<String, GroupTally>,
    interval: u64,
    current: Option<Open>,
}

impl Default for Stats {
    /// Entries of one second.
    fn default() -> Self {
        Stats::new(1)
    }
}

impl Stats {
    /// Empty, with series entries of `interval` seconds (see [`series_interval`]).
    pub fn new(interval: u64) -> Stats {
        Stats {
            by_name: BTreeMap::new(),
            global: Tally::default(),
            errors: Errors::default(),
            series: Vec::new(),
            connect: histogram(),
            tls_handshake: histogram(),
            groups: BTreeMap::new(),
            interval: interval.max(1),
            current: None,
        }
    }

    /// Seconds each series entry covers.
    pub fn series_interval(&self) -> u64 {
        self.interval
    }

    /// The first second of the entry that `second` falls in (anything past the last entry
    /// counts in the last).
    fn entry_of(&self, second: u64) -> u64 {
        (second / self.interval).min(MAX_SERIES_ENTRIES - 1) * self.interval
    }

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
        self.record_corrected(name, second, micros, service, error, active, 0);
    }

    /// [`record`](Self::record), for a closed-model request whose user was expected to send
    /// one every `interval` µs: the response also stands for those it held back (see
    /// `back_fill`; 0: no correction).
    #[allow(clippy::too_many_arguments)]
    pub fn record_corrected(
        &mut self,
        name: &str,
        second: u64,
        micros: u64,
        service: u64,
        error: Option<&str>,
        active: u64,
        interval: u64,
    ) {
        let ok = error.is_none();
        match self.by_name.get_mut(name) {
            Some(t) => t.record(micros, service, ok, interval),
            None => {
                let mut t = Tally::default();
                t.record(micros, service, ok, interval);
                self.by_name.insert(name.to_owned(), t);
            }
        }
        self.global.record(micros, service, ok, interval);
        if let Some(e) = error {
            self.errors.add(e, 1);
        }
        self.roll_to(second, active);
        if let Some(open) = &mut self.current {
            let _ = open.times.record(micros.clamp(1, 3_600_000_000));
            if ok {
                open.ok += 1;
            } else {
                open.ko += 1;
            }
        }
    }

    /// Records an execution of the group at `path`: the sum of its requests' response times
    /// and its duration (µs), KO when one of its requests was.
    pub fn record_group(&mut self, path: &str, cumulated: u64, duration: u64, ok: bool) {
        let g = match self.groups.get_mut(path) {
            Some(g) => g,
            None => self.groups.entry(path.to_owned()).or_default(),
        };
        g.cumulated.record(cumulated, duration, ok, 0);
    }

    /// Records a connection opened: its TCP connect time, and its TLS handshake's.
    pub fn record_connection(&mut self, connect: Duration, handshake: Option<Duration>) {
        let micros = |d: Duration| (d.as_micros() as u64).clamp(1, 3_600_000_000);
        let _ = self.connect.record(micros(connect));
        if let Some(h) = handshake {
            let _ = self.tls_handshake.record(micros(h));
        }
    }

    /// Whether a response `second`s into the run closes the current entry of the series
    /// (the users active then are the entry's).
    pub fn closes_entry_at(&self, second: u64) -> bool {
        self.current
            .as_ref()
            .is_some_and(|open| open.second < self.entry_of(second))
    }

    /// Closes the entries before the one `second` falls in (a response that arrives for an
    /// entry already closed counts in the current one).
    pub fn roll_to(&mut self, second: u64, active: u64) {
        let target = self.entry_of(second);
        let Some(open) = self.current.take() else {
            self.current = Some(Open::new(target));
            return;
        };
        if open.second >= target {
            self.current = Some(open);
            return;
        }
        self.series.push(open.close(active));
        let mut empty = open.second + self.interval;
        while empty < target {
            self.series.push(SeriesEntry::empty(empty, active));
            empty += self.interval;
        }
        self.current = Some(Open::new(target));
    }
}

impl Tally {
    pub(crate) fn add(&mut self, other: &Tally) {
        let _ = self.all.add(&other.all);
        let _ = self.ok.add(&other.ok);
        let _ = self.ko.add(&other.ko);
        let _ = self.service.add(&other.service);
        self.requests += other.requests;
        self.oks += other.oks;
        self.kos += other.kos;
    }
}

impl Stats {
    /// Adds `other` (another thread's share of the same run, with the same series interval)
    /// into this one. Histograms add exactly; an entry's percentiles are the highest of the
    /// shares'.
    pub fn merge_from(&mut self, other: &Stats) {
        self.global.add(&other.global);
        let _ = self.connect.add(&other.connect);
        let _ = self.tls_handshake.add(&other.tls_handshake);
        for (name, t) in &other.by_name {
            self.by_name.entry(name.clone()).or_default().add(t);
        }
        for (path, g) in &other.groups {
            self.groups
                .entry(path.clone())
                .or_default()
                .cumulated
                .add(&g.cumulated);
        }
        for (e, n) in other.errors.iter() {
            self.errors.add(e, *n);
        }
        let mut series: BTreeMap<u64, SeriesEntry> =
            self.series.drain(..).map(|s| (s.second, s)).collect();
        let open = other.current.as_ref().map(|o| o.close(0));
        for s in other.series.iter().cloned().chain(open) {
            match series.get_mut(&s.second) {
                // Stripes of one run see the same users: the count is not added.
                Some(m) => m.absorb(&s, false),
                None => {
                    series.insert(s.second, s);
                }
            }
        }
        self.series = series.into_values().collect();
    }
}

/// The summary of one histogram in Gatling's terms (times in ms).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(deny_unknown_fields)]
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
    /// Of `h` (values in µs), whose every value is a response.
    pub fn of(h: &Histogram<u64>) -> Summary {
        Summary::counted(h, h.len())
    }

    /// Of `h` (values in µs) standing for `count` responses (a corrected histogram holds more
    /// values than responses).
    pub fn counted(h: &Histogram<u64>, count: u64) -> Summary {
        if h.is_empty() {
            return Summary::default();
        }
        let ms = |v: u64| v as f64 / 1000.0;
        Summary {
            count,
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

/// Gatling's response time ranges at the distribution bounds (`distributionBounds`, ms): the
/// OK responses faster than the first, between the two, at or above the second, and the KO
/// responses. The console's Response Time Distribution and the report's ranges chart both
/// come from here, so that they show the same numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Ranges {
    /// OK responses with `t < low`.
    pub below: u64,
    /// OK responses with `low <= t < high`.
    pub between: u64,
    /// OK responses with `t >= high`.
    pub above: u64,
    /// KO responses.
    pub failed: u64,
}

impl Ranges {
    /// The ranges of `oks` OK responses whose times (µs) `ok` holds, and of `kos` KO ones, at
    /// `[low, high]` ms. A closed model's correction for coordinated omission adds values to
    /// `ok`, not responses: the histogram's shares are scaled to `oks`, and the three OK
    /// ranges add up to `oks` (the last takes what rounding the first two leaves).
    pub fn of(ok: &Histogram<u64>, oks: u64, kos: u64, [low, high]: [u64; 2]) -> Ranges {
        let values = ok.len();
        if values == 0 {
            return Ranges {
                failed: kos,
                ..Ranges::default()
            };
        }
        let count = |keep: &dyn Fn(u64) -> bool| {
            ok.iter_recorded()
                .filter(|v| keep(v.value_iterated_to()))
                .map(|v| v.count_since_last_iteration())
                .sum::<u64>()
        };
        let below = count(&|v| v < low.saturating_mul(1000));
        let above = count(&|v| v >= high.saturating_mul(1000));
        let between = values.saturating_sub(below + above);
        let share = |n: u64| (n as f64 * oks as f64 / values as f64).round() as u64;
        // Rounded apart, the three would not always add up to the OK responses.
        let (below, between) = (share(below), share(between));
        Ranges {
            below,
            between,
            above: oks.saturating_sub(below + between),
            failed: kos,
        }
    }

    /// The four counts, in Gatling's order: below, between, above, failed.
    pub fn counts(&self) -> [u64; 4] {
        [self.below, self.between, self.above, self.failed]
    }

    /// Responses in all.
    pub fn total(&self) -> u64 {
        self.counts().iter().sum()
    }

    /// The OK ranges' labels at `[low, high]` ms, Gatling's: `t < 800 ms`,
    /// `800 ms <= t < 1200 ms`, `t >= 1200 ms`.
    pub fn ok_labels([low, high]: [u64; 2]) -> [String; 3] {
        [
            format!("t < {low} ms"),
            format!("{low} ms <= t < {high} ms"),
            format!("t >= {high} ms"),
        ]
    }
}

#[cfg(test)]
mod tests {

    /// A response of 1,000 µs where one was expected every 300 µs stands for those of 700
    /// and 400 µs too (HdrHistogram's correction); a long stall's values are recorded in
    /// bounded groups that keep their count.
    #[test]
    fn back_fill_adds_the_responses_an_interval_would_have_sent() {
        let mut h = histogram();
        back_fill(&mut h, 1_000, 300);
        let values: Vec<(u64, u64)> = h
            .iter_recorded()
            .map(|v| (v.value_iterated_to(), v.count_at_value()))
            .collect();
        assert_eq!(values, [(400, 1), (700, 1)]);
        let mut h = histogram();
        back_fill(&mut h, 300, 300);
        back_fill(&mut h, 1_000, 0);
        assert!(h.is_empty());
        // 60 s at 1 µs: 59,999,999 values, in at most MAX_BACK_FILL records.
        let mut h = histogram();
        back_fill(&mut h, 60_000_000, 1);
        assert_eq!(h.len(), 59_999_999);
        assert!(h.max() >= 59_000_000 && h.min() <= 60_000);
    }

    use super::*;

    #[test]
    fn the_series_interval_keeps_a_run_within_3600_entries() {
        let h = |s: u64| Duration::from_secs(s);
        assert_eq!(series_interval(h(10)), 1);
        assert_eq!(series_interval(h(3_600)), 1, "an hour is a second an entry");
        assert_eq!(series_interval(h(3_601)), 2);
        assert_eq!(series_interval(Duration::from_millis(3_600_001)), 2);
        assert_eq!(series_interval(h(10 * 3_600)), 10);
        assert_eq!(series_interval(h(0)), 1);
    }

    #[test]
    fn entries_cover_the_interval_and_are_never_more_than_3600() {
        let mut stats = Stats::new(10);
        for second in 0..35 {
            stats.record("r", second, 1_000, 1_000, None, second);
            stats.record("r", second, 3_000, 1_000, Some("boom"), second);
        }
        stats.roll_to(40, 7);
        let seconds: Vec<u64> = stats.series.iter().map(|e| e.second).collect();
        assert_eq!(seconds, [0, 10, 20, 30]);
        assert!(stats.series.iter().all(|e| e.ok + e.ko == e.requests));
        assert_eq!(stats.series[0].requests, 20, "ten seconds of two responses");
        assert_eq!(stats.series[3].requests, 10, "the last five seconds");
        assert_eq!(stats.series[0].active_users, 10, "users at the entry's end");
        assert_eq!(stats.series[3].active_users, 7);
        assert!(
            (stats.series[0].p99 - 3.0).abs() < 0.01,
            "{:?}",
            stats.series[0]
        );

        // A run that overstays its maxDuration piles its last responses into the last entry.
        let mut stats = Stats::new(1);
        for second in [0, 1, 3_598, 3_599, 3_600, 5_000] {
            stats.record("r", second, 1_000, 1_000, None, 1);
        }
        stats.roll_to(6_000, 1);
        let mut all = Stats::new(1);
        all.merge_from(&stats);
        assert_eq!(all.series.len() as u64, MAX_SERIES_ENTRIES);
        assert_eq!(all.series.last().unwrap().second, 3_599);
        assert_eq!(all.series.last().unwrap().requests, 3);
        assert_eq!(all.series.iter().map(|e| e.requests).sum::<u64>(), 6);
    }

    #[test]
    fn rebucketing_adds_counts_and_keeps_the_highest_percentiles() {
        let entry = |second, requests, p99, active| SeriesEntry {
            second,
            requests,
            ok: requests,
            ko: 0,
            active_users: active,
            p50: p99 / 2.0,
            p95: p99,
            p99,
        };
        let fine = [
            entry(0, 5, 10.0, 3),
            entry(1, 7, 30.0, 4),
            entry(2, 1, 20.0, 2),
            entry(5, 2, 1.0, 1),
        ];
        assert_eq!(
            rebucket(&fine, 3),
            [
                SeriesEntry {
                    ok: 13,
                    p50: 15.0,
                    ..entry(0, 13, 30.0, 4)
                },
                entry(3, 2, 1.0, 1)
            ]
        );
        assert_eq!(
            rebucket(&fine, 1),
            fine,
            "the same resolution changes nothing"
        );
    }

    /// The ranges split the OK responses at the bounds and count the KOs apart; a corrected
    /// histogram's extra values are scaled back to responses, and the OK ranges add up.
    #[test]
    fn ranges_split_the_ok_responses_at_the_bounds() {
        let mut stats = Stats::default();
        for (ms, n) in [(100, 5), (900, 3), (1_500, 2)] {
            for _ in 0..n {
                stats.record("r", 0, ms * 1_000, 1_000, None, 1);
            }
        }
        stats.record("r", 0, 50_000, 1_000, Some("boom"), 1);
        let g = &stats.global;
        let ranges = Ranges::of(&g.ok, g.oks, g.kos, [800, 1_200]);
        assert_eq!(ranges.counts(), [5, 3, 2, 1]);
        assert_eq!(ranges.total(), 11);
        assert_eq!(
            Ranges::of(&g.ok, g.oks, g.kos, [1_000, 2_000]).counts(),
            [8, 2, 0, 1],
            "other bounds, other ranges"
        );

        // One 1,000 ms response corrected at 100 ms intervals is ten values (100 to 1,000 ms),
        // one response; two fast responses beside it: three responses, 12 values.
        let mut stats = Stats::default();
        stats.record_corrected("r", 0, 1_000_000, 1_000, None, 1, 100_000);
        stats.record("r", 0, 10_000, 1_000, None, 1);
        stats.record("r", 0, 10_000, 1_000, None, 1);
        let g = &stats.global;
        assert_eq!(g.ok.len(), 12);
        let ranges = Ranges::of(&g.ok, g.oks, g.kos, [800, 1_200]);
        assert_eq!(
            ranges.below + ranges.between + ranges.above,
            3,
            "{ranges:?}"
        );
        // 9 of the 12 values below 800 ms, 3 from 800 ms: 2.25 and 0.75 responses, rounded.
        assert_eq!(ranges.counts(), [2, 1, 0, 0], "{ranges:?}");
        assert_eq!(
            Ranges::of(&histogram(), 0, 4, [800, 1_200]),
            Ranges {
                failed: 4,
                ..Ranges::default()
            }
        );
        assert_eq!(
            Ranges::ok_labels([800, 1_200]),
            ["t < 800 ms", "800 ms <= t < 1200 ms", "t >= 1200 ms"]
        );
    }

    #[test]
    fn ko_messages_past_1000_distinct_are_counted_together() {
        let mut stats = Stats::default();
        for i in 0..1_500u64 {
            stats.record("r", 0, 1_000, 1_000, Some(&format!("order {i} failed")), 1);
        }
        stats.record("r", 0, 1_000, 1_000, Some("order 7 failed"), 1);
        assert_eq!(stats.errors.len(), MAX_DISTINCT_ERRORS + 1);
        assert_eq!(stats.errors.get(OTHER_ERRORS), Some(500));
        assert_eq!(
            stats.errors.get("order 7 failed"),
            Some(2),
            "known ones still count"
        );
        assert_eq!(stats.errors.get("order 1200 failed"), None);
        assert_eq!(stats.errors.total(), 1_501);

        // Stripes merged keep the cap too, and the catch-all adds up.
        let mut other = Stats::default();
        for i in 0..1_100u64 {
            other.record("r", 0, 1_000, 1_000, Some(&format!("refund {i} failed")), 1);
        }
        stats.merge_from(&other);
        assert_eq!(stats.errors.len(), MAX_DISTINCT_ERRORS + 1);
        assert_eq!(stats.errors.get(OTHER_ERRORS), Some(500 + 1_100));
        assert_eq!(stats.errors.total(), 1_501 + 1_100);
    }
}
