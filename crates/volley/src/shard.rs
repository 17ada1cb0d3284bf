//! One of N parts of a run, for generators on several machines (`volley run --shard i/N`).
//!
//! Everything a run hands out in order is cut by its index: shard i keeps the open-model
//! arrivals, closed-model slots, throttle slots and feeder records whose index in the whole
//! run is ≡ i (mod N). So the N shards add up to the whole run exactly (their counts, their
//! due times, their records), and [`results::merge`](crate::results::merge) puts their
//! results together as if one generator had run it.
//!
//! ```
//! use volley::shard::Shard;
//!
//! let shard = Shard::parse("1/3", None).unwrap();
//! assert_eq!(shard.to_string(), "1/3");
//! // Of 10 users, shard 1 of 3 starts users 1, 4 and 7.
//! assert_eq!((0..10).filter(|&k| shard.keeps(k)).collect::<Vec<_>>(), [1, 4, 7]);
//! assert_eq!(shard.share(10), 3);
//! ```

use serde::{Deserialize, Serialize};

/// The variable a Kubernetes Indexed Job sets in each of its pods to the pod's index, which
/// `--shard N` takes the shard's index from.
pub const JOB_INDEX_VAR: &str = "JOB_COMPLETION_INDEX";

/// One of `count` parts of a run: the `index`-th, from 0.
#[derive(
    Clone,
    Copy,
    Debug,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    schemars::JsonSchema,
)]
#[schemars(deny_unknown_fields)]
pub struct Shard {
    /// Which part, from 0.
    index: u32,
    /// Of how many parts.
    #[schemars(range(min = 1))]
    count: u32,
}

/// Why a `--shard` argument names no shard.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShardError {
    /// Neither `i/N` nor `N`.
    #[error(
        "--shard {arg}: give i/N (the i-th of N parts, from 0) or N (the index from {JOB_INDEX_VAR})"
    )]
    Form {
        /// The argument.
        arg: String,
    },
    /// A count that is not a whole number of at least 1.
    #[error("--shard {arg}: the count must be a whole number of at least 1")]
    Count {
        /// The argument.
        arg: String,
    },
    /// An index that is not a whole number.
    #[error("--shard {arg}: the index must be a whole number from 0")]
    Index {
        /// The argument.
        arg: String,
    },
    /// An index at or past the count.
    #[error("--shard {arg}: the index must be below the count ({index} is not below {count})")]
    IndexPastCount {
        /// The argument.
        arg: String,
        /// The index, and where it came from (`JOB_COMPLETION_INDEX=3`).
        index: String,
        /// The count.
        count: u32,
    },
    /// `--shard N` with no index in the environment.
    #[error(
        "--shard {arg}: {JOB_INDEX_VAR} is not set (a Kubernetes Indexed Job sets it in each pod); \
         elsewhere give the index: --shard 0/{arg}"
    )]
    NoJobIndex {
        /// The argument.
        arg: String,
    },
    /// `--shard N` with an index in the environment that is not a number.
    #[error("--shard {arg}: {JOB_INDEX_VAR}={value:?} is not a whole number from 0")]
    JobIndex {
        /// The argument.
        arg: String,
        /// The variable's value.
        value: String,
    },
}

impl Shard {
    /// The whole run: shard 0 of 1.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// `--shard`'s argument: `i/N`, or `N` with the index in `job_index` (the value of
    /// [`JOB_INDEX_VAR`], `None` when it is not set).
    ///
    /// ```
    /// use volley::shard::Shard;
    ///
    /// assert_eq!(Shard::parse("3", Some("2")), Shard::parse("2/3", None));
    /// let err = Shard::parse("3/3", None).unwrap_err();
    /// assert!(err.to_string().starts_with("--shard 3/3: the index must be below the count"));
    /// ```
    pub fn parse(arg: &str, job_index: Option<&str>) -> Result<Shard, ShardError> {
        let arg_owned = || arg.to_owned();
        let whole = |text: &str| {
            // `u32::from_str` takes a leading `+`; a shard's numbers are digits only.
            text.bytes()
                .all(|b| b.is_ascii_digit())
                .then(|| text.parse::<u32>().ok())
                .flatten()
        };
        let (index_text, count_text) = match arg.split_once('/') {
            Some((i, n)) => (Some(i), n),
            None => (None, arg),
        };
        if count_text.contains('/') || count_text.is_empty() {
            return Err(ShardError::Form { arg: arg_owned() });
        }
        let count = whole(count_text)
            .filter(|n| *n >= 1)
            .ok_or_else(|| ShardError::Count { arg: arg_owned() })?;
        let (index, said) = match index_text {
            Some(i) => {
                let index = whole(i).ok_or_else(|| ShardError::Index { arg: arg_owned() })?;
                (index, index.to_string())
            }
            None => {
                let value = job_index.ok_or_else(|| ShardError::NoJobIndex { arg: arg_owned() })?;
                let index = whole(value.trim()).ok_or_else(|| ShardError::JobIndex {
                    arg: arg_owned(),
                    value: value.to_owned(),
                })?;
                (index, format!("{JOB_INDEX_VAR}={index}"))
            }
        };
        if index >= count {
            return Err(ShardError::IndexPastCount {
                arg: arg_owned(),
                index: said,
                count,
            });
        }
        Ok(Shard { index, count })
    }

    /// Which part, from 0.
    pub fn index(self) -> u32 {
        self.index
    }

    /// Of how many parts.
    pub fn count(self) -> u32 {
        self.count
    }

    /// Whether this is the whole run (one part).
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// Whether the whole run's `k`-th item (arrival, slot, record), from 0, is this shard's.
    pub fn keeps(self, k: u64) -> bool {
        k % u64::from(self.count) == u64::from(self.index)
    }

    /// How many of the whole run's first `total` items are this shard's.
    pub fn share(self, total: u64) -> u64 {
        let (n, i) = (u64::from(self.count), u64::from(self.index));
        total / n + u64::from(i < total % n)
    }

    /// How many of the whole run's items `from .. from + total` are this shard's: a later
    /// scenario's users continue the count of the scenarios before it, so that the shards'
    /// shares of the run stay within one of each other (and of their feeder records).
    ///
    /// ```
    /// use volley::shard::Shard;
    /// let of2 = |i| Shard::parse(&format!("{i}/2"), None).unwrap();
    /// // Two scenarios of one user each: one each, not both on shard 0.
    /// assert_eq!((of2(0).share_from(0, 1), of2(0).share_from(1, 1)), (1, 0));
    /// assert_eq!((of2(1).share_from(0, 1), of2(1).share_from(1, 1)), (0, 1));
    /// ```
    pub fn share_from(self, from: u64, total: u64) -> u64 {
        self.share(from.saturating_add(total)) - self.share(from)
    }

    /// The index in the whole run of this shard's `k`-th item, from 0.
    pub fn whole_index(self, k: u64) -> u64 {
        k.saturating_mul(u64::from(self.count))
            .saturating_add(u64::from(self.index))
    }
}

impl Default for Shard {
    fn default() -> Shard {
        Shard::WHOLE
    }
}

impl std::fmt::Display for Shard {
    /// `i/N`, as `--shard` takes it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// What keeps a set of shards' results from making a whole run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Incomplete {
    /// Shards of different splits (`1/2` beside `1/3`).
    #[error("shards of different splits ({first} and {other}) do not make one run")]
    MixedCounts {
        /// A shard of one split.
        first: Shard,
        /// A shard of another.
        other: Shard,
    },
    /// A shard given twice.
    #[error("shard {0} is given twice: its part of the plan counts twice")]
    Repeated(Shard),
    /// Shards missing.
    #[error("{} missing: the merged run is not the whole plan", list(.0))]
    Missing(Vec<Shard>),
}

fn list(shards: &[Shard]) -> String {
    let names: Vec<String> = shards.iter().map(|s| format!("shard {s}")).collect();
    let verb = if names.len() == 1 { "is" } else { "are" };
    format!("{} {verb}", names.join(", "))
}

/// Checks that `shards` (the shards of runs to merge) are every part of one split, once each.
/// Runs that were no shard (`None`) are whole runs and not checked.
///
/// ```
/// use volley::shard::{Incomplete, Shard, whole};
///
/// let of3 = |i| Shard::parse(&format!("{i}/3"), None).ok();
/// assert_eq!(whole(&[of3(0), of3(2), of3(1)]), Ok(()));
/// assert_eq!(
///     whole(&[of3(0), of3(2)]).unwrap_err().to_string(),
///     "shard 1/3 is missing: the merged run is not the whole plan"
/// );
/// ```
pub fn whole(shards: &[Option<Shard>]) -> Result<(), Incomplete> {
    let mut found: Vec<Shard> = shards.iter().flatten().copied().collect();
    let Some(&first) = found.first() else {
        return Ok(());
    };
    if let Some(&other) = found.iter().find(|s| s.count != first.count) {
        return Err(Incomplete::MixedCounts { first, other });
    }
    found.sort_unstable();
    if let Some(w) = found.windows(2).find(|w| w[0] == w[1]) {
        return Err(Incomplete::Repeated(w[0]));
    }
    let missing: Vec<Shard> = (0..first.count)
        .filter(|i| found.binary_search_by_key(i, |s| s.index).is_err())
        .map(|index| Shard {
            index,
            count: first.count,
        })
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(Incomplete::Missing(missing))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(arg: &str, job_index: Option<&str>) -> String {
        Shard::parse(arg, job_index).unwrap_err().to_string()
    }

    #[test]
    fn both_forms_parse_and_every_mistake_says_what_is_wrong() {
        let s = Shard::parse("2/3", None).unwrap();
        assert_eq!((s.index(), s.count(), s.is_whole()), (2, 3, false));
        assert_eq!(Shard::parse("3", Some("1")).unwrap().to_string(), "1/3");
        assert_eq!(Shard::parse("0/1", None).unwrap(), Shard::WHOLE);
        // The explicit index wins over the environment's.
        assert_eq!(Shard::parse("0/2", Some("1")).unwrap().index(), 0);

        assert_eq!(
            err("3/3", None),
            "--shard 3/3: the index must be below the count (3 is not below 3)"
        );
        assert_eq!(
            err("3", Some("3")),
            "--shard 3: the index must be below the count (JOB_COMPLETION_INDEX=3 is not below 3)"
        );
        assert_eq!(
            err("0/0", None),
            "--shard 0/0: the count must be a whole number of at least 1"
        );
        assert_eq!(
            err("1/x", None),
            "--shard 1/x: the count must be a whole number of at least 1"
        );
        assert_eq!(
            err("-1/3", None),
            "--shard -1/3: the index must be a whole number from 0"
        );
        assert_eq!(
            err("+1/3", None),
            "--shard +1/3: the index must be a whole number from 0"
        );
        assert!(err("1/2/3", None).starts_with("--shard 1/2/3: give i/N"));
        assert!(err("1/", None).starts_with("--shard 1/: give i/N"));
        assert_eq!(
            err("3", None),
            "--shard 3: JOB_COMPLETION_INDEX is not set (a Kubernetes Indexed Job sets it in \
             each pod); elsewhere give the index: --shard 0/3"
        );
        assert_eq!(
            err("3", Some("two")),
            "--shard 3: JOB_COMPLETION_INDEX=\"two\" is not a whole number from 0"
        );
    }

    /// The shards of a split take every index once: their shares add up to the whole.
    ///
    /// Catches: a share rounded the same way for every shard (10 over 3 as 3 + 3 + 3), an
    /// index mapped back to the whole run off by one shard.
    #[test]
    fn the_shares_of_a_split_add_up_to_the_whole() {
        for count in 1..=5u32 {
            let shards: Vec<Shard> = (0..count)
                .map(|i| Shard::parse(&format!("{i}/{count}"), None).unwrap())
                .collect();
            for total in 0..20u64 {
                let shares: Vec<u64> = shards.iter().map(|s| s.share(total)).collect();
                assert_eq!(shares.iter().sum::<u64>(), total);
                for (s, share) in shards.iter().zip(&shares) {
                    let kept: Vec<u64> = (0..total).filter(|&k| s.keeps(k)).collect();
                    assert_eq!(kept.len() as u64, *share, "{s} of {total}");
                    let mapped: Vec<u64> = (0..*share).map(|k| s.whole_index(k)).collect();
                    assert_eq!(kept, mapped, "{s} of {total}");
                }
            }
        }
        let of3 = |i| Shard::parse(&format!("{i}/3"), None).unwrap();
        assert_eq!(
            [of3(0), of3(1), of3(2)].map(|s| s.share(10)),
            [4, 3, 3],
            "rampUsers: 10 over 3 shards"
        );
    }

    #[test]
    fn a_set_of_shards_is_whole_only_with_every_part_once() {
        let s = |text: &str| Shard::parse(text, None).ok();
        assert_eq!(whole(&[]), Ok(()));
        assert_eq!(whole(&[None, None]), Ok(()), "whole runs side by side");
        assert_eq!(whole(&[s("1/2"), s("0/2")]), Ok(()));
        assert_eq!(
            whole(&[s("0/2"), s("0/3")]).unwrap_err().to_string(),
            "shards of different splits (0/2 and 0/3) do not make one run"
        );
        assert_eq!(
            whole(&[s("0/2"), s("1/2"), s("1/2")])
                .unwrap_err()
                .to_string(),
            "shard 1/2 is given twice: its part of the plan counts twice"
        );
        assert_eq!(
            whole(&[s("1/4")]).unwrap_err().to_string(),
            "shard 0/4, shard 2/4, shard 3/4 are missing: the merged run is not the whole plan"
        );
    }
}
