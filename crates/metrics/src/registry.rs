//! [`MetricRegistry`]: every metric of a service by name and labels, get-or-create, as
//! DropWizard's `MetricRegistry`.
//!
//! A name (dotted, `ferrowizard.requests`) is one *family* of one type; its labels (what
//! Prometheus needs to keep series bounded: a timer per route template with `method` and
//! `route`) pick a *series* in it. The registry refuses, as error values, anything that would
//! make the renderers write something wrong: a name asked for as two types, series of one family
//! with different label names, two families that would be written under the same Prometheus
//! name, two series with the same DropWizard JSON key.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use thiserror::Error;

use crate::counter::Counter;
use crate::gauge::{Gauge, SettableGauge};
use crate::histogram::Histogram;
use crate::kind::MetricKind;
use crate::meter::Meter;
use crate::names;
use crate::timer::Timer;

/// Why the registry would not hand out a metric.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RegistryError {
    /// The name is already a metric of another type.
    #[error("metric {name:?} is a {existing}, not a {requested}")]
    TypeConflict {
        /// The name asked for.
        name: String,
        /// What it already is.
        existing: MetricKind,
        /// What it was asked for as.
        requested: MetricKind,
    },
    /// A settable gauge was asked for where a function gauge is registered.
    #[error("gauge {name:?} is computed by a function and cannot be set")]
    NotSettable {
        /// The gauge's name.
        name: String,
    },
    /// The name is empty.
    #[error("a metric name cannot be empty")]
    EmptyName,
    /// The labels cannot be written: an empty or repeated name, or `quantile` on a histogram or
    /// timer (their Prometheus summaries use it).
    #[error("metric {name:?}: {reason}")]
    InvalidLabels {
        /// The metric's name.
        name: String,
        /// What is wrong.
        reason: String,
    },
    /// The family's other series have other label names (Prometheus wants one set per family).
    #[error("metric {name:?} has labels {expected:?}, not {given:?}")]
    LabelMismatch {
        /// The metric's name.
        name: String,
        /// The label names of its existing series.
        expected: Vec<String>,
        /// The label names asked for.
        given: Vec<String>,
    },
    /// Two metrics would be written under one name.
    #[error("metric {name:?} would be written as {rendered:?}, which {other:?} already is")]
    NameCollision {
        /// The name asked for.
        name: String,
        /// The existing metric written the same way.
        other: String,
        /// The Prometheus sample name or DropWizard JSON key both would be written as.
        rendered: String,
    },
}

/// One metric of any type, as the registry holds it.
#[derive(Debug, Clone)]
pub(crate) enum Metric {
    Counter(Counter),
    Gauge(Gauge),
    Histogram(Histogram),
    Meter(Meter),
    Timer(Timer),
}

impl Metric {
    fn kind(&self) -> MetricKind {
        match self {
            Metric::Counter(_) => MetricKind::Counter,
            Metric::Gauge(_) => MetricKind::Gauge,
            Metric::Histogram(_) => MetricKind::Histogram,
            Metric::Meter(_) => MetricKind::Meter,
            Metric::Timer(_) => MetricKind::Timer,
        }
    }
}

/// A family as the renderers see it: copied out of the registry so that gauge functions run
/// without the registry locked (a gauge may itself look up metrics).
#[derive(Debug)]
pub(crate) struct FamilyView {
    pub name: String,
    pub kind: MetricKind,
    pub help: Option<String>,
    /// Sorted by label values.
    pub series: Vec<SeriesView>,
}

/// One series of a [`FamilyView`].
#[derive(Debug)]
pub(crate) struct SeriesView {
    /// In the order they were first given.
    pub labels: Vec<(String, String)>,
    pub json_key: String,
    pub metric: Metric,
}

/// Every metric of a service, by name and labels.
///
/// A cheap handle: clones share one registry. Look metrics up once and keep the handles: a
/// lookup takes a lock and allocates, recording through a handle does neither.
///
/// ```
/// use ferrowizard_metrics::MetricRegistry;
/// let registry = MetricRegistry::new();
/// let requests = registry.timer_with("ferrowizard.requests", &[("method", "GET"), ("route", "/quotes/{symbol}")])?;
/// requests.time(|| { /* handle the request */ });
/// registry.describe("ferrowizard.requests", "Requests served, by route template");
/// assert!(registry.render_prometheus().contains("ferrowizard_requests_seconds_count{method=\"GET\",route=\"/quotes/{symbol}\"} 1"));
/// # Ok::<(), ferrowizard_metrics::RegistryError>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct MetricRegistry {
    state: Arc<RwLock<State>>,
}

#[derive(Debug, Default)]
struct State {
    families: BTreeMap<String, Family>,
    help: HashMap<String, String>,
    /// Prometheus sample name → the registry name of the family that writes it.
    samples: HashMap<String, String>,
    /// JSON section (by kind) and key → the registry name of the series written there.
    json_keys: HashMap<(JsonSection, String), String>,
}

/// The section of DropWizard's JSON a kind is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct JsonSection(MetricKind);

#[derive(Debug)]
struct Family {
    kind: MetricKind,
    /// Sorted.
    label_names: Vec<String>,
    /// Keyed by the labels sorted by name, so the order labels are given in does not make a
    /// new series.
    series: BTreeMap<Vec<(String, String)>, Series>,
}

#[derive(Debug)]
struct Series {
    labels: Vec<(String, String)>,
    json_key: String,
    metric: Metric,
}

/// Labels as given (for display) and sorted (the series' identity).
struct Labels {
    given: Vec<(String, String)>,
    key: Vec<(String, String)>,
}

impl Labels {
    fn names(&self) -> Vec<String> {
        self.key.iter().map(|(n, _)| n.clone()).collect()
    }
}

/// The labels of a new or looked-up series, refused if Prometheus could not tell them apart or
/// they would clash with a summary's `quantile`.
fn validate_labels(
    name: &str,
    labels: &[(&str, &str)],
    kind: MetricKind,
) -> Result<Labels, RegistryError> {
    if name.is_empty() {
        return Err(RegistryError::EmptyName);
    }
    let invalid = |reason: String| RegistryError::InvalidLabels {
        name: name.to_owned(),
        reason,
    };
    let mut written = HashSet::new();
    for (label, _) in labels {
        if label.is_empty() {
            return Err(invalid("a label name cannot be empty".into()));
        }
        let rendered = names::prometheus_label_name(label);
        if matches!(kind, MetricKind::Histogram | MetricKind::Timer) && rendered == "quantile" {
            return Err(invalid(format!(
                "label {label:?} is written as \"quantile\", which a {kind}'s summary uses"
            )));
        }
        if !written.insert(rendered.clone()) {
            return Err(invalid(format!(
                "label {label:?} is given twice (or written as {rendered:?} like another)"
            )));
        }
    }
    let given: Vec<(String, String)> = labels
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    let mut key = given.clone();
    key.sort();
    Ok(Labels { given, key })
}

impl MetricRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The counter `name` (without labels), created at zero if new.
    pub fn counter(&self, name: &str) -> Result<Counter, RegistryError> {
        self.counter_with(name, &[])
    }

    /// The counter `name` with `labels`, created at zero if new.
    pub fn counter_with(
        &self,
        name: &str,
        labels: &[(&str, &str)],
    ) -> Result<Counter, RegistryError> {
        match self.get_or_create(name, labels, MetricKind::Counter, || {
            Metric::Counter(Counter::new())
        })? {
            Metric::Counter(c) => Ok(c),
            other => Err(conflict(name, &other, MetricKind::Counter)),
        }
    }

    /// The counter `name` with `labels`, reading `f` when rendered (see
    /// [`Counter::from_fn`]); if it exists already it is returned as it is and `f` is dropped,
    /// as [`gauge`](Self::gauge) does.
    pub fn counter_fn<F>(
        &self,
        name: &str,
        labels: &[(&str, &str)],
        f: F,
    ) -> Result<Counter, RegistryError>
    where
        F: Fn() -> f64 + Send + Sync + 'static,
    {
        match self.get_or_create(name, labels, MetricKind::Counter, || {
            Metric::Counter(Counter::from_fn(f))
        })? {
            Metric::Counter(c) => Ok(c),
            other => Err(conflict(name, &other, MetricKind::Counter)),
        }
    }

    /// The meter `name` (without labels), created if new.
    pub fn meter(&self, name: &str) -> Result<Meter, RegistryError> {
        self.meter_with(name, &[])
    }

    /// The meter `name` with `labels`, created if new.
    pub fn meter_with(&self, name: &str, labels: &[(&str, &str)]) -> Result<Meter, RegistryError> {
        match self.get_or_create(name, labels, MetricKind::Meter, || {
            Metric::Meter(Meter::new())
        })? {
            Metric::Meter(m) => Ok(m),
            other => Err(conflict(name, &other, MetricKind::Meter)),
        }
    }

    /// The histogram `name` (without labels), created if new.
    pub fn histogram(&self, name: &str) -> Result<Histogram, RegistryError> {
        self.histogram_with(name, &[])
    }

    /// The histogram `name` with `labels`, created if new.
    pub fn histogram_with(
        &self,
        name: &str,
        labels: &[(&str, &str)],
    ) -> Result<Histogram, RegistryError> {
        self.histogram_made_by(name, labels, Histogram::new)
    }

    /// The histogram `name` with `labels`; if new, a fixed-point one for the facade's `f64`s.
    pub(crate) fn fixed_point_histogram(
        &self,
        name: &str,
        labels: &[(&str, &str)],
        divisor: f64,
    ) -> Result<Histogram, RegistryError> {
        self.histogram_made_by(name, labels, || Histogram::fixed_point(divisor))
    }

    fn histogram_made_by(
        &self,
        name: &str,
        labels: &[(&str, &str)],
        make: impl FnOnce() -> Histogram,
    ) -> Result<Histogram, RegistryError> {
        match self.get_or_create(name, labels, MetricKind::Histogram, || {
            Metric::Histogram(make())
        })? {
            Metric::Histogram(h) => Ok(h),
            other => Err(conflict(name, &other, MetricKind::Histogram)),
        }
    }

    /// The timer `name` (without labels), created if new.
    pub fn timer(&self, name: &str) -> Result<Timer, RegistryError> {
        self.timer_with(name, &[])
    }

    /// The timer `name` with `labels`, created if new.
    pub fn timer_with(&self, name: &str, labels: &[(&str, &str)]) -> Result<Timer, RegistryError> {
        match self.get_or_create(name, labels, MetricKind::Timer, || {
            Metric::Timer(Timer::new())
        })? {
            Metric::Timer(t) => Ok(t),
            other => Err(conflict(name, &other, MetricKind::Timer)),
        }
    }

    /// Whether a metric of any kind is registered under `name` (with any labels).
    ///
    /// ```
    /// let registry = ferrowizard_metrics::MetricRegistry::new();
    /// assert!(!registry.contains("requests"));
    /// registry.counter("requests").unwrap();
    /// assert!(registry.contains("requests"));
    /// ```
    pub fn contains(&self, name: &str) -> bool {
        self.read().families.contains_key(name)
    }

    /// The gauge `name` with `labels`, reading `f` when rendered; if the gauge exists already
    /// it is returned as it is and `f` is dropped (DropWizard's `gauge(name, supplier)` does
    /// the same). [`remove`](Self::remove) it first to replace the function.
    pub fn gauge<F>(
        &self,
        name: &str,
        labels: &[(&str, &str)],
        f: F,
    ) -> Result<Gauge, RegistryError>
    where
        F: Fn() -> f64 + Send + Sync + 'static,
    {
        match self.get_or_create(name, labels, MetricKind::Gauge, || {
            Metric::Gauge(Gauge::new(f))
        })? {
            Metric::Gauge(g) => Ok(g),
            other => Err(conflict(name, &other, MetricKind::Gauge)),
        }
    }

    /// The settable gauge `name` (without labels), created at 0 if new.
    pub fn settable_gauge(&self, name: &str) -> Result<SettableGauge, RegistryError> {
        self.settable_gauge_with(name, &[])
    }

    /// The settable gauge `name` with `labels`, created at 0 if new; an error if a function
    /// gauge has that name and labels.
    pub fn settable_gauge_with(
        &self,
        name: &str,
        labels: &[(&str, &str)],
    ) -> Result<SettableGauge, RegistryError> {
        let metric = self.get_or_create(name, labels, MetricKind::Gauge, || {
            Metric::Gauge(Gauge::from(SettableGauge::new()))
        })?;
        match metric {
            Metric::Gauge(g) => {
                g.as_settable()
                    .cloned()
                    .ok_or_else(|| RegistryError::NotSettable {
                        name: name.to_owned(),
                    })
            }
            other => Err(conflict(name, &other, MetricKind::Gauge)),
        }
    }

    /// Sets the Prometheus `# HELP` text of the family `name` (it may be registered later).
    pub fn describe(&self, name: &str, help: &str) {
        self.write().help.insert(name.to_owned(), help.to_owned());
    }

    /// Removes the series `name` with `labels`; whether there was one. Handles already given
    /// out keep working but are no longer rendered.
    pub fn remove(&self, name: &str, labels: &[(&str, &str)]) -> bool {
        let mut state = self.write();
        let Some(family) = state.families.get(name) else {
            return false;
        };
        let Ok(labels) = validate_labels(name, labels, family.kind) else {
            return false;
        };
        let kind = family.kind;
        let Some(family) = state.families.get_mut(name) else {
            return false;
        };
        let Some(series) = family.series.remove(&labels.key) else {
            return false;
        };
        let emptied = family.series.is_empty();
        state
            .json_keys
            .remove(&(JsonSection(kind), series.json_key));
        if emptied {
            state.families.remove(name);
            let family_name = names::family_name(name, kind);
            for sample in names::sample_names(&family_name, kind) {
                state.samples.remove(&sample);
            }
        }
        true
    }

    /// Every family, with its help text and series, for the renderers.
    pub(crate) fn families(&self) -> Vec<FamilyView> {
        let state = self.read();
        state
            .families
            .iter()
            .map(|(name, family)| FamilyView {
                name: name.clone(),
                kind: family.kind,
                help: state.help.get(name).cloned(),
                series: family
                    .series
                    .values()
                    .map(|s| SeriesView {
                        labels: s.labels.clone(),
                        json_key: s.json_key.clone(),
                        metric: s.metric.clone(),
                    })
                    .collect(),
            })
            .collect()
    }

    fn get_or_create(
        &self,
        name: &str,
        labels: &[(&str, &str)],
        kind: MetricKind,
        make: impl FnOnce() -> Metric,
    ) -> Result<Metric, RegistryError> {
        let labels = validate_labels(name, labels, kind)?;
        if let Some(found) = Self::existing(&self.read(), name, &labels, kind)? {
            return Ok(found);
        }
        let mut state = self.write();
        // Someone may have created it between the two locks.
        if let Some(found) = Self::existing(&state, name, &labels, kind)? {
            return Ok(found);
        }
        // Every check before any change, so a refusal leaves the registry as it was.
        let new_family_samples = match state.families.get(name) {
            Some(family) => {
                if family.label_names != labels.names() {
                    return Err(RegistryError::LabelMismatch {
                        name: name.to_owned(),
                        expected: family.label_names.clone(),
                        given: labels.names(),
                    });
                }
                None
            }
            None => {
                let family_name = names::family_name(name, kind);
                let samples = names::sample_names(&family_name, kind);
                if let Some((sample, other)) = samples
                    .iter()
                    .find_map(|s| state.samples.get(s).map(|other| (s, other)))
                {
                    return Err(RegistryError::NameCollision {
                        name: name.to_owned(),
                        other: other.clone(),
                        rendered: sample.clone(),
                    });
                }
                Some(samples)
            }
        };
        let json_key = names::json_key(name, &labels.given);
        let section = (JsonSection(kind), json_key);
        if let Some(other) = state.json_keys.get(&section) {
            return Err(RegistryError::NameCollision {
                name: name.to_owned(),
                other: other.clone(),
                rendered: section.1,
            });
        }
        if let Some(samples) = new_family_samples {
            for sample in samples {
                state.samples.insert(sample, name.to_owned());
            }
            state.families.insert(
                name.to_owned(),
                Family {
                    kind,
                    label_names: labels.names(),
                    series: BTreeMap::new(),
                },
            );
        }
        let metric = make();
        let Labels { given, key } = labels;
        state.json_keys.insert(section.clone(), name.to_owned());
        if let Some(family) = state.families.get_mut(name) {
            family.series.insert(
                key,
                Series {
                    labels: given,
                    json_key: section.1,
                    metric: metric.clone(),
                },
            );
        }
        Ok(metric)
    }

    /// The series if it exists; an error if the name is another type.
    fn existing(
        state: &State,
        name: &str,
        labels: &Labels,
        kind: MetricKind,
    ) -> Result<Option<Metric>, RegistryError> {
        let Some(family) = state.families.get(name) else {
            return Ok(None);
        };
        if family.kind != kind {
            return Err(RegistryError::TypeConflict {
                name: name.to_owned(),
                existing: family.kind,
                requested: kind,
            });
        }
        Ok(family.series.get(&labels.key).map(|s| s.metric.clone()))
    }

    // A panic while the registry is locked cannot leave it half-updated in a way that matters
    // more than losing every metric would, so poisoning is ignored.
    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The error for a metric found under `name` that is not of the kind asked for (the kind check
/// in `get_or_create` makes this unreachable, but a value is better than a panic).
fn conflict(name: &str, found: &Metric, requested: MetricKind) -> RegistryError {
    RegistryError::TypeConflict {
        name: name.to_owned(),
        existing: found.kind(),
        requested,
    }
}
