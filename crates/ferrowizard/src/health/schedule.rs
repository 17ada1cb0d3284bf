//! `health:` at run time (DropWizard 2.1's `dropwizard-health`): each configured check runs on
//! its own schedule and changes state after `failureAttempts` unhealthy or `successAttempts`
//! healthy results in a row; the application is alive while no critical `alive` check is
//! unhealthy, and ready while it is alive, no critical `ready` check is unhealthy, and it is
//! not shutting down. `healthCheckUrlPaths` on the application port answers 200 or 503 with
//! the checks asked for by `?name=` (`all`: every one), as `?type=ready` (the default) or
//! `?type=alive` judges.
//!
//! Two departures from DropWizard, both fixes: results count in a row (DropWizard counts
//! every opposite result since the last change, so fail, ok, fail, fail flips it), and a check
//! recovering during the delayed shutdown never makes the application ready again.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use axum::Router;
use axum::extract::{RawQuery, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};

use crate::config::health::{CheckType, HealthCheckConfig, HealthFactory};
use crate::health::check::Registered;

/// The scheduled checks and the application's state.
pub(crate) struct Readiness {
    checks: Vec<Scheduled>,
    state: Mutex<Overall>,
    cache_control: Option<HeaderValue>,
}

struct Scheduled {
    config: HealthCheckConfig,
    check: Arc<dyn Registered>,
    state: Mutex<CheckState>,
}

impl Scheduled {
    fn critical(&self) -> bool {
        self.config.critical || self.config.r#type == CheckType::Alive
    }
}

#[derive(Clone, Copy, Debug)]
struct CheckState {
    healthy: bool,
    /// Results in a row opposite to `healthy`.
    against: u32,
}

#[derive(Debug)]
struct Overall {
    /// Critical checks unhealthy now, of type `alive` and `ready`.
    unhealthy_alive: usize,
    unhealthy_ready: usize,
    /// `initialOverallState` until a check changes it.
    healthy: bool,
    shutting_down: bool,
}

/// A configured check that names no registered one.
#[derive(Debug, thiserror::Error)]
#[error(
    "health.healthChecks[{index}].name: no health check named {name:?} is registered (registered: {registered})"
)]
pub(crate) struct Unregistered {
    index: usize,
    name: String,
    registered: String,
}

impl Readiness {
    /// The checks `factory` schedules, each one of `registered` by name.
    pub(crate) fn new(
        factory: &HealthFactory,
        registered: &[(String, Arc<dyn Registered>)],
    ) -> Result<Arc<Readiness>, Unregistered> {
        let mut checks = Vec::new();
        for (index, config) in factory.health_checks.iter().enumerate() {
            let Some((_, check)) = registered.iter().find(|(n, _)| *n == config.name) else {
                let names: Vec<&str> = registered.iter().map(|(n, _)| n.as_str()).collect();
                return Err(Unregistered {
                    index,
                    name: config.name.clone(),
                    registered: if names.is_empty() {
                        "none".into()
                    } else {
                        names.join(", ")
                    },
                });
            };
            checks.push(Scheduled {
                config: config.clone(),
                check: check.clone(),
                state: Mutex::new(CheckState {
                    healthy: config.initial_state,
                    against: 0,
                }),
            });
        }
        for (name, _) in registered {
            if !checks.iter().any(|c| c.config.name == *name) {
                tracing::info!(target: "ferrowizard::health", check = name.as_str(), "registered but not in health.healthChecks: not scheduled");
            }
        }
        let unhealthy = |kind: CheckType| {
            checks
                .iter()
                .filter(|c| c.critical() && c.config.r#type == kind && !c.config.initial_state)
                .count()
        };
        let overall = Overall {
            unhealthy_alive: unhealthy(CheckType::Alive),
            unhealthy_ready: unhealthy(CheckType::Ready),
            healthy: factory.initial_overall_state,
            shutting_down: false,
        };
        let cache_control = factory
            .responder
            .cache_control_enabled
            .then(|| HeaderValue::from_str(&factory.responder.cache_control_value).ok())
            .flatten();
        Ok(Arc::new(Readiness {
            checks,
            state: Mutex::new(overall),
            cache_control,
        }))
    }

    /// Whether the application is alive; ready as well unless `alive_only`.
    pub(crate) fn verdict(&self, alive_only: bool) -> bool {
        let o = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        let alive = o.unhealthy_alive == 0;
        if alive_only {
            alive
        } else {
            alive && o.healthy && o.unhealthy_ready == 0 && !o.shutting_down
        }
    }

    /// The delayed shutdown has begun: not ready from now on.
    pub(crate) fn shutting_down(&self) {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .shutting_down = true;
    }

    /// Runs every check on its schedule until the returned tasks are aborted.
    pub(crate) fn schedule(self: &Arc<Self>) -> Vec<tokio::task::JoinHandle<()>> {
        (0..self.checks.len())
            .map(|i| {
                let health = self.clone();
                tokio::spawn(async move { health.run(i).await })
            })
            .collect()
    }

    async fn run(&self, i: usize) {
        let scheduled = &self.checks[i];
        let schedule = &scheduled.config.schedule;
        let first = schedule.initial_delay.unwrap_or(schedule.check_interval);
        tokio::time::sleep(first.get()).await;
        loop {
            // A check that does not answer within its interval counts as unhealthy.
            let limit = schedule.check_interval.get();
            let healthy = matches!(
                tokio::time::timeout(limit, scheduled.check.run()).await,
                Ok(found) if found.is_healthy()
            );
            let now_healthy = self.record(i, healthy);
            let pause = if now_healthy {
                schedule.check_interval
            } else {
                schedule.downtime_interval
            };
            tokio::time::sleep(pause.get()).await;
        }
    }

    /// Records a result of check `i`; its state afterwards.
    fn record(&self, i: usize, healthy: bool) -> bool {
        let scheduled = &self.checks[i];
        let mut state = scheduled
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if healthy == state.healthy {
            state.against = 0;
            return state.healthy;
        }
        state.against += 1;
        let needed = if healthy {
            scheduled.config.schedule.success_attempts
        } else {
            scheduled.config.schedule.failure_attempts
        };
        if state.against < needed {
            return state.healthy;
        }
        *state = CheckState {
            healthy,
            against: 0,
        };
        drop(state);
        let name = scheduled.config.name.as_str();
        if healthy {
            tracing::info!(target: "ferrowizard::health", check = name, "healthy again");
        } else {
            tracing::warn!(target: "ferrowizard::health", check = name, critical = scheduled.critical(), "unhealthy");
        }
        let mut o = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if scheduled.critical() {
            let count = match scheduled.config.r#type {
                CheckType::Alive => &mut o.unhealthy_alive,
                CheckType::Ready => &mut o.unhealthy_ready,
            };
            *count = if healthy {
                count.saturating_sub(1)
            } else {
                *count + 1
            };
            if healthy && o.unhealthy_ready == 0 {
                o.healthy = true;
            }
        } else if healthy && o.unhealthy_ready == 0 {
            o.healthy = true;
        }
        healthy
    }

    /// The readiness response for `paths`, on the application's router.
    pub(crate) fn router(self: &Arc<Self>, paths: &[String]) -> Router {
        paths.iter().fold(Router::new(), |router, path| {
            router.route(path, get(respond).with_state(self.clone()))
        })
    }
}

/// `GET healthCheckUrlPaths[?type=alive][&name=a&name=b | &name=all]`.
async fn respond(State(health): State<Arc<Readiness>>, RawQuery(query): RawQuery) -> Response {
    let mut alive_only = false;
    let mut type_seen = false;
    let mut names: Vec<String> = Vec::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match &*key {
            "type" if !type_seen => {
                type_seen = true;
                alive_only = value.eq_ignore_ascii_case("alive");
            }
            "name" => names.push(value.into_owned()),
            _ => {}
        }
    }
    let all = names.iter().any(|n| n == "all");
    let views: Vec<serde_json::Value> = health
        .checks
        .iter()
        .filter(|c| all || names.iter().any(|n| n.eq_ignore_ascii_case(&c.config.name)))
        .map(|c| {
            let state = *c.state.lock().unwrap_or_else(PoisonError::into_inner);
            serde_json::json!({
                "name": c.config.name,
                "healthy": state.healthy,
                "type": match c.config.r#type {
                    CheckType::Ready => "READY",
                    CheckType::Alive => "ALIVE",
                },
                "critical": c.critical(),
            })
        })
        .collect();
    let status = if health.verdict(alive_only) {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    let mut response = (status, axum::Json(views)).into_response();
    if let Some(value) = &health.cache_control {
        response
            .headers_mut()
            .insert(header::CACHE_CONTROL, value.clone());
    }
    response
}

/// The delayed shutdown's wait, when `factory` asks for one.
pub(crate) fn shutdown_wait(factory: &HealthFactory) -> Option<Duration> {
    let wait = factory.shutdown_wait_period.get();
    (factory.delayed_shutdown_handler_enabled && !wait.is_zero()).then_some(wait)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(checks: &str, initial_overall_state: bool) -> Arc<Readiness> {
        let yaml =
            format!("initialOverallState: {initial_overall_state}\nhealthChecks: {checks}\n");
        let factory: HealthFactory = ferrowizard_config::Loader::new()
            .load_str("health.yaml", &yaml)
            .unwrap();
        let registered: Vec<(String, Arc<dyn Registered>)> = ["db", "cache", "core"]
            .into_iter()
            .map(|n| {
                let check: Arc<dyn Registered> =
                    Arc::new(|| async { crate::health::Health::healthy() });
                (n.to_owned(), check)
            })
            .collect();
        Readiness::new(&factory, &registered).unwrap()
    }

    /// Catches: a state flipped by the first opposite result, results counted when not in a
    /// row, a non-critical check making the application not ready, or an `alive` check not
    /// treated as critical.
    #[test]
    fn states_flip_after_their_attempts_in_a_row_and_only_critical_checks_count() {
        let h = health(
            "[{name: db, critical: true, schedule: {failureAttempts: 3, successAttempts: 2}}, \
             {name: cache}, {name: core, type: alive}]",
            true,
        );
        assert!(h.verdict(false));
        // fail, ok, fail, fail: not three in a row.
        for result in [false, true, false, false] {
            assert!(h.record(0, result));
        }
        assert!(!h.record(0, false), "the third in a row flips it");
        assert!(
            !h.verdict(false) && h.verdict(true),
            "not ready, still alive"
        );
        assert!(!h.record(0, true));
        assert!(h.record(0, true), "two healthy in a row");
        assert!(h.verdict(false));
        // A non-critical check: unhealthy, and the application still ready.
        for _ in 0..3 {
            h.record(1, false);
        }
        assert!(h.verdict(false));
        // `alive` is critical: not alive, so not ready either.
        for _ in 0..3 {
            h.record(2, false);
        }
        assert!(!h.verdict(true) && !h.verdict(false));
    }

    /// `failureAttempts` and `successAttempts` each count their own results: with 5 and 4
    /// (neither a default, 3 and 2, nor the other's value), a healthy check turns unhealthy at
    /// the fifth failure in a row and not before, and healthy again at the fourth success in a
    /// row and not before.
    ///
    /// Catches: either key ignored (its default counted), or one key's value read for the
    /// other's (flipped at the fourth failure, or only at the fifth success).
    #[test]
    fn failure_and_success_attempts_each_count_their_own_results() {
        let h = health(
            "[{name: db, critical: true, schedule: {failureAttempts: 5, successAttempts: 4}}]",
            true,
        );
        for n in 1..5 {
            assert!(h.record(0, false), "unhealthy after {n} failures of 5");
        }
        assert!(!h.record(0, false), "the fifth failure in a row flips it");
        assert!(!h.verdict(false));
        for n in 1..4 {
            assert!(!h.record(0, true), "healthy after {n} successes of 4");
        }
        assert!(
            h.record(0, true),
            "the fourth success in a row flips it back"
        );
        assert!(h.verdict(false));
    }

    /// Catches: `initialState: false` on a critical check or `initialOverallState: false`
    /// ignored, or a recovery during the delayed shutdown making the application ready again.
    #[test]
    fn initial_states_and_shutdown() {
        let h = health("[{name: db, critical: true, initialState: false}]", true);
        assert!(!h.verdict(false));
        h.record(0, true);
        h.record(0, true);
        assert!(h.verdict(false));

        let h = health("[{name: cache}]", false);
        assert!(!h.verdict(false), "not ready until a check recovers");
        h.shutting_down();
        assert!(!h.verdict(false) && h.verdict(true));
    }

    /// With `initialOverallState: false` the application becomes ready when a check recovers
    /// while no critical `ready` check is unhealthy, critical or not, and not when a check
    /// turns unhealthy.
    ///
    /// Catches: the overall state set by a check turning unhealthy, or left unset by a check
    /// recovering while every critical check is healthy.
    #[test]
    fn the_overall_state_follows_a_recovery_while_nothing_critical_is_unhealthy() {
        let h = health("[{name: cache, initialState: false}]", false);
        h.record(0, true);
        assert!(!h.verdict(false), "one success of two");
        h.record(0, true);
        assert!(h.verdict(false), "a non-critical check recovered");

        let h = health("[{name: db, critical: true, initialState: false}]", false);
        h.record(0, true);
        h.record(0, true);
        assert!(h.verdict(false), "a critical check recovered");

        let h = health("[{name: cache}]", false);
        for _ in 0..3 {
            h.record(0, false);
        }
        assert!(
            !h.verdict(false),
            "a check turning unhealthy makes nothing ready"
        );
    }

    /// `?type=` is read once, the first time it is given, as a servlet's `getParameter`
    /// reads it; `alive` judges liveness alone.
    ///
    /// Catches: a later `type` overriding the first.
    #[tokio::test]
    async fn the_first_type_asked_for_is_the_one_judged() {
        let h = health("[{name: db, critical: true, initialState: false}]", true);
        let status = |query: &'static str| {
            let h = h.clone();
            async move {
                respond(State(h), RawQuery(Some(query.to_owned())))
                    .await
                    .status()
            }
        };
        assert_eq!(status("type=alive").await, StatusCode::OK);
        assert_eq!(status("type=ready").await, StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(status("type=alive&type=ready").await, StatusCode::OK);
        assert_eq!(
            status("type=ready&type=alive").await,
            StatusCode::SERVICE_UNAVAILABLE
        );
    }

    /// The delayed shutdown waits only when switched on with a wait above zero.
    ///
    /// Catches: a wait configured while the handler is off, or a zero wait, taken as one.
    #[test]
    fn the_delayed_shutdown_waits_only_when_on_and_longer_than_zero() {
        let wait = |yaml: &str| {
            let factory: HealthFactory = ferrowizard_config::Loader::new()
                .load_str("health.yaml", yaml)
                .unwrap();
            shutdown_wait(&factory)
        };
        assert_eq!(
            wait("delayedShutdownHandlerEnabled: true\nshutdownWaitPeriod: 5s\n"),
            Some(Duration::from_secs(5))
        );
        assert_eq!(
            wait("delayedShutdownHandlerEnabled: false\nshutdownWaitPeriod: 5s\n"),
            None
        );
        assert_eq!(
            wait("delayedShutdownHandlerEnabled: true\nshutdownWaitPeriod: 0s\n"),
            None
        );
    }

    /// Catches: a configured check that names nothing, accepted (it would never run).
    #[test]
    fn a_configured_check_must_be_registered() {
        let factory: HealthFactory = ferrowizard_config::Loader::new()
            .load_str("health.yaml", "healthChecks: [{name: dbb}]\n")
            .unwrap();
        let check: Arc<dyn Registered> = Arc::new(|| async { crate::health::Health::healthy() });
        let err = Readiness::new(&factory, &[("db".to_owned(), check)])
            .err()
            .unwrap();
        assert_eq!(
            err.to_string(),
            "health.healthChecks[0].name: no health check named \"dbb\" is registered (registered: db)"
        );
    }
}
