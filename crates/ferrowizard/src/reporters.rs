//! `metrics.reporters`: the registry written out every `frequency`, as DropWizard's
//! scheduled reporters write it: to a logger (`type: log`, `Slf4jReporter`'s lines) or to one
//! CSV file per metric in a directory (`type: csv`, `CsvReporter`'s files).
//!
//! Each reporter runs on a thread of its own, so a slow disk or a full log queue delays its
//! report, never a request. A report that fails (a directory that cannot be written) is
//! retried at the next interval; the failure is logged as a WARN at most once a minute.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use ferrowizard_metrics::MetricRegistry;
use ferrowizard_metrics::render::report::ReportFilter;

use crate::config::{MetricsFactory, ReporterFactory};

/// How often, at most, a failing reporter says so.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The running reporters; [`stop`](Reporters::stop) ends them (with a last report when
/// `reportOnStop` is set).
pub(crate) struct Reporters {
    threads: Vec<JoinHandle<()>>,
    stop: Arc<Stop>,
}

/// The stop signal every reporter thread waits on.
#[derive(Default)]
struct Stop {
    stopped: Mutex<bool>,
    wake: Condvar,
}

impl Stop {
    /// Waits up to `timeout`; whether the reporters were told to stop.
    fn wait(&self, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut stopped = self.stopped.lock().unwrap_or_else(PoisonError::into_inner);
        while !*stopped {
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            stopped = self
                .wake
                .wait_timeout(stopped, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        true
    }
}

/// Where one reporter writes.
enum Target {
    Log { logger: String },
    Csv { directory: PathBuf },
}

struct Reporter {
    name: String,
    target: Target,
    filter: ReportFilter,
    every: Duration,
    /// When a failure was last logged.
    warned: Option<Instant>,
}

impl Reporter {
    fn new(factory: &ReporterFactory, frequency: Duration) -> Reporter {
        let (target, common) = match factory {
            ReporterFactory::Log(r) => (
                Target::Log {
                    logger: r.logger.clone(),
                },
                (r.common.frequency, &r.common.includes, &r.common.excludes),
            ),
            ReporterFactory::Csv(r) => (
                Target::Csv {
                    directory: PathBuf::from(r.file.clone().unwrap_or_default()),
                },
                (r.common.frequency, &r.common.includes, &r.common.excludes),
            ),
        };
        let (own, includes, excludes) = common;
        let name = match &target {
            Target::Log { logger } => format!("log reporter ({logger})"),
            Target::Csv { directory } => format!("csv reporter ({})", directory.display()),
        };
        Reporter {
            name,
            target,
            filter: ReportFilter {
                includes: includes.clone(),
                excludes: excludes.clone(),
            },
            every: own.map_or(frequency, |d| d.get()),
            warned: None,
        }
    }

    fn report(&mut self, registry: &MetricRegistry) {
        let result = match &self.target {
            Target::Log { logger } => {
                for line in registry.report_log_lines(&self.filter) {
                    log::info!(target: logger.as_str(), "{line}");
                }
                Ok(())
            }
            Target::Csv { directory } => write_csv(directory, registry, &self.filter),
        };
        if let Err(e) = result
            && self.warned.is_none_or(|at| at.elapsed() >= WARN_EVERY)
        {
            self.warned = Some(Instant::now());
            tracing::warn!(target: "ferrowizard::metrics", reporter = %self.name, error = %e, "cannot report metrics (said at most once a minute)");
        }
    }
}

/// Appends a row to each metric's file in `directory`, writing the header first into a new
/// file, as `CsvReporter` does.
fn write_csv(
    directory: &PathBuf,
    registry: &MetricRegistry,
    filter: &ReportFilter,
) -> std::io::Result<()> {
    std::fs::create_dir_all(directory)?;
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for row in registry.report_csv_rows(filter) {
        let path = directory.join(row.file_name());
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)?;
        let mut text = String::new();
        if file.metadata()?.len() == 0 {
            text.push_str(row.header);
            text.push('\n');
        }
        text.push_str(&format!("{t},{}\n", row.values));
        file.write_all(text.as_bytes())?;
    }
    Ok(())
}

/// A reporter thread could not be started.
#[derive(Debug, thiserror::Error)]
#[error("metrics.reporters: cannot start a reporter thread: {0}")]
pub struct StartError(#[from] std::io::Error);

impl Reporters {
    /// Starts every reporter `config` lists, reading `registry`.
    pub(crate) fn start(
        config: &MetricsFactory,
        registry: &MetricRegistry,
    ) -> Result<Reporters, StartError> {
        let stop = Arc::new(Stop::default());
        let mut threads = Vec::new();
        for (i, factory) in config.reporters.iter().enumerate() {
            let mut reporter = Reporter::new(factory, config.frequency.get());
            let (stop, registry) = (stop.clone(), registry.clone());
            let on_stop = config.report_on_stop;
            let thread = std::thread::Builder::new()
                .name(format!("metrics-reporter-{i}"))
                .spawn(move || {
                    while !stop.wait(reporter.every) {
                        reporter.report(&registry);
                    }
                    if on_stop {
                        reporter.report(&registry);
                    }
                })?;
            threads.push(thread);
        }
        Ok(Reporters { threads, stop })
    }

    /// Stops every reporter, each reporting once more first when `reportOnStop` is set.
    pub(crate) fn stop(self) {
        *self
            .stop
            .stopped
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = true;
        self.stop.wake.notify_all();
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}
