//! Feeders: records of a CSV file (a header row, then records) or a JSON file (an array of
//! objects) handed to users, one record a `feed` step, by a strategy.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::scenario::{Feed, FeedStrategy, Step};

/// A file's records, handed out by its strategy.
pub struct Feeder {
    records: Vec<Vec<(String, String)>>,
    strategy: FeedStrategy,
    next: AtomicU64,
}

impl Feeder {
    /// Reads `path`: a JSON file (`.json`: an array of objects, each a record whose keys are
    /// its variables) or a CSV file (anything else: a header row, then records).
    pub fn load(path: &Path, strategy: FeedStrategy) -> Result<Feeder, String> {
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let records = if is_json {
            json_records(path)?
        } else {
            csv_records(path)?
        };
        Ok(Feeder::new(records, strategy))
    }

    fn new(mut records: Vec<Vec<(String, String)>>, strategy: FeedStrategy) -> Feeder {
        if strategy == FeedStrategy::Shuffle {
            let mut seed = 0x9E37_79B9_7F4A_7C15_u64 ^ records.len() as u64;
            for i in (1..records.len()).rev() {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                records.swap(i, (seed % (i as u64 + 1)) as usize);
            }
        }
        Feeder {
            records,
            strategy,
            next: AtomicU64::new(0),
        }
    }

    /// The next record, or `None` when a queue (or shuffle) is exhausted.
    pub fn next(&self) -> Option<&[(String, String)]> {
        if self.records.is_empty() {
            return None;
        }
        let n = self.next.fetch_add(1, Relaxed);
        let len = self.records.len() as u64;
        let i = match self.strategy {
            FeedStrategy::Queue | FeedStrategy::Shuffle if n >= len => return None,
            FeedStrategy::Queue | FeedStrategy::Shuffle | FeedStrategy::Circular => n % len,
            FeedStrategy::Random => {
                let mut x = n
                    .wrapping_mul(0x9E37_79B9_7F4A_7C15)
                    .wrapping_add(0x2545_F491_4F6C_DD1D);
                x ^= x >> 31;
                x % len
            }
        };
        self.records.get(i as usize).map(Vec::as_slice)
    }
}

fn csv_records(path: &Path) -> Result<Vec<Vec<(String, String)>>, String> {
    let mut reader =
        csv::Reader::from_path(path).map_err(|e| format!("feeder {}: {e}", path.display()))?;
    let headers = reader
        .headers()
        .map_err(|e| format!("feeder {}: {e}", path.display()))?
        .clone();
    let mut records = Vec::new();
    for (i, row) in reader.records().enumerate() {
        let row = row.map_err(|e| format!("feeder {} record {}: {e}", path.display(), i + 1))?;
        records.push(
            headers
                .iter()
                .zip(row.iter())
                .map(|(h, v)| (h.to_owned(), v.to_owned()))
                .collect(),
        );
    }
    Ok(records)
}

/// An array of objects; a value that is not a string is kept as its JSON text (`42`,
/// `true`, `{"a":1}`), as `save` keeps one.
fn json_records(path: &Path) -> Result<Vec<Vec<(String, String)>>, String> {
    let text = std::fs::read(path).map_err(|e| format!("feeder {}: {e}", path.display()))?;
    let rows: Vec<serde_json::Map<String, serde_json::Value>> = serde_json::from_slice(&text)
        .map_err(|e| {
            format!(
                "feeder {}: {e} (a JSON feeder is an array of objects)",
                path.display()
            )
        })?;
    Ok(rows
        .into_iter()
        .map(|row| {
            row.into_iter()
                .map(|(k, v)| {
                    let text = crate::session::value_text(&v).into_owned();
                    (k, text)
                })
                .collect()
        })
        .collect())
}

/// Every feeder of a simulation, one per (file, strategy): the `feed` steps that name the
/// same file with the same strategy share its records (a queue is emptied once, by all of
/// them), and a step with another strategy has a feeder of its own.
#[derive(Default)]
pub struct Feeders {
    /// By strategy, then file: a lookup by the `feed` step's borrowed parts, no key built.
    by_strategy: HashMap<FeedStrategy, HashMap<String, Feeder>>,
}

impl Feeders {
    /// Loads the feeder of every `feed` step under `steps`, files relative to `base_dir`.
    pub fn load<'a>(
        steps: impl IntoIterator<Item = &'a [Step]>,
        base_dir: &Path,
    ) -> Result<Feeders, String> {
        fn collect<'a>(steps: &'a [Step], out: &mut Vec<&'a Feed>) {
            for s in steps {
                if let Some(f) = &s.feed {
                    out.push(f);
                }
                for nested in s.nested() {
                    collect(nested, out);
                }
            }
        }
        let mut feeds = Vec::new();
        for s in steps {
            collect(s, &mut feeds);
        }
        let mut by_strategy: HashMap<FeedStrategy, HashMap<String, Feeder>> = HashMap::new();
        for f in feeds {
            let files = by_strategy.entry(f.strategy).or_default();
            if !files.contains_key(&f.file) {
                let feeder = Feeder::load(&base_dir.join(&f.file), f.strategy)?;
                files.insert(f.file.clone(), feeder);
            }
        }
        Ok(Feeders { by_strategy })
    }

    /// The feeder of `feed`'s file and strategy.
    pub fn get(&self, feed: &Feed) -> Option<&Feeder> {
        self.by_strategy.get(&feed.strategy)?.get(&feed.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_fed_with_two_strategies_has_two_feeders() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("two.csv"), "symbol\nA\nB\n").unwrap();
        let feed = |strategy| Feed {
            file: "two.csv".into(),
            strategy,
        };
        let step = |strategy| Step {
            feed: Some(feed(strategy)),
            ..Default::default()
        };
        let steps = [
            step(FeedStrategy::Circular),
            step(FeedStrategy::Queue),
            step(FeedStrategy::Queue),
        ];
        let feeders = Feeders::load([&steps[..]], dir.path()).unwrap();
        let queue = feeders.get(&feed(FeedStrategy::Queue)).unwrap();
        let circular = feeders.get(&feed(FeedStrategy::Circular)).unwrap();
        assert!(feeders.get(&feed(FeedStrategy::Random)).is_none());
        for _ in 0..5 {
            assert!(
                circular.next().is_some(),
                "a circular feeder never runs dry"
            );
        }
        assert_eq!(
            queue.next().unwrap()[0].1,
            "A",
            "the queue was not drawn from"
        );
        assert_eq!(queue.next().unwrap()[0].1, "B");
        assert!(queue.next().is_none());
    }
}
