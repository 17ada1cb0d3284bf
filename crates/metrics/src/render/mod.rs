//! The two ways the registry is written out: DropWizard's JSON (`/metrics`) and the Prometheus
//! text format (`/metrics/prometheus`). Both read a copy of the registry's families taken under
//! its lock, and compute values (gauge functions, snapshots) after releasing it.

pub mod json;
pub mod prometheus;
pub mod report;

use crate::registry::MetricRegistry;
use report::{CsvRow, ReportFilter};

impl MetricRegistry {
    /// Every metric in DropWizard Metrics 4.x's JSON, compact or indented (`?pretty=true`).
    pub fn render_json(&self, pretty: bool) -> String {
        json::render(&self.families(), pretty)
    }

    /// Every metric in the Prometheus text exposition format 0.0.4 (content type
    /// `text/plain; version=0.0.4`).
    pub fn render_prometheus(&self) -> String {
        prometheus::render(&self.families())
    }

    /// The series `filter` lets through as DropWizard's `Slf4jReporter` logs them, one line
    /// each (see [`report`]).
    ///
    /// ```
    /// use ferrowizard_metrics::{MetricRegistry, render::report::ReportFilter};
    /// let registry = MetricRegistry::new();
    /// registry.counter("jobs").unwrap().add(3);
    /// assert_eq!(
    ///     registry.report_log_lines(&ReportFilter::default()),
    ///     ["type=COUNTER, name=jobs, count=3"]
    /// );
    /// ```
    pub fn report_log_lines(&self, filter: &ReportFilter) -> Vec<String> {
        report::log_lines(&self.families(), filter)
    }

    /// The series `filter` lets through as DropWizard's `CsvReporter` writes them, a row for
    /// each one's file (see [`report`]).
    ///
    /// ```
    /// use ferrowizard_metrics::{MetricRegistry, render::report::ReportFilter};
    /// let registry = MetricRegistry::new();
    /// registry.counter("jobs").unwrap().add(3);
    /// let rows = registry.report_csv_rows(&ReportFilter::default());
    /// assert_eq!((rows[0].file_name(), rows[0].header, rows[0].values.as_str()), ("jobs.csv".to_owned(), "t,count", "3"));
    /// ```
    pub fn report_csv_rows(&self, filter: &ReportFilter) -> Vec<CsvRow> {
        report::csv_rows(&self.families(), filter)
    }
}
