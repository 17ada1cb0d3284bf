//! Names and labels: how DropWizard's dotted names become Prometheus names, and how label values
//! are escaped, in one place so the registry (which refuses collisions) and the renderer (which
//! writes the names) cannot disagree.

use crate::kind::MetricKind;

/// A metric name as Prometheus accepts it: every character outside `[a-zA-Z0-9_:]` becomes `_`
/// (so `ferrowizard.requests` becomes `ferrowizard_requests`), and a leading digit gets a `_`
/// in front.
pub fn prometheus_name(name: &str) -> String {
    sanitize(name, |c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

/// A label name as Prometheus accepts it: as [`prometheus_name`], but `:` is not allowed either.
pub fn prometheus_label_name(name: &str) -> String {
    sanitize(name, |c| c.is_ascii_alphanumeric() || c == '_')
}

fn sanitize(name: &str, allowed: impl Fn(char) -> bool) -> String {
    let mut out = String::with_capacity(name.len() + 1);
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        out.push('_');
    }
    out.extend(name.chars().map(|c| if allowed(c) { c } else { '_' }));
    out
}

/// A label value between the double quotes of the text format: backslash, double quote and
/// line feed escaped as `\\`, `\"` and `\n`.
pub fn escape_label_value(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// `# HELP` text: backslash and line feed escaped (double quotes are legal there).
pub fn escape_help(help: &str) -> String {
    let mut out = String::with_capacity(help.len());
    for c in help.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// The name of a family in the Prometheus text: counters and meters end in `_total`, timers in
/// `_seconds` (they are rendered in seconds), without doubling a suffix the name already has.
pub(crate) fn family_name(name: &str, kind: MetricKind) -> String {
    let base = prometheus_name(name);
    let suffix = match kind {
        MetricKind::Counter | MetricKind::Meter => "_total",
        MetricKind::Timer => "_seconds",
        MetricKind::Gauge | MetricKind::Histogram => return base,
    };
    if base.ends_with(suffix) {
        base
    } else {
        base + suffix
    }
}

/// Every sample name a family writes: summaries (histograms, timers) add `_sum` and `_count`.
/// The registry refuses a family any of whose sample names another family already writes.
pub(crate) fn sample_names(family: &str, kind: MetricKind) -> Vec<String> {
    match kind {
        MetricKind::Histogram | MetricKind::Timer => vec![
            family.to_owned(),
            format!("{family}_sum"),
            format!("{family}_count"),
        ],
        MetricKind::Counter | MetricKind::Meter | MetricKind::Gauge => vec![family.to_owned()],
    }
}

/// The key of a series in DropWizard's JSON, which has no labels: the name with each label value
/// appended as a dotted segment, in the order the labels were given.
pub(crate) fn json_key(name: &str, labels: &[(String, String)]) -> String {
    let mut key = name.to_owned();
    for (_, value) in labels {
        key.push('.');
        key.push_str(value);
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dots_and_strangers_become_underscores() {
        assert_eq!(
            prometheus_name("ferrowizard.requests"),
            "ferrowizard_requests"
        );
        assert_eq!(prometheus_name("a-b c/d:e_f9"), "a_b_c_d:e_f9");
        assert_eq!(prometheus_name("9lives"), "_9lives");
        assert_eq!(prometheus_name("café"), "caf_");
        assert_eq!(prometheus_label_name("http:method"), "http_method");
        assert_eq!(prometheus_label_name("0x"), "_0x");
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape_label_value("a\\b\"c\nd"), "a\\\\b\\\"c\\nd");
        assert_eq!(escape_help("x \"y\"\\\n"), "x \"y\"\\\\\\n");
    }

    #[test]
    fn suffixes_are_added_once() {
        assert_eq!(family_name("req", MetricKind::Counter), "req_total");
        assert_eq!(family_name("req_total", MetricKind::Meter), "req_total");
        assert_eq!(
            family_name("req.latency", MetricKind::Timer),
            "req_latency_seconds"
        );
        assert_eq!(family_name("q.size", MetricKind::Histogram), "q_size");
    }

    #[test]
    fn json_keys_append_label_values_in_order() {
        let labels = vec![
            ("method".to_owned(), "GET".to_owned()),
            ("route".to_owned(), "/a".to_owned()),
        ];
        assert_eq!(json_key("requests", &labels), "requests.GET./a");
    }
}
