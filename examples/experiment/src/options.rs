//! The command line: how long, how many users, how many rounds, where the results go, and
//! which service logs to keep.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use clap::builder::RangedU64ValueParser;

use crate::output::KeepLogs;

/// The 2014 DropWizard logging report's experiment: the "Realtime interface" service under the report's `before` and
/// `after` configs, the production config we recommend, and the same handlers on plain axum
/// (`naive-rust`), each loaded by volley with closed-model users and compared in one table
/// beside the report's own figures.
///
/// Each config's service is started as a child process on free loopback ports, waited for,
/// loaded, and stopped with SIGTERM. The configs take turns in rounds, so that the machine's
/// drift over minutes stays out of the ratios.
///
/// The service binaries (`realtime`, `realtime-bare`) are built by cargo with this
/// program's profile when cargo runs it (`cargo run --release -p experiment`), and looked for
/// beside this program otherwise.
#[derive(Clone, Debug, Parser)]
#[command(name = "experiment", version)]
pub struct Options {
    /// Load per config, over all rounds: `30s`, `2m`, `PT10M` (the report ran 10 minutes).
    /// Each round gets DURATION / ROUNDS, at least a second.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Closed-model users: each sends its requests one after the other, as the report's
    /// Gatling users did.
    #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub users: u32,

    /// How many times the configs take turns; a config's ratio to `after` is the median of
    /// its rounds' ratios.
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    pub rounds: u32,

    /// volley's worker threads. One, as `wrk -t1`, leaves the service its share of a small
    /// machine.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = RangedU64ValueParser::<usize>::new().range(1..))]
    pub volley_threads: usize,

    /// Where the reports, `summary.md` and `summary.json` go [default: the workspace's
    /// target directory (CARGO_TARGET_DIR when set) + `/experiment`].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,

    /// Which services' output (stdout, stderr, log files) to keep: `none` counts each run's
    /// lines and bytes and deletes them, `last` keeps the last round's, `all` every round's
    /// (the `before` config writes a line per request and more to stdout). A run that failed
    /// is kept whatever this says.
    #[arg(long, value_name = "WHICH", value_enum, default_value_t = KeepLogs::None)]
    pub keep_logs: KeepLogs,
}

impl Options {
    /// How long each config is loaded in one round.
    pub fn round_length(&self) -> Duration {
        self.duration / self.rounds
    }

    /// What the options cannot be together: a round shorter than a second, which volley's
    /// one-second series could not show.
    pub fn check(&self) -> Result<(), String> {
        if self.duration < Duration::from_secs(u64::from(self.rounds)) {
            return Err(format!(
                "--duration {} s is less than a second per round ({} rounds)",
                self.duration.as_secs_f64(),
                self.rounds
            ));
        }
        Ok(())
    }
}

/// A duration as the service's configs spell it (`30s`, `1 minute`, `PT10M`), not zero.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let d = text.parse::<ferrowizard_config::Duration>()?.get();
    if d.is_zero() {
        return Err("must be longer than zero".into());
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The defaults are the README's: 30 s, 100 users, 3 rounds, one volley thread, no
    /// logs kept, the output where the target directory is.
    ///
    /// Catches: a default changed in one place and not the other.
    #[test]
    fn defaults_are_the_readmes() {
        let o = Options::try_parse_from(["experiment"]).unwrap();
        assert_eq!(o.duration, Duration::from_secs(30));
        assert_eq!((o.users, o.rounds, o.volley_threads), (100, 3, 1));
        assert_eq!(o.keep_logs, KeepLogs::None);
        assert!(o.out.is_none());
        assert_eq!(o.round_length(), Duration::from_secs(10));
        let o = Options::try_parse_from(["experiment", "--duration", "PT10M"]).unwrap();
        assert_eq!(o.duration, Duration::from_secs(600));
    }
}
