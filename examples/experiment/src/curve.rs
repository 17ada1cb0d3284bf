//! Where the experiment's configs sit on the logging cost curve (`bench/logcurve.sh`, in
//! BENCHMARKS.md, "Logging cost curve"): the curve measures each logger's throughput against
//! the lines it writes a request, at 1, 5, 20 and 70 lines; a config's own lines a request
//! say which of its points to read.

/// The curve's points: lines a request.
pub const POINTS: [u64; 4] = [1, 5, 20, 70];

/// Events a request DropWizard's Jetty logs at DEBUG in the 2014 DropWizard logging report's
/// setup: what its `before` config cost there, against ferrowizard's few lines.
pub const DROPWIZARD_DEBUG_EVENTS: u64 = 69;

/// The paragraph of `summary.md`: for each config, its log lines a request (`lines` written
/// over `requests` answered) and the curve's points either side.
///
/// ```
/// let p = experiment::curve::paragraph(&[("before", 500, 100), ("after", 0, 100)]);
/// assert!(p.contains("before writes 5.0 log lines a request: about the curve's 5-line point"));
/// assert!(p.contains("after writes none"));
/// ```
pub fn paragraph(configs: &[(&str, u64, u64)]) -> String {
    let each: Vec<String> = configs
        .iter()
        .map(|&(name, lines, requests)| place(name, lines, requests))
        .collect();
    format!(
        "On the logging cost curve (BENCHMARKS.md, \"Logging cost curve\"; `bench/logcurve.sh` \
         measures each logger's throughput, as a ratio to the same server logging nothing, at \
         1, 5, 20 and 70 lines a request): {}. In the report, DropWizard's Jetty at DEBUG \
         logged about {DROPWIZARD_DEBUG_EVENTS} events a request: the report's `before` sits at \
         the curve's 70-line point, where the JVM stack is drawn beside every Rust logger.",
        each.join("; ")
    )
}

fn place(name: &str, lines: u64, requests: u64) -> String {
    if lines == 0 || requests == 0 {
        return format!("{name} writes none");
    }
    let per = lines as f64 / requests as f64;
    if per < 0.05 {
        return format!("{name} writes next to none ({lines} lines in all)");
    }
    // Within 5 % of a point (a request log's line a request plus a few), the point itself.
    if let Some(p) = POINTS
        .iter()
        .find(|&&p| (per / p as f64 - 1.0).abs() <= 0.05)
    {
        return format!(
            "{name} writes {per:.1} log lines a request: about the curve's {p}-line point"
        );
    }
    let below = POINTS.iter().rev().find(|&&p| p as f64 <= per);
    let above = POINTS.iter().find(|&&p| p as f64 >= per);
    let at = match (below, above) {
        (Some(b), Some(a)) if b == a => format!("the curve's {b}-line point"),
        (Some(b), Some(a)) => format!("between the curve's {b}- and {a}-line points"),
        (None, Some(a)) => format!("below the curve's {a}-line point"),
        (Some(b), None) => format!("beyond the curve's {b}-line point"),
        (None, None) => String::new(),
    };
    format!("{name} writes {per:.1} log lines a request: {at}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Catches: the points either side swapped or off by one, a ratio of lines to requests
    /// turned over, and a config with no lines or no requests dividing by zero.
    #[test]
    fn each_config_lands_between_the_points_either_side() {
        let p = paragraph(&[
            ("before", 1_190, 100),
            ("production", 150, 100),
            ("loud", 9_000, 100),
            ("quiet", 50, 100),
            ("chatty", 136_494, 27_278),
            ("after", 9, 100_000),
            ("idle", 9, 0),
        ]);
        assert!(
            p.contains(
                "before writes 11.9 log lines a request: between the curve's 5- and 20-line points"
            ),
            "{p}"
        );
        assert!(p.contains("production writes 1.5 log lines a request: between the curve's 1- and 5-line points"), "{p}");
        assert!(
            p.contains("loud writes 90.0 log lines a request: beyond the curve's 70-line point"),
            "{p}"
        );
        assert!(
            p.contains("quiet writes 0.5 log lines a request: below the curve's 1-line point"),
            "{p}"
        );
        assert!(
            p.contains("after writes next to none (9 lines in all)"),
            "{p}"
        );
        assert!(p.contains("idle writes none"), "{p}");
    }
}
