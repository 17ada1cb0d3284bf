//! [`Snapshot`]: statistics over a reservoir's weighted samples, as DropWizard's
//! `WeightedSnapshot` computes them.
//!
//! A decaying reservoir keeps each sample with a weight (recent samples weigh more). The
//! snapshot sorts the samples by value, normalizes the weights to sum to 1, and gives each
//! sample the cumulative weight of the samples below it. A quantile is then the value of the
//! last sample whose cumulative weight is at most the quantile (a binary search), and the mean
//! and standard deviation are weighted. This is not a plain percentile of the values: a sample
//! from five minutes ago counts for less than one from now.

use thiserror::Error;

/// A quantile outside `[0, 1]` (or NaN) was asked of a [`Snapshot`].
#[derive(Debug, Clone, Copy, PartialEq, Error)]
#[error("quantile {0} is not in [0, 1]")]
pub struct InvalidQuantile(pub f64);

/// A histogram's or timer's distribution at one moment: count, min, max, weighted mean and
/// standard deviation, and quantiles.
///
/// Statistics are in the histogram's units (nanoseconds for a timer). Histograms fed through
/// the `metrics` facade store fixed-point integers; their snapshots divide that back out, so
/// their statistics are in the units that were recorded.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// Sorted ascending.
    values: Vec<i64>,
    norm_weights: Vec<f64>,
    /// `quantiles[i]`: the normalized weight of every sample before `i`.
    quantiles: Vec<f64>,
    count: u64,
    divisor: f64,
}

impl Snapshot {
    /// A snapshot of `(value, weight)` samples in any order, DropWizard's
    /// `new WeightedSnapshot(samples)`. Its [`count`](Snapshot::count) is the number of samples.
    pub fn from_weighted(samples: impl IntoIterator<Item = (i64, f64)>) -> Self {
        let mut samples: Vec<(i64, f64)> = samples.into_iter().collect();
        // Stable, as Java's object sort: equal values keep their order.
        samples.sort_by_key(|&(value, _)| value);
        let sum_weight: f64 = samples.iter().map(|&(_, w)| w).sum();
        let values: Vec<i64> = samples.iter().map(|&(v, _)| v).collect();
        // A zero total would make every weight NaN or infinite; DropWizard uses 0 instead.
        let norm_weights: Vec<f64> = samples
            .iter()
            .map(|&(_, w)| {
                if sum_weight != 0.0 {
                    w / sum_weight
                } else {
                    0.0
                }
            })
            .collect();
        let mut quantiles = vec![0.0; values.len()];
        for i in 1..quantiles.len() {
            quantiles[i] = quantiles[i - 1] + norm_weights[i - 1];
        }
        Self {
            count: values.len() as u64,
            values,
            norm_weights,
            quantiles,
            divisor: 1.0,
        }
    }

    /// The same samples, reporting `count` values recorded in all (a reservoir keeps a subset).
    pub(crate) fn with_count(mut self, count: u64) -> Self {
        self.count = count;
        self
    }

    /// The same samples, stored as fixed-point integers: every statistic is divided by
    /// `divisor`.
    pub(crate) fn with_divisor(mut self, divisor: f64) -> Self {
        self.divisor = divisor;
        self
    }

    /// How many values were recorded in all (not only those the reservoir kept).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// How many samples the snapshot holds (at most the reservoir's size).
    pub fn size(&self) -> usize {
        self.values.len()
    }

    /// The samples' stored values, ascending (fixed-point integers for a facade histogram).
    pub fn values(&self) -> &[i64] {
        &self.values
    }

    /// The value at `quantile` (0.5 is the median); 0 for an empty snapshot.
    pub fn value(&self, quantile: f64) -> Result<f64, InvalidQuantile> {
        if !(0.0..=1.0).contains(&quantile) {
            return Err(InvalidQuantile(quantile));
        }
        Ok(self.at(quantile))
    }

    /// The value at a quantile known to be in `[0, 1]`.
    fn at(&self, quantile: f64) -> f64 {
        self.scaled(self.raw_at(quantile))
    }

    fn raw_at(&self, quantile: f64) -> i64 {
        let Some(&last) = self.values.last() else {
            return 0;
        };
        let pos: isize = match java_binary_search(&self.quantiles, quantile) {
            Ok(found) => found as isize,
            // Not found: the sample before the insertion point.
            Err(insertion) => insertion as isize - 1,
        };
        if pos < 1 {
            self.values[0]
        } else {
            self.values.get(pos as usize).copied().unwrap_or(last)
        }
    }

    /// The median.
    pub fn median(&self) -> f64 {
        self.at(0.5)
    }

    /// The 75th percentile.
    pub fn p75(&self) -> f64 {
        self.at(0.75)
    }

    /// The 95th percentile.
    pub fn p95(&self) -> f64 {
        self.at(0.95)
    }

    /// The 98th percentile.
    pub fn p98(&self) -> f64 {
        self.at(0.98)
    }

    /// The 99th percentile.
    pub fn p99(&self) -> f64 {
        self.at(0.99)
    }

    /// The 99.9th percentile.
    pub fn p999(&self) -> f64 {
        self.at(0.999)
    }

    /// The smallest sample; 0 for an empty snapshot.
    pub fn min(&self) -> f64 {
        self.scaled(self.raw_min())
    }

    /// The largest sample; 0 for an empty snapshot.
    pub fn max(&self) -> f64 {
        self.scaled(self.raw_max())
    }

    /// The smallest stored value, unscaled (DropWizard's JSON writes min and max as integers).
    pub(crate) fn raw_min(&self) -> i64 {
        self.values.first().copied().unwrap_or(0)
    }

    /// The largest stored value, unscaled.
    pub(crate) fn raw_max(&self) -> i64 {
        self.values.last().copied().unwrap_or(0)
    }

    /// Whether statistics are the stored integers themselves (not fixed-point).
    pub(crate) fn is_integral(&self) -> bool {
        self.divisor == 1.0
    }

    /// The weighted mean; 0 for an empty snapshot.
    pub fn mean(&self) -> f64 {
        self.raw_mean() / self.divisor
    }

    fn raw_mean(&self) -> f64 {
        self.values
            .iter()
            .zip(&self.norm_weights)
            .map(|(&v, &w)| v as f64 * w)
            .sum()
    }

    /// The weighted standard deviation; 0 for fewer than two samples.
    pub fn stddev(&self) -> f64 {
        if self.values.len() <= 1 {
            return 0.0;
        }
        let mean = self.raw_mean();
        let variance: f64 = self
            .values
            .iter()
            .zip(&self.norm_weights)
            .map(|(&v, &w)| {
                let diff = v as f64 - mean;
                w * diff * diff
            })
            .sum();
        variance.sqrt() / self.divisor
    }

    fn scaled(&self, raw: i64) -> f64 {
        raw as f64 / self.divisor
    }
}

/// `java.util.Arrays.binarySearch(double[], double)`, step for step.
///
/// Written out rather than using `slice::binary_search_by` because with equal cumulative
/// weights (zero-weight samples) several indices match and the two pick differently; matching
/// Java's choice keeps quantiles identical to DropWizard's.
fn java_binary_search(sorted: &[f64], key: f64) -> Result<usize, usize> {
    // Java's indices, `high` inclusive and allowed to reach -1.
    let mut low: isize = 0;
    let mut high: isize = sorted.len() as isize - 1;
    while low <= high {
        let mid = (low + high) / 2;
        let mid_val = sorted[mid as usize];
        if mid_val < key {
            low = mid + 1;
        } else if mid_val > key {
            high = mid - 1;
        } else {
            let (mid_bits, key_bits) = (java_bits(mid_val), java_bits(key));
            if mid_bits == key_bits {
                return Ok(mid as usize);
            } else if mid_bits < key_bits {
                low = mid + 1;
            } else {
                high = mid - 1;
            }
        }
    }
    Err(low as usize)
}

/// `Double.doubleToLongBits`: the bits as a signed integer, every NaN collapsed to one.
fn java_bits(x: f64) -> i64 {
    if x.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        x.to_bits() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_search_matches_java_on_duplicates() {
        // Java: low=0 high=4 → mid=2 (0.5 == 0.5) → 2.
        assert_eq!(java_binary_search(&[0.0, 0.5, 0.5, 0.5, 1.0], 0.5), Ok(2));
        // Java: low=0 high=3 → mid=1 (0.5 == 0.5) → 1; an exclusive-bound search would say 2.
        assert_eq!(java_binary_search(&[0.0, 0.5, 0.5, 0.5], 0.5), Ok(1));
        assert_eq!(java_binary_search(&[0.0, 0.2, 0.5], 0.3), Err(2));
        assert_eq!(java_binary_search(&[0.0, 0.2, 0.5], -1.0), Err(0));
        assert_eq!(java_binary_search(&[0.0, 0.2, 0.5], 9.0), Err(3));
        assert_eq!(java_binary_search(&[], 0.5), Err(0));
    }

    #[test]
    fn scaled_snapshots_divide_every_statistic() {
        let s = Snapshot::from_weighted([(1_500_000, 1.0), (2_500_000, 1.0)]).with_divisor(1e6);
        assert_eq!(s.min(), 1.5);
        assert_eq!(s.max(), 2.5);
        assert_eq!(s.mean(), 2.0);
        assert_eq!(s.stddev(), 0.5);
        assert_eq!(s.median(), 2.5);
        assert!(!s.is_integral());
    }
}
