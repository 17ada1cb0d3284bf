//! The two ways the registry is written out: DropWizard's JSON (`/metrics`) and the Prometheus
//! text format (`/metrics/prometheus`). Both read a copy of the registry's families taken under
//! its lock, and compute values (gauge functions, snapshots) after releasing it.

pub mod json;
pub mod prometheus;

use crate::registry::MetricRegistry;

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
}
