//! The `tracing` layer: an event that passed the level filter becomes a record on each
//! appender it is routed to.
//!
//! Routing follows logback: an event of logger `a::b` goes to the appenders of the most
//! specific configured logger above it, and, while loggers are additive, to those of the
//! loggers above that, up to the root's.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use tracing::span::{Attributes, Id, Record as SpanRecord};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};
use tracing_log::NormalizeEvent;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::LookupSpan;

use crate::appender::Appender;
use crate::levels::LevelFilterCell;
use crate::names::is_under;
use crate::record::{FieldVisitor, Record, SpanFields};

/// A configured logger with appenders of its own.
#[derive(Debug)]
pub(crate) struct LoggerRoute {
    /// Its Rust targets.
    pub targets: Vec<String>,
    pub appenders: Vec<Arc<Appender>>,
    pub additive: bool,
}

type Route = Arc<[Arc<Appender>]>;

/// Turns events into records for the appenders.
#[derive(Debug)]
pub struct AppenderLayer {
    /// The levels per logger: asked once per callsite, not per event (see [`crate::levels`]).
    levels: LevelFilterCell,
    root: Route,
    /// Loggers with appenders of their own, most specific (longest target) first.
    loggers: Vec<LoggerRoute>,
    cache: RwLock<HashMap<String, Route>>,
    /// Whether some appender shows the MDC: without one, spans' fields and the logging
    /// context are neither kept nor gathered.
    mdc: bool,
}

impl AppenderLayer {
    pub(crate) fn new(
        root: Vec<Arc<Appender>>,
        mut loggers: Vec<LoggerRoute>,
        levels: LevelFilterCell,
        mdc: bool,
    ) -> Self {
        loggers.sort_by_key(|l| {
            std::cmp::Reverse(l.targets.iter().map(String::len).max().unwrap_or(0))
        });
        AppenderLayer {
            levels,
            root: root.into(),
            loggers,
            cache: RwLock::new(HashMap::new()),
            mdc,
        }
    }

    /// The appenders for events of `target`, when some logger has appenders of its own.
    fn route(&self, target: &str) -> Route {
        if let Some(r) = self.cache.read().ok().and_then(|c| c.get(target).cloned()) {
            return r;
        }
        let mut appenders: Vec<Arc<Appender>> = Vec::new();
        let mut additive = true;
        for logger in &self.loggers {
            if logger.targets.iter().any(|t| is_under(target, t)) {
                appenders.extend(logger.appenders.iter().cloned());
                if !logger.additive {
                    additive = false;
                    break;
                }
            }
        }
        if additive {
            appenders.extend(self.root.iter().cloned());
        }
        let route: Route = appenders.into();
        if let Ok(mut c) = self.cache.write() {
            c.insert(target.to_owned(), route.clone());
        }
        route
    }
}

thread_local! {
    /// Where an event routed to several appenders is captured before it is copied to each.
    static SCRATCH: RefCell<Record> = RefCell::new(Record::with_capacity());
}

/// Fills `record` from `event`, with the logging context and the fields of its spans as the
/// MDC when `mdc`.
fn capture<S>(record: &mut Record, event: &Event<'_>, ctx: &Context<'_, S>, caller: bool, mdc: bool)
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    let meta = event.metadata();
    // What needs no slot first (the thread's name), while the slot's cache lines,
    // asked for when it was claimed, are on their way from the writer's core.
    let thread = crate::record::thread_name();
    record.clear();
    record.set_level(*meta.level());
    // A `log` record's own target replaces tracing-log's `log` (see `FieldVisitor`).
    record.set_target(meta.target());
    record.set_now();
    record.set_thread(thread);
    event.record(&mut FieldVisitor { record });
    if caller {
        record.set_caller(meta.file().zip(meta.line()));
    }
    if !mdc {
        return;
    }
    // The thread's context first: it is the outermost, and a span's field of the same name
    // wins (`Record::mdc_value` looks innermost first).
    crate::context::current(|c| {
        if let Some(c) = c {
            c.for_each(|k, v| record.push_mdc(k, v));
        }
    });
    if let Some(scope) = ctx.event_scope(event) {
        for span in scope.from_root() {
            if let Some(fields) = span.extensions().get::<SpanFields>() {
                for (k, v) in &fields.entries {
                    record.push_mdc(k, v);
                }
            }
        }
    }
}

impl<S> Layer<S> for AppenderLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn register_callsite(&self, meta: &'static Metadata<'static>) -> Interest {
        if self.levels.enabled(meta) {
            Interest::always()
        } else {
            Interest::never()
        }
    }

    /// Asked for what the callsite cache does not answer: `log` records (checked with their
    /// own target) and callsites registered while the levels changed.
    fn enabled(&self, meta: &Metadata<'_>, _ctx: Context<'_, S>) -> bool {
        self.levels.enabled(meta)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        self.levels.max_level()
    }

    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if !self.mdc {
            return;
        }
        let mut fields = SpanFields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &Id, values: &SpanRecord<'_>, ctx: Context<'_, S>) {
        if !self.mdc {
            return;
        }
        if let Some(span) = ctx.span(id) {
            let mut ext = span.extensions_mut();
            if let Some(fields) = ext.get_mut::<SpanFields>() {
                values.record(fields);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let level = event.metadata().level();
        // A `log` record arrives on tracing-log's callsite, its target in a field: route it by
        // its real target.
        let normalized = if event.metadata().target() == "log" {
            event.normalized_metadata()
        } else {
            None
        };
        let target = normalized
            .as_ref()
            .map_or(event.metadata().target(), |m| m.target());
        // Without per-logger appenders every event goes to the root's: no lookup, and no
        // reference count bumped on a shared `Arc` by every request thread.
        let routed;
        let route: &[Arc<Appender>] = if self.loggers.is_empty() {
            &self.root
        } else {
            routed = self.route(target);
            &routed
        };
        let mut accepted = route.iter().filter(|a| a.accepts(level));
        let Some(first) = accepted.next() else { return };
        let Some(second) = accepted.next() else {
            // One appender (the common case): captured straight into its queue slot.
            first.log(level, |record| {
                capture(record, event, &ctx, first.include_caller(), self.mdc)
            });
            return;
        };
        // Several: captured once, then copied into each one's slot.
        SCRATCH.with(|scratch| {
            let mut own;
            let record = match scratch.try_borrow_mut() {
                Ok(r) => {
                    own = r;
                    &mut *own
                }
                // An event logged while capturing another on this thread (a `Debug` impl
                // that logs): rare, so a fresh record.
                Err(_) => &mut Record::default(),
            };
            record.clear();
            let caller = route.iter().any(|a| a.include_caller());
            capture(record, event, &ctx, caller, self.mdc);
            for appender in [first, second].into_iter().chain(accepted) {
                let caller = appender.include_caller();
                appender.log(level, |r| {
                    r.copy_from(record);
                    // Captured for whichever appender wants it: only those get it.
                    if !caller {
                        r.set_caller(None);
                    }
                });
            }
        });
    }
}
