//! Runs a simulation: schedules users, sends their requests, records every response.
//!
//! Response times are measured from when a request was due, not from when the generator
//! got round to sending it: an open-model user that starts late (the generator fell behind)
//! has that delay in its first response time. That is what keeps the percentiles honest when
//! the target is overloaded (coordinated omission).

use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use tokio::time::Instant;

use crate::scenario::{Request, Scenario, Shape, Simulation, Step};
use crate::stats::Stats;

type HttpClient = Client<HttpConnector, Full<Bytes>>;

/// Users of one scenario, for the console's progress bar.
#[derive(Debug, Default)]
pub struct Users {
    /// The scenario's name.
    pub name: String,
    /// Users planned in all (open model), or 0 when unknown ahead (closed model).
    pub planned: AtomicU64,
    /// Users started.
    pub started: AtomicU64,
    /// Users finished.
    pub done: AtomicU64,
}

/// The live state of a run, shared with the console.
pub struct Run {
    /// When it started.
    pub started: Instant,
    /// Measurements.
    pub stats: Mutex<Stats>,
    /// Per scenario.
    pub users: Vec<Arc<Users>>,
    client: HttpClient,
    base: String,
    default_headers: Vec<(http::HeaderName, http::HeaderValue)>,
    timeout: Duration,
}

impl Run {
    fn active(&self) -> u64 {
        self.users
            .iter()
            .map(|u| u.started.load(Relaxed) - u.done.load(Relaxed))
            .sum()
    }

    fn record(&self, name: &str, due: Instant, error: Option<String>) {
        let now = Instant::now();
        let micros = now.saturating_duration_since(due).as_micros() as u64;
        let second = now.saturating_duration_since(self.started).as_secs();
        let active = self.active();
        if let Ok(mut stats) = self.stats.lock() {
            stats.record(name, second, micros, error.as_deref(), active);
        }
    }

    /// Sends one request due at `due`; records it. Returns whether it was OK.
    async fn send(&self, r: &Request, due: Instant) -> bool {
        let result = self.exchange(r).await;
        let error = match result {
            Ok((status, body)) => check(r, status, &body),
            Err(e) => Some(e),
        };
        let ok = error.is_none();
        self.record(&r.name, due, error);
        ok
    }

    async fn exchange(&self, r: &Request) -> Result<(u16, Bytes), String> {
        let uri = format!("{}{}", self.base, r.path);
        let mut builder = http::Request::builder().method(r.method.as_str()).uri(&uri);
        for (k, v) in &self.default_headers {
            builder = builder.header(k, v);
        }
        for (k, v) in &r.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let body = Full::new(Bytes::from(r.body.clone().unwrap_or_default()));
        let request = builder
            .body(body)
            .map_err(|e| format!("invalid request: {e}"))?;
        let exchange = async {
            let response = self.client.request(request).await.map_err(classify)?;
            let status = response.status().as_u16();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("reading the body failed: {e}"))?;
            Ok((status, body.to_bytes()))
        };
        match tokio::time::timeout(self.timeout, exchange).await {
            Ok(r) => r,
            Err(_) => Err(format!(
                "Request timeout after {} ms",
                self.timeout.as_millis()
            )),
        }
    }
}

/// A KO reason in Gatling's words: what failed and why.
fn classify(e: hyper_util::client::legacy::Error) -> String {
    let text = format!("{e:?}").to_ascii_lowercase();
    if text.contains("connectionrefused") || text.contains("connection refused") {
        "Connection refused".into()
    } else if text.contains("connectionreset") || text.contains("reset") {
        "Connection reset by peer".into()
    } else if e.is_connect() {
        format!("Connection failed: {e}")
    } else {
        format!("Request failed: {e}")
    }
}

/// The checks of a request; `Some(message)` when one fails.
fn check(r: &Request, status: u16, body: &Bytes) -> Option<String> {
    let status_ok = match &r.status {
        Some(allowed) => allowed.contains(&status),
        None => (200..300).contains(&status) || status == 304,
    };
    if !status_ok {
        let expected = match &r.status {
            Some(allowed) if allowed.len() == 1 => format!("status.find.is({})", allowed[0]),
            Some(allowed) => format!(
                "status.find.in({})",
                allowed
                    .iter()
                    .map(u16::to_string)
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            None => "status.find.in(200..299,304)".into(),
        };
        return Some(format!("{expected}, but actually found {status}"));
    }
    if let Some(needle) = &r.body_contains
        && !String::from_utf8_lossy(body).contains(needle.as_str())
    {
        return Some(format!(
            "body.find.contains({needle:?}), but it was not found"
        ));
    }
    None
}

/// Runs a user's steps; `due` is when its first request was due.
fn run_steps<'a>(
    run: &'a Run,
    steps: &'a [Step],
    due: &'a mut Option<Instant>,
) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + 'a>> {
    Box::pin(async move {
        for step in steps {
            if let Some(r) = &step.request {
                let when = due.take().unwrap_or_else(Instant::now);
                run.send(r, when).await;
            } else if let Some(p) = step.pause {
                tokio::time::sleep(p.get()).await;
            } else if let Some(rep) = &step.repeat {
                for _ in 0..rep.times {
                    run_steps(run, &rep.steps, due).await;
                }
            }
        }
    })
}

async fn user(run: Arc<Run>, scenario: Arc<Scenario>, users: Arc<Users>, due: Instant) {
    tokio::time::sleep_until(due).await;
    users.started.fetch_add(1, Relaxed);
    let mut first_due = Some(due);
    run_steps(&run, &scenario.steps, &mut first_due).await;
    users.done.fetch_add(1, Relaxed);
}

/// Arrival offsets for a rate going from `r1` to `r2` users/s over `d`.
fn arrivals(r1: f64, r2: f64, d: Duration, randomized: bool, seed: &mut u64) -> Vec<Duration> {
    let total = (r1 + r2) / 2.0 * d.as_secs_f64();
    let n = total.floor() as u64;
    let span = d.as_secs_f64();
    let at = |k: f64| -> f64 {
        // Time t with ∫0^t r = k, r linear from r1 to r2.
        let a = (r2 - r1) / (2.0 * span);
        if a.abs() < 1e-12 {
            if r1 > 0.0 { k / r1 } else { span }
        } else {
            (-r1 + (r1 * r1 + 4.0 * a * k).max(0.0).sqrt()) / (2.0 * a)
        }
    };
    (0..n)
        .map(|k| {
            let mut t = at(k as f64);
            if randomized {
                // Jitter within the user's slot: keeps the count exact, spreads the times.
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                let u = (*seed >> 11) as f64 / (1u64 << 53) as f64;
                t = at(k as f64 + u);
            }
            Duration::from_secs_f64(t.clamp(0.0, span))
        })
        .collect()
}

/// Plans and runs one scenario's injection.
async fn inject(run: Arc<Run>, scenario: Arc<Scenario>, users: Arc<Users>, deadline: Instant) {
    let mut tasks = tokio::task::JoinSet::new();
    let mut phase_start = Instant::now();
    let mut seed = 0x2545_F491_4F6C_DD1D_u64;
    for step in &scenario.injection {
        let Ok(shape) = step.shape() else { continue };
        match shape {
            Shape::AtOnce(n) => {
                users.planned.fetch_add(u64::from(n), Relaxed);
                for _ in 0..n {
                    tasks.spawn(user(
                        run.clone(),
                        scenario.clone(),
                        users.clone(),
                        phase_start,
                    ));
                }
            }
            Shape::Ramp(n, d) => {
                users.planned.fetch_add(u64::from(n), Relaxed);
                for i in 0..n {
                    let due = phase_start + d.mul_f64(f64::from(i) / f64::from(n.max(1)));
                    tasks.spawn(user(run.clone(), scenario.clone(), users.clone(), due));
                }
                phase_start += d;
            }
            Shape::Rate(r1, r2, d) => {
                let times = arrivals(r1, r2, d, step.randomized, &mut seed);
                users.planned.fetch_add(times.len() as u64, Relaxed);
                for t in times {
                    tasks.spawn(user(
                        run.clone(),
                        scenario.clone(),
                        users.clone(),
                        phase_start + t,
                    ));
                }
                phase_start += d;
            }
            Shape::Nothing(d) => phase_start += d,
            Shape::Concurrent(n, d) => {
                // Closed model: n loops, each starting a new user when the last finishes.
                let end = (phase_start + d).min(deadline);
                for _ in 0..n {
                    let (run, scenario, users) = (run.clone(), scenario.clone(), users.clone());
                    tasks.spawn(async move {
                        tokio::time::sleep_until(phase_start).await;
                        while Instant::now() < end {
                            users.planned.fetch_add(1, Relaxed);
                            user(run.clone(), scenario.clone(), users.clone(), Instant::now())
                                .await;
                        }
                    });
                }
                phase_start += d;
            }
        }
        // Spawned users are not reaped during planning; reap finished ones to keep memory flat.
        while tasks.try_join_next().is_some() {}
    }
    while tasks.join_next().await.is_some() {}
}

/// Builds the shared state for `simulation`.
pub fn prepare(simulation: &Simulation) -> Result<Arc<Run>, String> {
    let mut connector = HttpConnector::new();
    connector.set_connect_timeout(Some(simulation.http.connect_timeout.get()));
    connector.set_nodelay(true);
    let client = Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(simulation.http.max_connections)
        .pool_idle_timeout(if simulation.http.keep_alive {
            Duration::from_secs(90)
        } else {
            Duration::ZERO
        })
        .build(connector);
    let mut default_headers = Vec::new();
    for (k, v) in &simulation.http.headers {
        let name =
            http::HeaderName::from_bytes(k.as_bytes()).map_err(|e| format!("header {k:?}: {e}"))?;
        let value = http::HeaderValue::from_str(v).map_err(|e| format!("header {k:?}: {e}"))?;
        default_headers.push((name, value));
    }
    if !simulation.http.keep_alive {
        default_headers.push((
            http::header::CONNECTION,
            http::HeaderValue::from_static("close"),
        ));
    }
    Ok(Arc::new(Run {
        started: Instant::now(),
        stats: Mutex::new(Stats::default()),
        users: simulation
            .scenarios
            .iter()
            .map(|s| {
                Arc::new(Users {
                    name: s.name.clone(),
                    ..Default::default()
                })
            })
            .collect(),
        client,
        base: simulation.base_url.trim_end_matches('/').to_owned(),
        default_headers,
        timeout: simulation.http.request_timeout.get(),
    }))
}

/// Runs every scenario until its injection ends or `maxDuration` passes. Returns whether it
/// ended by itself (false: cut at maxDuration).
pub async fn execute(run: Arc<Run>, simulation: &Simulation) -> bool {
    let deadline = run.started + simulation.max_duration.get();
    let mut scenarios = tokio::task::JoinSet::new();
    for (s, users) in simulation.scenarios.iter().zip(&run.users) {
        scenarios.spawn(inject(
            run.clone(),
            Arc::new(s.clone()),
            users.clone(),
            deadline,
        ));
    }
    let all = async { while scenarios.join_next().await.is_some() {} };
    let finished = tokio::time::timeout_at(deadline, all).await.is_ok();
    let now = Instant::now()
        .saturating_duration_since(run.started)
        .as_secs();
    if let Ok(mut stats) = run.stats.lock() {
        stats.roll_to(now + 1, run.active());
    }
    finished
}
