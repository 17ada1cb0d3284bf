//! Levels per logger, changeable while the service runs.
//!
//! The filter is a `tracing_subscriber::filter::Targets`, consulted when tracing registers a
//! callsite (`Targets` decides per callsite, so its answer, always or never, is cached in the
//! callsite and an event asks nothing at all). A change replaces it and rebuilds tracing's
//! callsite cache, so every thread sees the new level at its next event.
//!
//! This is what tracing-subscriber's `reload` does, without its cost per event: as a layer,
//! `reload` takes its lock twice on every event (`event_enabled` and `on_event`), and as a
//! per-layer filter, tracing-subscriber's per-layer bookkeeping runs on every event
//! (BENCHMARKS.md, "Logging hot path"). Here the lock is taken only when a callsite is
//! registered, a `log` record is checked, or the levels change. The `log` crate keeps its
//! own maximum level, which tracing-subscriber does not update (tracing-subscriber #2711):
//! it is set here too, so `log` records follow.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use ferrowizard_config::Level;
use tracing::Metadata;
use tracing_subscriber::filter::{LevelFilter, Targets};

use crate::names;

/// The name of the root logger in changes (DropWizard's).
pub const ROOT: &str = "ROOT";

/// A configuration level as a tracing filter.
pub fn filter(level: Level) -> LevelFilter {
    match level {
        Level::All | Level::Trace => LevelFilter::TRACE,
        Level::Debug => LevelFilter::DEBUG,
        Level::Info => LevelFilter::INFO,
        Level::Warn => LevelFilter::WARN,
        Level::Error => LevelFilter::ERROR,
        Level::Off => LevelFilter::OFF,
    }
}

/// Why a level change was refused.
#[derive(Debug, thiserror::Error)]
pub enum LevelError {
    /// The logging subscriber is gone.
    #[error("the logging subscriber is no longer installed")]
    Gone,
    /// An empty logger name.
    #[error("a logger name is required")]
    NoLogger,
}

#[derive(Debug)]
struct State {
    root: LevelFilter,
    configured_root: LevelFilter,
    configured: BTreeMap<String, LevelFilter>,
    overrides: BTreeMap<String, (LevelFilter, u64)>,
    generation: u64,
}

/// The level filter the appender layer consults; [`Levels`] replaces what it holds.
#[derive(Debug, Clone)]
pub(crate) struct LevelFilterCell(Arc<RwLock<Targets>>);

impl LevelFilterCell {
    /// Whether events of this callsite (or this `log` record) pass.
    pub(crate) fn enabled(&self, meta: &Metadata<'_>) -> bool {
        self.0
            .read()
            .map(|t| t.would_enable(meta.target(), meta.level()))
            .unwrap_or(true)
    }

    /// The most verbose level any logger has.
    pub(crate) fn max_level(&self) -> Option<LevelFilter> {
        let t = self.0.read().ok()?;
        let most = t.iter().map(|(_, level)| level).fold(
            t.default_level().unwrap_or(LevelFilter::OFF),
            LevelFilter::max,
        );
        Some(most)
    }

    fn replace(&self, targets: Targets) -> Result<(), LevelError> {
        *self.0.write().map_err(|_| LevelError::Gone)? = targets;
        // Every callsite asks again (and the global maximum level is recomputed).
        tracing_core::callsite::rebuild_interest_cache();
        Ok(())
    }
}

/// Sets and resets logger levels at run time.
#[derive(Debug)]
pub struct Levels {
    filter: LevelFilterCell,
    state: Mutex<State>,
}

impl Levels {
    pub(crate) fn new(
        root: LevelFilter,
        configured: BTreeMap<String, LevelFilter>,
    ) -> (Arc<Levels>, LevelFilterCell) {
        let state = State {
            root,
            configured_root: root,
            configured,
            overrides: BTreeMap::new(),
            generation: 0,
        };
        let filter = LevelFilterCell(Arc::new(RwLock::new(targets(&state))));
        set_log_max_level(&state);
        (
            Arc::new(Levels {
                filter: filter.clone(),
                state: Mutex::new(state),
            }),
            filter,
        )
    }

    /// Sets `logger`'s level (`None`: back to what the configuration says, or inherited),
    /// for `duration` if given, after which it reverts. Returns DropWizard's reply text.
    pub fn set(
        self: &Arc<Self>,
        logger: &str,
        level: Option<Level>,
        duration: Option<Duration>,
    ) -> Result<String, LevelError> {
        let logger = logger.trim();
        if logger.is_empty() {
            return Err(LevelError::NoLogger);
        }
        let generation = {
            let mut state = self.state.lock().map_err(|_| LevelError::Gone)?;
            state.generation += 1;
            let generation = state.generation;
            match (logger.eq_ignore_ascii_case(ROOT), level) {
                (true, Some(l)) => state.root = filter(l),
                (true, None) => state.root = state.configured_root,
                (false, Some(l)) => {
                    state
                        .overrides
                        .insert(logger.to_owned(), (filter(l), generation));
                }
                (false, None) => {
                    state.overrides.remove(logger);
                }
            }
            self.filter.replace(targets(&state))?;
            set_log_max_level(&state);
            generation
        };
        let shown = level.map_or_else(|| "the configured level".to_owned(), |l| l.to_string());
        let Some(duration) = duration else {
            return Ok(format!("Configured logging level for {logger} to {shown}"));
        };
        let me = Arc::downgrade(self);
        let name = logger.to_owned();
        let _ = std::thread::Builder::new()
            .name("ferrowizard-log-level-revert".into())
            .spawn(move || {
                std::thread::sleep(duration);
                if let Some(levels) = me.upgrade() {
                    levels.revert(&name, generation);
                }
            });
        Ok(format!(
            "Configured logging level for {logger} to {shown} for {} milliseconds",
            duration.as_millis()
        ))
    }

    /// Undoes the change of `generation` unless a later change replaced it.
    fn revert(&self, logger: &str, generation: u64) {
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        if logger.eq_ignore_ascii_case(ROOT) {
            if state.generation == generation {
                state.root = state.configured_root;
            }
        } else if state
            .overrides
            .get(logger)
            .is_some_and(|(_, g)| *g == generation)
        {
            state.overrides.remove(logger);
        } else {
            return;
        }
        let _ = self.filter.replace(targets(&state));
        set_log_max_level(&state);
    }

    /// Sets the `log` crate's maximum level to the most verbose level in use (installing
    /// the `log` bridge resets it).
    pub fn refresh_log_max_level(&self) {
        if let Ok(state) = self.state.lock() {
            set_log_max_level(&state);
        }
    }

    /// The effective level of every configured or changed logger, root first.
    pub fn effective(&self) -> Vec<(String, LevelFilter)> {
        let Ok(state) = self.state.lock() else {
            return Vec::new();
        };
        let mut all = vec![(ROOT.to_owned(), state.root)];
        let mut names: BTreeMap<&String, LevelFilter> =
            state.configured.iter().map(|(k, v)| (k, *v)).collect();
        names.extend(state.overrides.iter().map(|(k, (v, _))| (k, *v)));
        all.extend(names.into_iter().map(|(k, v)| (k.clone(), v)));
        all
    }
}

fn targets(state: &State) -> Targets {
    let mut levels: BTreeMap<&str, LevelFilter> = state
        .configured
        .iter()
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    levels.extend(state.overrides.iter().map(|(k, (v, _))| (k.as_str(), *v)));
    let mut targets = Targets::new().with_default(state.root);
    for (logger, level) in levels {
        for target in names::targets(logger) {
            targets = targets.with_target(target, level);
        }
    }
    targets
}

fn set_log_max_level(state: &State) {
    let most = state
        .configured
        .values()
        .chain(state.overrides.values().map(|(l, _)| l))
        .fold(state.root, |a, b| a.max(*b));
    log::set_max_level(match most.into_level() {
        None => log::LevelFilter::Off,
        Some(tracing::Level::ERROR) => log::LevelFilter::Error,
        Some(tracing::Level::WARN) => log::LevelFilter::Warn,
        Some(tracing::Level::INFO) => log::LevelFilter::Info,
        Some(tracing::Level::DEBUG) => log::LevelFilter::Debug,
        Some(_) => log::LevelFilter::Trace,
    });
}
