//! The load: volley's simulation of the report's users (a quote, then a trade event, over and
//! over, in a closed model), run against one service for one round.

use std::path::Path;
use std::time::Duration;

use volley::results::Results;
use volley::scenario::{Injection, Request, Scenario, Simulation, Step};

/// How often volley's console block is printed during a round.
const CONSOLE_INTERVAL: Duration = Duration::from_secs(5);

/// The report's scenario against `http://{app}`: `users` closed-model users for `length`.
pub fn simulation(app: &str, users: u32, length: Duration) -> Simulation {
    let request = |name: &str, method: &str, path: &str, body: Option<&str>, status: u16| Step {
        request: Some(Request {
            name: name.into(),
            method: method.into(),
            path: path.into(),
            body: body.map(str::to_owned),
            headers: [("Content-Type".to_owned(), "application/json".to_owned())].into(),
            status: Some(vec![status]),
            ..Default::default()
        }),
        ..Default::default()
    };
    Simulation {
        base_url: format!("http://{app}"),
        console_interval: CONSOLE_INTERVAL.into(),
        max_duration: (length + Duration::from_secs(30)).into(),
        scenarios: vec![Scenario {
            name: "Realtime interface".into(),
            injection: vec![Injection {
                constant_concurrent_users: Some(users),
                during: Some(length.into()),
                ..Default::default()
            }],
            steps: vec![
                request("quote", "GET", "/realtime/quotes/ACME", None, 200),
                request(
                    "event",
                    "POST",
                    "/realtime/events",
                    Some(r#"{"symbol":"ACME","kind":"trade","quantity":1,"price":10}"#),
                    202,
                ),
            ],
        }],
        ..Default::default()
    }
}

/// Runs `simulation` on `runtime`, printing volley's console block as it goes and its
/// summary at the end. The results carry the time the run started (RFC 3339), for the
/// reports.
pub fn run(runtime: &tokio::runtime::Runtime, simulation: &Simulation) -> Result<Results, String> {
    let started_at = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let (stats, elapsed, finished) = runtime.block_on(async {
        let run = volley::engine::prepare(simulation, Path::new("."))?;
        let printer = {
            let run = run.clone();
            let simulation = simulation.clone();
            tokio::spawn(async move {
                let mut tick = tokio::time::interval_at(
                    tokio::time::Instant::now() + CONSOLE_INTERVAL,
                    CONSOLE_INTERVAL,
                );
                loop {
                    tick.tick().await;
                    print!(
                        "{}",
                        volley::console::block(
                            &run,
                            &run.snapshot(),
                            run.started.elapsed(),
                            &simulation
                        )
                    );
                }
            })
        };
        let finished = volley::engine::execute(run.clone(), simulation).await;
        printer.abort();
        let elapsed = run.started.elapsed();
        // The snapshot closes the last second, so that the series covers the whole run.
        Ok::<_, String>((run.snapshot(), elapsed, finished))
    })?;
    let [low, high] = simulation.distribution_bounds;
    print!("{}", volley::console::summary(&stats, elapsed, (low, high)));
    let mut results = Results::new(&stats, started_at, elapsed, !finished, Vec::new());
    results.coordinated_omission = simulation
        .corrects_omission()
        .then(|| simulation.coordinated_omission.name().to_owned());
    results.distribution_bounds = simulation.distribution_bounds;
    Ok(results)
}
