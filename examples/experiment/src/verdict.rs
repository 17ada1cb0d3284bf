//! The summary's reading of the numbers: what `before`'s ratio to `after` means, which way
//! is better, and how it stands beside the report's own figures.

use crate::output::thousands;

/// The report's figures (DropWizard, Gatling 2, about 10 minutes): requests answered OK and
/// KO under its `before` and `after` configs.
#[derive(Clone, Copy, Debug)]
pub struct Seed {
    /// `before`'s OK responses.
    pub before_ok: u64,
    /// `before`'s KO responses.
    pub before_ko: u64,
    /// `after`'s OK responses.
    pub after_ok: u64,
    /// `after`'s KO responses.
    pub after_ko: u64,
}

/// The report's.
pub const SEED: Seed = Seed {
    before_ok: 25_873,
    before_ko: 4_210,
    after_ok: 113_011,
    after_ko: 264,
};

impl Seed {
    /// `before`'s OK responses over `after`'s, over the same length of time: the report's
    /// ratio, in the terms of the summary's table.
    pub fn ratio(&self) -> f64 {
        self.before_ok as f64 / self.after_ok as f64
    }

    /// The share of `before`'s requests that failed, in percent.
    pub fn before_ko_percent(&self) -> f64 {
        percent(self.before_ko, self.before_ok + self.before_ko)
    }

    /// The report's figures in a line, as the report gave them: the counts, then `after` over
    /// `before`.
    pub fn line(&self) -> String {
        format!(
            "before {} OK / {} KO; after {} OK / {} KO: {:.1}x",
            thousands(self.before_ok),
            thousands(self.before_ko),
            thousands(self.after_ok),
            thousands(self.after_ko),
            1.0 / self.ratio()
        )
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole.max(1) as f64
}

/// One config's comparison with `after`.
#[derive(Clone, Debug)]
pub struct Compared {
    /// The config.
    pub name: String,
    /// Its req/s over `after`'s in each round.
    pub ratios: Vec<f64>,
    /// The median of `ratios`.
    pub ratio: f64,
    /// OK responses, over every round.
    pub ok: u64,
    /// KO responses.
    pub ko: u64,
}

/// The paragraph that reads the table: what the ratio means and which way is better, what
/// `before`'s says about the report's change (from chatty logging to its `config.yaml`) on
/// this service, beside what it said on the report's, and the other configs' by the same
/// measure.
pub fn paragraph(compared: &[Compared], seed: &Seed) -> String {
    let mut text = String::from(
        "**What this says.** Each ratio is a config's requests per second over `after`'s in the \
         same round, so higher is better: 1.00 is as fast as `after`, 0.50 half as fast. ",
    );
    let seed_says = format!(
        "in the report the same change made DropWizard {:.1}x as fast (`before` served {:.2} of `after`'s requests, and {:.0} % of its requests failed)",
        1.0 / seed.ratio(),
        seed.ratio(),
        seed.before_ko_percent()
    );
    let before = compared.iter().find(|c| c.name == "before");
    let after = compared.iter().any(|c| c.name == crate::configs::BASELINE);
    let Some(before) = before.filter(|b| after && !b.ratios.is_empty()) else {
        text.push_str(&format!(
            "`before` or `after` did not finish a round, so there is no ratio to set beside the report's ({seed_says})."
        ));
        return text;
    };
    let r = before.ratio;
    let low = before.ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let high = before
        .ratios
        .iter()
        .copied()
        .fold(f64::NEG_INFINITY, f64::max);
    let rounds = if before.ratios.len() == 1 {
        "one round".to_owned()
    } else {
        format!(
            "median of {} rounds, {low:.2} to {high:.2}",
            before.ratios.len()
        )
    };
    text.push_str(&format!(
        "`before`, the report's chatty logging, served {r:.2} of `after`'s requests per second ({rounds})"
    ));
    if high < 1.0 {
        text.push_str(&format!(
            ": turning the logging down as the report did made this service {:.2}x as fast, where {seed_says}. \
             So the chatty logging costs this service {:.0} % of its throughput; it cost the report's {:.0} %.",
            1.0 / r,
            100.0 * (1.0 - r),
            100.0 * (1.0 - seed.ratio())
        ));
    } else if low > 1.0 {
        text.push_str(&format!(
            ": more than `after`, so turning the logging down did not make this service faster, where {seed_says}."
        ));
    } else {
        text.push_str(&format!(
            ": its rounds fall on both sides of 1.00, so this run cannot tell `before` from `after`, where {seed_says}."
        ));
    }
    let failed = percent(before.ko, before.ok + before.ko);
    if before.ko == 0 {
        text.push_str(" Here none of `before`'s requests failed.");
    } else {
        text.push_str(&format!(
            " Here {failed:.1} % of `before`'s requests failed."
        ));
    }
    let others: Vec<String> = compared
        .iter()
        .filter(|c| {
            c.name != "before" && c.name != crate::configs::BASELINE && !c.ratios.is_empty()
        })
        .map(|c| format!("`{}` {:.2}", c.name, c.ratio))
        .collect();
    if !others.is_empty() {
        text.push_str(&format!(
            " The other configs by the same measure: {}.",
            others.join(", ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compared(name: &str, ratios: &[f64], ko: u64) -> Compared {
        let mut sorted = ratios.to_vec();
        sorted.sort_by(f64::total_cmp);
        Compared {
            name: name.into(),
            ratios: ratios.to_vec(),
            ratio: sorted.get(sorted.len() / 2).copied().unwrap_or(0.0),
            ok: 1000,
            ko,
        }
    }

    /// The report's line is its own figures, and its ratio the table's terms: 0.23, 4.4x.
    #[test]
    fn the_seeds_figures_read_as_the_seed_gave_them() {
        assert_eq!(
            SEED.line(),
            "before 25,873 OK / 4,210 KO; after 113,011 OK / 264 KO: 4.4x"
        );
        assert!((SEED.ratio() - 0.229).abs() < 0.001);
        assert!((SEED.before_ko_percent() - 14.0).abs() < 0.1);
    }

    /// A `before` below 1 in every round reads as a speed-up, computed from the ratio, beside
    /// the report's; the other configs follow.
    ///
    /// Catches: the ratio read the wrong way round (0.86 as "0.86x as fast"), a figure
    /// hard-coded instead of computed.
    #[test]
    fn a_slower_before_reads_as_what_the_logging_costs() {
        let text = paragraph(
            &[
                compared("before", &[0.80, 0.86, 0.92], 0),
                compared("after", &[1.0, 1.0, 1.0], 0),
                compared("production", &[0.87], 0),
            ],
            &SEED,
        );
        assert!(
            text.contains(
                "served 0.86 of `after`'s requests per second (median of 3 rounds, 0.80 to 0.92)"
            ),
            "{text}"
        );
        assert!(text.contains("made this service 1.16x as fast"), "{text}");
        assert!(text.contains("DropWizard 4.4x as fast"), "{text}");
        assert!(
            text.contains("costs this service 14 % of its throughput; it cost the report's 77 %"),
            "{text}"
        );
        assert!(
            text.contains("none of `before`'s requests failed"),
            "{text}"
        );
        assert!(text.contains("`production` 0.87"), "{text}");
    }

    /// Rounds on both sides of 1 say the run cannot tell the two apart; a faster `before`
    /// says so; a missing `after` says there is no ratio.
    #[test]
    fn a_draw_a_faster_before_and_a_missing_after_are_said_as_such() {
        let after = compared("after", &[1.0], 0);
        let draw = paragraph(
            &[compared("before", &[0.97, 1.03], 5), after.clone()],
            &SEED,
        );
        assert!(draw.contains("cannot tell `before` from `after`"), "{draw}");
        assert!(
            draw.contains("0.5 % of `before`'s requests failed"),
            "{draw}"
        );
        let faster = paragraph(&[compared("before", &[1.1], 0), after], &SEED);
        assert!(
            faster.contains("(one round): more than `after`"),
            "{faster}"
        );
        let missing = paragraph(&[compared("before", &[], 0)], &SEED);
        assert!(missing.contains("no ratio"), "{missing}");
    }
}
