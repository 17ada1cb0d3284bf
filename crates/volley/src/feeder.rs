//! Feeders: records of a CSV file (a header row, then records) or a JSON file (an array of
//! objects) handed to users, one record a `feed` step, by a strategy.
//!
//! A shard of a run (`--shard i/N`) has the records whose index in the file, counted from
//! the place of the first scenario that feeds from it among the run's users, is ≡ i (mod N),
//! whatever the strategy: no record is used by two shards, together they use the file, and
//! where each user takes one record, every shard has the records of its own users.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use crate::scenario::{Feed, FeedStrategy, Step};
use crate::shard::Shard;

/// A file's records, handed out by its strategy.
pub struct Feeder {
    records: Vec<Vec<(String, String)>>,
    strategy: FeedStrategy,
    next: AtomicU64,
}

impl Feeder {
    /// Reads `path`: a JSON file (`.json`: an array of objects, each a record whose keys are
    /// its variables) or a CSV file (anything else: a header row, then records), keeping
    /// `shard`'s records (all of them for [`Shard::WHOLE`]), the file's first record counted as
    /// the run's `offset`-th (its first user's place). A shard left with none of a file
    /// that has records is an error: its users would all fail, or a `random` or `circular`
    /// feeder would have nothing to repeat.
    pub fn load(
        path: &Path,
        strategy: FeedStrategy,
        shard: Shard,
        offset: u64,
    ) -> Result<Feeder, String> {
        let is_json = path
            .extension()
            .is_some_and(|e| e.eq_ignore_ascii_case("json"));
        let all = if is_json {
            json_records(path)?
        } else {
            csv_records(path)?
        };
        let read = all.len();
        let records: Vec<_> = all
            .into_iter()
            .enumerate()
            .filter(|(i, _)| shard.keeps(offset.wrapping_add(*i as u64)))
            .map(|(_, r)| r)
            .collect();
        if records.is_empty() && read > 0 {
            return Err(format!(
                "feeder {} has {read} record{}, too few for {} shards: shard {shard} has none \
                 (give it at least {} records, or run fewer shards)",
                path.display(),
                if read == 1 { "" } else { "s" },
                shard.count(),
                shard.count()
            ));
        }
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
    /// Loads the feeder of every `feed` step under each scenario's `steps`, files relative to
    /// `base_dir`, with `shard`'s records counted from the offset of the first scenario that
    /// feeds from the file (see [`Feeder::load`]).
    pub fn load<'a>(
        steps: impl IntoIterator<Item = (&'a [Step], u64)>,
        base_dir: &Path,
        shard: Shard,
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
        let mut by_strategy: HashMap<FeedStrategy, HashMap<String, Feeder>> = HashMap::new();
        for (steps, offset) in steps {
            let mut feeds = Vec::new();
            collect(steps, &mut feeds);
            for f in feeds {
                let files = by_strategy.entry(f.strategy).or_default();
                if !files.contains_key(&f.file) {
                    let feeder = Feeder::load(&base_dir.join(&f.file), f.strategy, shard, offset)?;
                    files.insert(f.file.clone(), feeder);
                }
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
        let feeders = Feeders::load([(&steps[..], 0)], dir.path(), Shard::WHOLE).unwrap();
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

    /// Every strategy hands a shard only its own records: across the shards of a split, no
    /// record twice, and every record of the file.
    ///
    /// Catches: a shuffle cut after shuffling by position (shards then share records when
    /// their shuffles differ), a random or circular feeder drawing from the whole file.
    #[test]
    fn the_shards_of_a_feeder_share_no_record() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("ten.csv");
        let text: String = (0..10).map(|i| format!("R{i}\n")).collect();
        std::fs::write(&path, format!("symbol\n{text}")).unwrap();
        let value = |record: &[(String, String)]| record[0].1.clone();
        for strategy in [
            FeedStrategy::Queue,
            FeedStrategy::Shuffle,
            FeedStrategy::Random,
            FeedStrategy::Circular,
        ] {
            let mut seen: Vec<String> = Vec::new();
            for i in 0..3 {
                let shard = Shard::parse(&format!("{i}/3"), None).unwrap();
                let feeder = Feeder::load(&path, strategy, shard, 0).unwrap();
                let own: std::collections::BTreeSet<String> =
                    (0..40).map_while(|_| feeder.next().map(value)).collect();
                let expected: std::collections::BTreeSet<String> = (0..10)
                    .filter(|k| k % 3 == i)
                    .map(|k| format!("R{k}"))
                    .collect();
                if strategy == FeedStrategy::Random {
                    assert!(own.is_subset(&expected), "{strategy:?} {shard}: {own:?}");
                } else {
                    assert_eq!(own, expected, "{strategy:?} {shard}");
                }
                seen.extend(own);
            }
            let distinct: std::collections::BTreeSet<&String> = seen.iter().collect();
            assert_eq!(
                distinct.len(),
                seen.len(),
                "{strategy:?}: a record in two shards"
            );
        }
        // The queue of one shard runs dry after its own records.
        let queue = Feeder::load(
            &path,
            FeedStrategy::Queue,
            Shard::parse("2/3", None).unwrap(),
            0,
        )
        .unwrap();
        let drawn: Vec<String> = std::iter::from_fn(|| queue.next().map(value)).collect();
        assert_eq!(drawn, ["R2", "R5", "R8"]);
    }

    #[test]
    fn a_shard_left_without_records_is_refused_at_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.csv");
        std::fs::write(&path, "symbol\nA\nB\n").unwrap();
        let shard = |text: &str| Shard::parse(text, None).unwrap();
        assert!(Feeder::load(&path, FeedStrategy::Circular, shard("1/3"), 0).is_ok());
        let err = Feeder::load(&path, FeedStrategy::Circular, shard("2/3"), 0)
            .err()
            .unwrap();
        assert_eq!(
            err,
            format!(
                "feeder {} has 2 records, too few for 3 shards: shard 2/3 has none (give it at \
                 least 3 records, or run fewer shards)",
                path.display()
            )
        );
        // An empty file is no shard's fault: its users say the feeder is empty, as unsharded.
        let empty = dir.path().join("empty.csv");
        std::fs::write(&empty, "symbol\n").unwrap();
        assert!(Feeder::load(&empty, FeedStrategy::Queue, shard("2/3"), 0).is_ok());
    }
}
