//! `volley run --prometheus ADDR`: the running test's counters and response-time summaries
//! at `http://ADDR/metrics` in Prometheus' text format, for a Prometheus to scrape while a long
//! test runs (what Gatling sends to Graphite, and k6 to its outputs).
//!
//! Each scrape merges the run's measurements as the console does: cumulative from the start,
//! so `rate(volley_requests_total[1m])` is the request rate and the summaries' quantiles are
//! the run's so far.

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;

use ferrowizard_metrics::names::escape_label_value as escape;
use ferrowizard_metrics::render::prometheus::{number, write_family};

use crate::engine::{Run, Users};
use crate::stats::Stats;

/// The quantiles each summary gives.
const QUANTILES: [f64; 5] = [0.5, 0.75, 0.95, 0.99, 1.0];

/// Serves `/metrics` on `listener` until the task is dropped; anything else is 404.
pub async fn serve(listener: tokio::net::TcpListener, run: Arc<Run>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            // Out of file descriptors, say: the listener stays readable, so wait before
            // trying again rather than spin on a core the load needs.
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            continue;
        };
        let run = run.clone();
        let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
            let response = if req.uri().path() == "/metrics" {
                let text = render(
                    &run.snapshot(),
                    &users_now(&run.users),
                    run.started.elapsed(),
                );
                hyper::Response::builder()
                    .header("content-type", "text/plain; version=0.0.4; charset=utf-8")
                    .body(Full::new(Bytes::from(text)))
            } else {
                hyper::Response::builder()
                    .status(404)
                    .body(Full::new(Bytes::from_static(b"volley serves /metrics\n")))
            };
            std::future::ready(response)
        });
        tokio::spawn(async move {
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}

/// The scenarios' users now, one entry a name: scenarios of the same name are one series (a
/// label set appears once in a scrape), their users added up.
fn users_now(scenarios: &[Arc<Users>]) -> Vec<UsersNow> {
    let mut users: Vec<UsersNow> = Vec::new();
    for u in scenarios {
        let (started, done) = (u.started.load(Relaxed), u.done.load(Relaxed));
        match users.iter_mut().find(|n| n.scenario == u.name) {
            Some(n) => {
                n.started += started;
                n.done += done;
            }
            None => users.push(UsersNow {
                scenario: u.name.clone(),
                started,
                done,
            }),
        }
    }
    users
}

/// One scenario's users at a scrape.
#[derive(Clone, Debug)]
pub struct UsersNow {
    /// The scenario's name.
    pub scenario: String,
    /// Users started so far.
    pub started: u64,
    /// Users finished so far.
    pub done: u64,
}

/// The Prometheus text of `stats` and `users`, `elapsed` into the run.
///
/// ```
/// let mut stats = volley::stats::Stats::new(1);
/// stats.record("quote", 0, 1_500, 1_500, None, 0);
/// let users = [volley::live::UsersNow { scenario: "s".into(), started: 1, done: 1 }];
/// let text = volley::live::render(&stats, &users, std::time::Duration::from_secs(1));
/// assert!(text.contains("volley_requests_total{request=\"quote\",outcome=\"ok\"} 1\n"));
/// ```
pub fn render(stats: &Stats, users: &[UsersNow], elapsed: std::time::Duration) -> String {
    let mut out = String::with_capacity(4096);
    write_family(
        &mut out,
        "volley_requests_total",
        "counter",
        Some("Requests answered (ok) or failed (ko), by request name"),
    );
    for (name, t) in &stats.by_name {
        for (outcome, n) in [("ok", t.oks), ("ko", t.kos)] {
            let _ = writeln!(
                out,
                "volley_requests_total{{request=\"{}\",outcome=\"{outcome}\"}} {n}",
                escape(name)
            );
        }
    }
    write_family(
        &mut out,
        "volley_response_time_seconds",
        "summary",
        Some(
            "Response times so far by request name, from when each request was due (with the closed \
         model's correction for coordinated omission, as in results.json)",
        ),
    );
    for (name, t) in &stats.by_name {
        let name = escape(name);
        for q in QUANTILES {
            let value = if t.all.is_empty() {
                f64::NAN
            } else {
                t.all.value_at_quantile(q) as f64 / 1e6
            };
            let _ = writeln!(
                out,
                "volley_response_time_seconds{{request=\"{name}\",quantile=\"{q}\"}} {}",
                number(value)
            );
        }
        let count = t.all.len();
        let sum = t.all.mean() * count as f64 / 1e6;
        let _ = writeln!(
            out,
            "volley_response_time_seconds_sum{{request=\"{name}\"}} {}",
            number(sum)
        );
        let _ = writeln!(
            out,
            "volley_response_time_seconds_count{{request=\"{name}\"}} {count}"
        );
    }
    write_family(
        &mut out,
        "volley_errors_total",
        "counter",
        Some("Failed requests by KO message"),
    );
    for (message, n) in stats.errors.iter() {
        let _ = writeln!(
            out,
            "volley_errors_total{{error=\"{}\"}} {n}",
            escape(message)
        );
    }
    write_family(
        &mut out,
        "volley_users_started_total",
        "counter",
        Some("Users started, by scenario"),
    );
    for u in users {
        let _ = writeln!(
            out,
            "volley_users_started_total{{scenario=\"{}\"}} {}",
            escape(&u.scenario),
            u.started
        );
    }
    write_family(
        &mut out,
        "volley_users_active",
        "gauge",
        Some("Users started and not finished, by scenario"),
    );
    for u in users {
        let _ = writeln!(
            out,
            "volley_users_active{{scenario=\"{}\"}} {}",
            escape(&u.scenario),
            u.started.saturating_sub(u.done)
        );
    }
    write_family(
        &mut out,
        "volley_connections_opened_total",
        "counter",
        Some("Connections opened"),
    );
    let _ = writeln!(
        out,
        "volley_connections_opened_total {}",
        stats.connect.len()
    );
    write_family(
        &mut out,
        "volley_elapsed_seconds",
        "gauge",
        Some("Time since the run started"),
    );
    let _ = writeln!(out, "volley_elapsed_seconds {}", elapsed.as_secs_f64());
    out
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU64;

    use super::*;

    fn scenario(name: &str, started: u64, done: u64) -> Arc<Users> {
        Arc::new(Users {
            name: name.to_owned(),
            planned: AtomicU64::new(0),
            started: AtomicU64::new(started),
            done: AtomicU64::new(done),
        })
    }

    /// Catches: scenarios of the same name scraped as two series, or another scenario's users
    /// added to them, or their counts subtracted or multiplied instead of added.
    #[test]
    fn scenarios_of_one_name_are_one_series_with_their_users_added() {
        let users = users_now(&[
            scenario("browse", 5, 2),
            scenario("buy", 7, 1),
            scenario("browse", 3, 3),
        ]);
        let seen: Vec<(&str, u64, u64)> = users
            .iter()
            .map(|u| (u.scenario.as_str(), u.started, u.done))
            .collect();
        assert_eq!(seen, [("browse", 8, 5), ("buy", 7, 1)]);
        let text = render(&Stats::new(1), &users, std::time::Duration::ZERO);
        assert!(text.contains("volley_users_started_total{scenario=\"browse\"} 8\n"));
        assert!(text.contains("volley_users_active{scenario=\"browse\"} 3\n"));
        assert!(text.contains("volley_users_active{scenario=\"buy\"} 6\n"));
    }

    /// A summary's `_sum` is the total of its response times in seconds, its quantiles each
    /// the histogram's.
    ///
    /// Catches: the sum computed from the mean by anything but `mean * count`, or not in
    /// seconds; a quantile read at another.
    #[test]
    fn a_summary_sums_its_response_times_in_seconds() {
        let mut stats = Stats::new(1);
        for micros in [1_000, 2_000, 6_000] {
            stats.record("quote", 0, micros, micros, None, 0);
        }
        let text = render(&stats, &[], std::time::Duration::ZERO);
        let value = |series: &str| -> f64 {
            let line = text
                .lines()
                .find(|l| l.starts_with(series))
                .unwrap_or_else(|| panic!("no {series} in {text}"));
            line.rsplit(' ').next().unwrap().parse().unwrap()
        };
        let sum = value("volley_response_time_seconds_sum{request=\"quote\"}");
        assert!((sum - 0.009).abs() < 1e-5, "sum {sum}");
        let median = value("volley_response_time_seconds{request=\"quote\",quantile=\"0.5\"}");
        assert!((median - 0.002).abs() < 1e-5, "median {median}");
        let max = value("volley_response_time_seconds{request=\"quote\",quantile=\"1\"}");
        assert!((max - 0.006).abs() < 1e-5, "max {max}");
    }

    #[test]
    fn label_values_are_escaped_and_every_family_is_typed() {
        let mut stats = Stats::new(1);
        stats.record("a\"b\\c\nd", 0, 2_000, 2_000, Some("Connection refused"), 0);
        stats.record("a\"b\\c\nd", 0, 4_000, 4_000, None, 0);
        let text = render(&stats, &[], std::time::Duration::from_millis(1500));
        assert!(
            text.contains(r#"volley_requests_total{request="a\"b\\c\nd",outcome="ko"} 1"#),
            "{text}"
        );
        assert!(text.contains(r#"volley_errors_total{error="Connection refused"} 1"#));
        assert!(text.contains(r#"volley_response_time_seconds_count{request="a\"b\\c\nd"} 2"#));
        assert!(text.contains("volley_elapsed_seconds 1.5\n"));
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let name = line.split(['{', ' ']).next().unwrap();
            let family = name.trim_end_matches("_sum").trim_end_matches("_count");
            assert!(
                text.contains(&format!("# TYPE {family} ")),
                "{name} has no TYPE line"
            );
        }
    }
}
