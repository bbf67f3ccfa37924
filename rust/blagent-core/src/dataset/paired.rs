//! Paired statistics of two runs' per-instance scores (the baseline's and another's), as
//! `compare` reports them and as scipy computes them (the tests pin scipy's values):
//!
//! - a paired bootstrap 95% interval of the difference of means (instances resampled with
//!   replacement, a seeded generator, percentile interval);
//! - McNemar's exact test on a binary outcome: a two-sided binomial test on the discordant
//!   instances;
//! - Wilcoxon's signed-rank test: zero differences dropped, average ranks for ties, the normal
//!   approximation with tie and continuity corrections (`wilcoxon(..., correction=True,
//!   method="approx")`).

use rand::rngs::StdRng;
use rand::Rng;
use serde::{Deserialize, Serialize};

/// Bootstrap resamples when a comparison or a calibration names none.
pub const DEFAULT_RESAMPLES: usize = 10_000;

/// A difference with its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The observed difference (run minus baseline).
    pub delta: f64,
    /// 2.5th percentile of the resampled differences.
    pub low: f64,
    /// 97.5th percentile.
    pub high: f64,
}

/// McNemar's exact test on a binary outcome.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct McNemar {
    /// Instances only the baseline gets right.
    pub baseline_only: usize,
    /// Instances only the run gets right.
    pub run_only: usize,
    /// Two-sided p-value.
    pub p: f64,
}

/// Wilcoxon's signed-rank test.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Wilcoxon {
    /// Instances whose values differ.
    pub nonzero: usize,
    /// Sum of the ranks where the run is higher.
    pub w_plus: f64,
    /// The normal approximation's statistic.
    pub z: f64,
    /// Two-sided p-value.
    pub p: f64,
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Paired bootstrap of mean(other) − mean(base) for each series, all on the same resamples;
/// Ctrl-C ([`crate::cancel`]) is heard between resamples.
pub(crate) fn bootstrap(
    series: &[(Vec<f64>, Vec<f64>)],
    resamples: usize,
    rng: &mut StdRng,
) -> crate::error::Result<Vec<Interval>> {
    let n = series.first().map_or(0, |s| s.0.len());
    let deltas: Vec<Vec<f64>> = series
        .iter()
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| y - x).collect())
        .collect();
    let mut samples: Vec<Vec<f64>> = vec![Vec::with_capacity(resamples); series.len()];
    if n > 0 {
        for _ in 0..resamples {
            crate::cancel::check()?;
            let mut sums = vec![0.0; series.len()];
            for _ in 0..n {
                let i = rng.random_range(0..n);
                for (sum, d) in sums.iter_mut().zip(&deltas) {
                    *sum += d[i];
                }
            }
            for (sample, sum) in samples.iter_mut().zip(sums) {
                sample.push(sum / n as f64);
            }
        }
    }
    Ok(deltas
        .iter()
        .zip(samples)
        .map(|(d, mut s)| {
            s.sort_by(f64::total_cmp);
            let at = |q: f64| {
                if s.is_empty() {
                    mean(d)
                } else {
                    s[((q * (s.len() - 1) as f64).round() as usize).min(s.len() - 1)]
                }
            };
            Interval {
                delta: mean(d),
                low: at(0.025),
                high: at(0.975),
            }
        })
        .collect())
}

/// McNemar's exact test: P(X ≤ min(b, c)) × 2 for X ~ Binomial(b + c, ½), at most 1.
pub(crate) fn mcnemar(base: &[f64], other: &[f64]) -> McNemar {
    let (mut b, mut c) = (0usize, 0usize);
    for (&x, &y) in base.iter().zip(other) {
        match (x > 0.5, y > 0.5) {
            (true, false) => b += 1,
            (false, true) => c += 1,
            _ => {}
        }
    }
    exact_binomial(b, c)
}

/// The exact sign test on paired values: the instances where `base` is higher (b) against
/// those where `other` is (c), ties (within 1e-12) left out, tested as [`mcnemar`] tests its
/// counts. It asks only which side wins, so a few large differences cannot make it
/// significant the way they can a bootstrap interval on a few instances.
pub(crate) fn sign_test(base: &[f64], other: &[f64]) -> McNemar {
    let (mut b, mut c) = (0usize, 0usize);
    for (&x, &y) in base.iter().zip(other) {
        if (y - x).abs() > 1e-12 {
            if x > y {
                b += 1;
            } else {
                c += 1;
            }
        }
    }
    exact_binomial(b, c)
}

/// P(X ≤ min(b, c)) × 2 for X ~ Binomial(b + c, ½), at most 1, with the counts.
fn exact_binomial(b: usize, c: usize) -> McNemar {
    let n = b + c;
    let tail: f64 = (0..=b.min(c))
        .map(|k| (ln_choose(n, k) - n as f64 * std::f64::consts::LN_2).exp())
        .sum();
    McNemar {
        baseline_only: b,
        run_only: c,
        p: (2.0 * tail).min(1.0),
    }
}

fn ln_choose(n: usize, k: usize) -> f64 {
    let lgamma = |x: f64| libm::lgamma(x);
    lgamma(n as f64 + 1.0) - lgamma(k as f64 + 1.0) - lgamma((n - k) as f64 + 1.0)
}

/// Wilcoxon's signed-rank test on `other − base` (zeros dropped, average ranks for ties,
/// normal approximation with tie and continuity corrections).
pub(crate) fn wilcoxon(base: &[f64], other: &[f64]) -> Wilcoxon {
    const EPS: f64 = 1e-12;
    let mut diffs: Vec<f64> = base
        .iter()
        .zip(other)
        .map(|(x, y)| y - x)
        .filter(|v| v.abs() > EPS)
        .collect();
    let count = diffs.len();
    if count == 0 {
        return Wilcoxon {
            nonzero: 0,
            w_plus: 0.0,
            z: 0.0,
            p: 1.0,
        };
    }
    diffs.sort_by(|a, b| a.abs().total_cmp(&b.abs()));
    let (mut w_plus, mut tie_correction, mut start) = (0.0, 0.0, 0);
    while start < count {
        let mut end = start;
        while end + 1 < count && (diffs[end + 1].abs() - diffs[start].abs()).abs() <= EPS {
            end += 1;
        }
        let rank = (start + end) as f64 / 2.0 + 1.0;
        let tied = (end - start + 1) as f64;
        tie_correction += tied * tied * tied - tied;
        w_plus += diffs[start..=end].iter().filter(|v| **v > 0.0).count() as f64 * rank;
        start = end + 1;
    }
    let size = count as f64;
    let expected = size * (size + 1.0) / 4.0;
    let variance = size * (size + 1.0) * (2.0 * size + 1.0) / 24.0 - tie_correction / 48.0;
    let offset = w_plus - expected;
    let corrected = (offset.abs() - 0.5).max(0.0) * offset.signum();
    let z = if variance > 0.0 {
        corrected / variance.sqrt()
    } else {
        0.0
    };
    Wilcoxon {
        nonzero: count,
        w_plus,
        z,
        p: libm::erfc(z.abs() / std::f64::consts::SQRT_2).min(1.0),
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn mcnemar_matches_the_binomial_test() {
        // 10 discordant pairs split 2 / 8: 2 × P(X ≤ 2), X ~ Bin(10, ½) = 2 × 56/1024 (scipy's
        // binomtest(2, 10, 0.5) gives 0.109375).
        let base = [vec![1.0; 2], vec![0.0; 8], vec![1.0; 5]].concat();
        let other = [vec![0.0; 2], vec![1.0; 8], vec![1.0; 5]].concat();
        let m = mcnemar(&base, &other);
        assert_eq!((m.baseline_only, m.run_only), (2, 8));
        assert!((m.p - 112.0 / 1024.0).abs() < 1e-12, "{}", m.p);
        assert!((mcnemar(&base, &base).p - 1.0).abs() < 1e-12);
    }

    #[test]
    fn wilcoxon_matches_scipy_with_ties_and_correction() {
        // scipy 1.x: wilcoxon(y - x, correction=True, method="approx") gives statistic
        // min(W+, W-) = 6.0, z = -1.92096072, p = 0.05473666; with alternative="greater",
        // W+ = 39.0.
        let x = [0.0; 9];
        let y = [1.0, 0.5, 0.5, 1.0, -0.5, 0.25, 1.0, -0.25, 0.5];
        let w = wilcoxon(&x, &y);
        assert_eq!(w.nonzero, 9);
        assert!((w.w_plus - 39.0).abs() < 1e-9, "{}", w.w_plus);
        assert!((w.z.abs() - 1.920_960_72).abs() < 1e-6, "{}", w.z);
        assert!((w.p - 0.054_736_66).abs() < 1e-6, "{}", w.p);
        let none = wilcoxon(&x, &x);
        assert_eq!((none.nonzero, none.p), (0, 1.0));
    }

    #[test]
    fn the_bootstrap_interval_holds_the_observed_difference_and_is_reproducible() {
        let base: Vec<f64> = (0..50).map(|i| f64::from(i % 2)).collect();
        let other: Vec<f64> = (0..50).map(|i| f64::from(u8::from(i % 5 != 0))).collect();
        let pair = (base, other);
        let run = |seed| {
            bootstrap(
                std::slice::from_ref(&pair),
                2000,
                &mut StdRng::seed_from_u64(seed),
            )
            .unwrap()[0]
        };
        let a = run(7);
        assert!((a.delta - 0.3).abs() < 1e-12);
        assert!(a.low < a.delta && a.delta < a.high, "{a:?}");
        assert_eq!(a, run(7));
    }
}
