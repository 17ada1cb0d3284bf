//! The "Realtime interface" service as a ferrowizard application: its configuration and what
//! it registers. `main.rs` runs it; tests start it in process with `ferrowizard::testing`.

use ferrowizard::config::{Duration, FrameworkConfiguration};
use ferrowizard::{Application, Config, Environment, TaskError, TaskParams};

use crate::Feed;

/// The service's configuration: ferrowizard's sections plus `quotes:`.
#[derive(Clone, Debug, Config)]
pub struct RealtimeConfig {
    /// `server`, `logging`, `metrics`, `admin`, `health` and `opentelemetry`.
    #[config(framework)]
    pub framework: FrameworkConfiguration,
    /// The quote feed.
    pub quotes: QuotesConfig,
}

/// `quotes:`: the in-memory quote feed the service serves.
#[derive(Clone, Debug, PartialEq, Config)]
pub struct QuotesConfig {
    /// The symbols quoted.
    #[config(default = crate::default_symbols(), length(min = 1), inner(length(min = 1, max = 12)))]
    pub symbols: Vec<String>,
    /// How often prices move.
    #[config(default = Duration::milliseconds(100))]
    pub tick_interval: Duration,
    /// How long `GET /realtime/quotes/{symbol}/next` waits for the next move before it
    /// answers 204.
    #[config(default = Duration::seconds(30))]
    pub long_poll: Duration,
}

/// The service: the quote feed's routes (its streams among them), its health check and its
/// pause/resume task.
pub struct Realtime;

impl Application for Realtime {
    type Config = RealtimeConfig;

    fn name(&self) -> &str {
        "realtime"
    }

    async fn run(
        &self,
        config: &RealtimeConfig,
        environment: &mut Environment,
    ) -> Result<(), ferrowizard::RunError> {
        let symbols: Vec<String> = config
            .quotes
            .symbols
            .iter()
            .map(|s| s.to_ascii_uppercase())
            .collect();
        let interval = config
            .quotes
            .tick_interval
            .get()
            .max(std::time::Duration::from_millis(1));
        let feed = Feed::with_long_poll(&symbols, interval, config.quotes.long_poll.get());
        tokio::spawn(feed.clone().run());
        let task = feed.clone();
        let streams = environment.streams()?;
        environment
            .routes(crate::router(&feed))
            .routes(crate::stream::router(&feed, streams))
            .health_check("quotes", feed.clone())
            .task("feed", move |params: TaskParams| {
                let feed = task.clone();
                async move {
                    match params.get("action") {
                        Some("pause") => {
                            feed.pause(true);
                            Ok("feed paused: prices no longer move".to_owned())
                        }
                        Some("resume") => {
                            feed.pause(false);
                            Ok("feed resumed".to_owned())
                        }
                        other => Err(TaskError::BadRequest(format!(
                            "action must be pause or resume, not {other:?}"
                        ))),
                    }
                }
            });
        Ok(())
    }
}
