//! "Realtime interface": the service of the seed experiment, built on ferrowizard.

use std::process::ExitCode;

use ferrowizard::Application;
use ferrowizard::config::Duration;

ferrowizard::configuration! {
    /// The service's configuration: ferrowizard's sections plus `quotes:`.
    pub struct RealtimeConfig {
        /// The quote feed.
        #[garde(dive)]
        quotes: QuotesConfig = QuotesConfig::default(),
    }
}

ferrowizard::__private::section! {
    /// `quotes:`: the in-memory quote feed the service serves.
    pub struct QuotesConfig {
        /// The symbols quoted.
        #[garde(length(min = 1), inner(length(min = 1, max = 12)))]
        symbols: Vec<String> = ["ACME", "GLOBEX", "INITECH", "UMBRELLA"].map(str::to_owned).to_vec(),
        /// How often prices move.
        tick_interval: Duration = Duration::milliseconds(100),
    }
}

struct Realtime;

impl Application for Realtime {
    type Config = RealtimeConfig;

    fn name(&self) -> &str {
        "realtime"
    }
}

fn main() -> ExitCode {
    ferrowizard::run(Realtime)
}
