//! "Did you mean?": close matches for a misspelt name.

/// Up to five `candidates` close to `word`, closest first (case-insensitive
/// Damerau-Levenshtein distance; only candidates within a third of the word's length, plus
/// one, qualify, so unrelated names are not offered).
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    let lower = word.to_lowercase();
    let limit = lower.chars().count() / 3 + 1;
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter(|c| !c.starts_with("__"))
        .map(|c| (strsim::damerau_levenshtein(&lower, &c.to_lowercase()), c))
        .filter(|(d, c)| *d <= limit || (c.len() > 2 && c.to_lowercase().contains(&lower)))
        .collect();
    scored.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    scored.dedup_by(|a, b| a.1 == b.1);
    scored
        .into_iter()
        .take(5)
        .map(|(_, c)| c.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::did_you_mean;

    #[test]
    fn ranks_by_distance() {
        let c = [
            "maxThreads",
            "minThreads",
            "maxQueuedRequests",
            "idleTimeout",
        ];
        assert_eq!(
            did_you_mean("maxThread", c),
            vec!["maxThreads", "minThreads"]
        );
        assert!(did_you_mean("zzzzzz", c).is_empty());
    }
}
