//! `/metrics` (DropWizard's JSON, or Prometheus text when the `Accept` header asks for it, as
//! Prometheus's scraper does) and `/metrics/prometheus`; and the metrics ferrowizard
//! registers on its own: the process's, and the logging pipeline's counters, which
//! DropWizard cannot show (events written and dropped per appender and level, queue depth).

use std::sync::Arc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use ferrowizard_logging::{AppenderStats, LevelCounts};
use ferrowizard_metrics::{MetricRegistry, RegistryError};

/// The media type of Prometheus's text format 0.0.4.
const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// `/metrics` and `/metrics/prometheus`.
pub(crate) fn routes(registry: MetricRegistry) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .route("/metrics/prometheus", get(prometheus))
        .with_state(registry)
}

#[derive(serde::Deserialize)]
struct Params {
    #[serde(default)]
    pretty: Option<String>,
}

/// Whether the client prefers Prometheus's text (its scraper sends
/// `Accept: application/openmetrics-text;...,text/plain;version=0.0.4;...`) to JSON.
fn wants_text(headers: &HeaderMap) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.split(';').next().unwrap_or("").trim())
        .find(|t| *t == "application/json" || *t == "text/plain" || t.contains("openmetrics"))
        .is_some_and(|t| t != "application/json")
}

async fn metrics(
    State(registry): State<MetricRegistry>,
    Query(params): Query<Params>,
    headers: HeaderMap,
) -> Response {
    if wants_text(&headers) {
        return prometheus(State(registry)).await;
    }
    let pretty = params.pretty.as_deref().is_some_and(|p| p == "true");
    let mut response = registry.render_json(pretty).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

async fn prometheus(State(registry): State<MetricRegistry>) -> Response {
    let mut response = registry.render_prometheus().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(PROMETHEUS));
    response
}

/// The process: resident memory, CPU seconds, open file descriptors, threads, start time and
/// uptime, under the names Prometheus's client libraries use.
pub fn register_process(registry: &MetricRegistry) -> Result<(), RegistryError> {
    let started = Instant::now();
    let start_time = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    registry.describe("process.resident_memory_bytes", "Resident memory");
    registry.gauge("process.resident_memory_bytes", &[], || {
        proc::resident_bytes().unwrap_or(0) as f64
    })?;
    registry.describe("process.cpu_seconds", "CPU time, user and system");
    registry.counter_fn("process.cpu_seconds", &[], || {
        proc::cpu_seconds().unwrap_or(0.0)
    })?;
    registry.describe("process.open_fds", "Open file descriptors");
    registry.gauge("process.open_fds", &[], || {
        proc::count_dir("/proc/self/fd") as f64
    })?;
    registry.describe("process.threads", "OS threads");
    registry.gauge("process.threads", &[], || {
        proc::count_dir("/proc/self/task") as f64
    })?;
    registry.describe(
        "process.start_time_seconds",
        "Start time, seconds since the Unix epoch",
    );
    registry.gauge("process.start_time_seconds", &[], move || start_time)?;
    registry.describe("process.uptime_seconds", "Seconds since the start");
    registry.gauge("process.uptime_seconds", &[], move || {
        started.elapsed().as_secs_f64()
    })?;
    Ok(())
}

/// Reads what `/proc` says of this process.
mod proc {
    /// Bytes per page for `statm` (4 KiB on the platforms this runs on; reading the real value
    /// needs `sysconf` through `libc` and `unsafe`).
    const PAGE: u64 = 4096;
    pub(super) fn resident_bytes() -> Option<u64> {
        let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
        let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
        Some(pages * PAGE)
    }

    pub(super) fn cpu_seconds() -> Option<f64> {
        let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
        let info = crate::admin::threads::parse_stat(&stat)?;
        Some(info.user_seconds + info.system_seconds)
    }

    pub(super) fn count_dir(path: &str) -> usize {
        std::fs::read_dir(path).map_or(0, |d| d.count())
    }
}

/// Publishes appenders' counters: per appender and level, events emitted, written and
/// dropped; per appender, queue depth, capacity, high-water mark and write errors.
/// `stats` reads them all (one call per rendered value: they are a few atomics each); the
/// first call also gives each appender's labels (`appender`, `type`, `target`, see
/// [`ferrowizard_logging::AppenderLabels`]), then `level` for the per-level counters:
/// `ferrowizard_logging_queue_capacity{appender="0",type="console",target="stdout"}` in
/// Prometheus, `ferrowizard.logging.queue.capacity.0.console.stdout` in DropWizard's JSON.
pub fn register_appenders(
    registry: &MetricRegistry,
    stats: Arc<dyn Fn() -> Vec<AppenderStats> + Send + Sync>,
) -> Result<(), RegistryError> {
    registry.describe(
        "ferrowizard.logging.emitted",
        "Events an appender accepted (passed its threshold), by level",
    );
    registry.describe(
        "ferrowizard.logging.written",
        "Events an appender wrote, by level",
    );
    registry.describe(
        "ferrowizard.logging.dropped",
        "Events an appender dropped (queue policy, write errors), by level",
    );
    registry.describe("ferrowizard.logging.queue.depth", "Events queued now");
    registry.describe("ferrowizard.logging.queue.capacity", "The queue's slots");
    registry.describe(
        "ferrowizard.logging.queue.high_water",
        "The most events ever queued at once",
    );
    registry.describe("ferrowizard.logging.write_errors", "Failed writes");
    registry.describe(
        "ferrowizard.logging.waited",
        "Events whose thread waited for room in a full queue",
    );
    for (i, appender) in stats().into_iter().enumerate() {
        let [place, kind, target] = appender.labels.pairs();
        let read = {
            let stats = stats.clone();
            move |f: fn(&AppenderStats) -> f64| {
                let stats = stats.clone();
                move || stats().get(i).map_or(0.0, f)
            }
        };
        for (l, level) in ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"]
            .iter()
            .enumerate()
        {
            let labels = [place, kind, target, ("level", *level)];
            let count = |which: fn(&LevelCounts) -> u64| {
                let stats = stats.clone();
                move || {
                    stats()
                        .get(i)
                        .and_then(|s| s.levels.get(l).map(which))
                        .unwrap_or(0) as f64
                }
            };
            registry.counter_fn("ferrowizard.logging.emitted", &labels, count(|c| c.emitted))?;
            registry.counter_fn("ferrowizard.logging.written", &labels, count(|c| c.written))?;
            registry.counter_fn("ferrowizard.logging.dropped", &labels, count(|c| c.dropped))?;
        }
        let labels = appender.labels.pairs();
        registry.gauge(
            "ferrowizard.logging.queue.depth",
            &labels,
            read(|s| s.queue_depth as f64),
        )?;
        registry.gauge(
            "ferrowizard.logging.queue.capacity",
            &labels,
            read(|s| s.queue_capacity as f64),
        )?;
        registry.gauge(
            "ferrowizard.logging.queue.high_water",
            &labels,
            read(|s| s.high_water_mark as f64),
        )?;
        registry.counter_fn(
            "ferrowizard.logging.write_errors",
            &labels,
            read(|s| s.write_errors as f64),
        )?;
        registry.counter_fn(
            "ferrowizard.logging.waited",
            &labels,
            read(|s| s.waited as f64),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accept(v: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        h
    }

    #[test]
    fn prometheus_scrapers_get_text_and_browsers_json() {
        assert!(wants_text(&accept(
            "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1"
        )));
        assert!(wants_text(&accept("text/plain;version=0.0.4")));
        assert!(!wants_text(&accept("application/json")));
        assert!(!wants_text(&accept(
            "text/html,application/xhtml+xml,*/*;q=0.8"
        )));
        assert!(!wants_text(&HeaderMap::new()));
    }

    #[test]
    fn process_metrics_read_proc() {
        assert!(proc::resident_bytes().unwrap() > 1_000_000);
        assert!(proc::cpu_seconds().unwrap() >= 0.0);
        assert!(proc::count_dir("/proc/self/fd") >= 3);
    }
}
