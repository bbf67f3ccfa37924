//! Ranking metrics, as BLAgent and LocAgent report them: MRR (reciprocal rank of the first gold
//! item), Acc@k in both readings papers use when gold has several items (every gold item within
//! the top k, as LocAgent counts; any gold item within it, as SWE-bench papers count) and MAP@k.
//! The items are files, or functions at function level (paths and ids in `eval`; index positions
//! when a fit of the model's trust scores its candidate scales, `agent::trust`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The k of the reported Acc@k.
pub const ACC_KS: [usize; 4] = [1, 3, 5, 10];
/// The k of the reported MAP@k.
pub const MAP_KS: [usize; 3] = [1, 5, 10];

/// 1-based rank of the first ranked item that is gold.
pub fn first_hit_rank<T: PartialEq>(ranked: &[T], gold: &[T]) -> Option<usize> {
    ranked.iter().position(|f| gold.contains(f)).map(|i| i + 1)
}

/// Reciprocal rank of the first gold item; 0 when none is ranked.
pub fn reciprocal_rank<T: PartialEq>(ranked: &[T], gold: &[T]) -> f64 {
    first_hit_rank(ranked, gold).map_or(0.0, |r| 1.0 / r as f64)
}

/// Whether every gold item is within the top `k` (LocAgent's Acc@k); false without gold.
pub fn all_within<T: PartialEq>(ranked: &[T], gold: &[T], k: usize) -> bool {
    let top = &ranked[..ranked.len().min(k)];
    !gold.is_empty() && gold.iter().all(|g| top.contains(g))
}

/// Whether some gold item is within the top `k` (SWE-bench papers' Acc@k).
pub fn any_within<T: PartialEq>(ranked: &[T], gold: &[T], k: usize) -> bool {
    ranked.iter().take(k).any(|f| gold.contains(f))
}

/// Average precision at `k`: the mean of precision@i over the ranks i ≤ k holding a gold file,
/// divided by min(|gold|, k). A gold item ranked twice counts once, at its first rank, so the
/// value never exceeds 1 whatever ranking a run file holds.
pub fn average_precision_at<T: PartialEq>(ranked: &[T], gold: &[T], k: usize) -> f64 {
    if gold.is_empty() || k == 0 {
        return 0.0;
    }
    let mut hits = 0usize;
    let mut sum = 0.0;
    let mut found: Vec<&T> = Vec::new();
    for (i, file) in ranked.iter().take(k).enumerate() {
        if gold.contains(file) && !found.contains(&file) {
            found.push(file);
            hits += 1;
            sum += hits as f64 / (i + 1) as f64;
        }
    }
    sum / gold.len().min(k) as f64
}

/// Aggregated metrics over a set of instances.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// Instances measured.
    pub instances: usize,
    /// Mean reciprocal rank.
    pub mrr: f64,
    /// Acc@1, @3, @5, @10: every gold item within the top k (LocAgent's reading).
    pub acc: [f64; 4],
    /// Acc@1, @3, @5, @10: some gold item within the top k (SWE-bench papers' reading).
    #[serde(default)]
    pub acc_any: [f64; 4],
    /// MAP@1, @5, @10.
    pub map: [f64; 3],
}

/// Sums per-instance values; [`MetricsAccumulator::finish`] averages them.
#[derive(Debug, Clone, Default)]
pub struct MetricsAccumulator {
    sums: Metrics,
}

impl MetricsAccumulator {
    /// Adds one instance's ranking.
    pub fn add(&mut self, ranked: &[String], gold: &[String]) {
        let sums = &mut self.sums;
        sums.instances += 1;
        sums.mrr += reciprocal_rank(ranked, gold);
        for (i, &k) in ACC_KS.iter().enumerate() {
            sums.acc[i] += f64::from(u8::from(all_within(ranked, gold, k)));
            sums.acc_any[i] += f64::from(u8::from(any_within(ranked, gold, k)));
        }
        for (slot, &k) in sums.map.iter_mut().zip(&MAP_KS) {
            *slot += average_precision_at(ranked, gold, k);
        }
    }

    /// The means.
    pub fn finish(&self) -> Metrics {
        let n = self.sums.instances.max(1) as f64;
        Metrics {
            instances: self.sums.instances,
            mrr: self.sums.mrr / n,
            acc: self.sums.acc.map(|v| v / n),
            acc_any: self.sums.acc_any.map(|v| v / n),
            map: self.sums.map.map(|v| v / n),
        }
    }
}

/// Metrics summed over all instances, per repository and per language (for datasets that name
/// each instance's language, as LCA's do); [`GroupedAccumulator::finish`] averages them.
#[derive(Debug, Clone, Default)]
pub struct GroupedAccumulator {
    overall: MetricsAccumulator,
    per_repo: BTreeMap<String, MetricsAccumulator>,
    per_language: BTreeMap<String, MetricsAccumulator>,
}

/// [`GroupedAccumulator`]'s means.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GroupedMetrics {
    /// Over every instance added.
    pub overall: Metrics,
    /// Per `owner/name`.
    pub per_repo: BTreeMap<String, Metrics>,
    /// Per language, where instances name one.
    pub per_language: BTreeMap<String, Metrics>,
}

impl GroupedAccumulator {
    /// Adds one instance's ranking, in `repo` and (when not empty) in `language`.
    pub fn add(&mut self, repo: &str, language: &str, ranked: &[String], gold: &[String]) {
        self.overall.add(ranked, gold);
        self.per_repo
            .entry(repo.to_owned())
            .or_default()
            .add(ranked, gold);
        if !language.is_empty() {
            self.per_language
                .entry(language.to_owned())
                .or_default()
                .add(ranked, gold);
        }
    }

    /// The means, overall and per group.
    pub fn finish(&self) -> GroupedMetrics {
        let means = |groups: &BTreeMap<String, MetricsAccumulator>| {
            groups
                .iter()
                .map(|(name, acc)| (name.clone(), acc.finish()))
                .collect()
        };
        GroupedMetrics {
            overall: self.overall.finish(),
            per_repo: means(&self.per_repo),
            per_language: means(&self.per_language),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| (*s).to_owned()).collect()
    }

    fn assert_close(actual: &[f64], expected: &[f64]) {
        assert_eq!(actual.len(), expected.len());
        for (a, e) in actual.iter().zip(expected) {
            assert!((a - e).abs() < 1e-12, "{actual:?} != {expected:?}");
        }
    }

    #[test]
    fn single_gold_file() {
        let mut acc = MetricsAccumulator::default();
        acc.add(&s(&["a", "b", "c"]), &s(&["b"]));
        acc.add(&s(&["x"]), &s(&["b"]));
        let m = acc.finish();
        assert_eq!(m.instances, 2);
        assert!((m.mrr - 0.25).abs() < 1e-12);
        assert_close(&m.acc, &[0.0, 0.5, 0.5, 0.5]);
        assert!((m.map[0] - 0.0).abs() < 1e-12);
        assert!((m.map[1] - 0.25).abs() < 1e-12);
    }

    #[test]
    fn several_gold_files_need_all_for_accuracy() {
        let ranked = s(&["a", "x", "b"]);
        let gold = s(&["a", "b"]);
        let mut acc = MetricsAccumulator::default();
        acc.add(&ranked, &gold);
        let m = acc.finish();
        assert_close(&m.acc, &[0.0, 1.0, 1.0, 1.0]);
        assert_close(&m.acc_any, &[1.0, 1.0, 1.0, 1.0]);
        // AP@5 = (1/1 + 2/3) / 2.
        assert!(
            (average_precision_at(&ranked, &gold, 5) - f64::midpoint(1.0, 2.0 / 3.0)).abs() < 1e-12
        );
        assert_eq!(first_hit_rank(&ranked, &gold), Some(1));
    }

    #[test]
    fn a_gold_item_ranked_twice_counts_once() {
        let gold = s(&["a::f"]);
        let twice = s(&["a::f", "a::f", "b::g"]);
        assert!((average_precision_at(&twice, &gold, 5) - 1.0).abs() < 1e-12);
        let later = s(&["b::g", "a::f", "a::f"]);
        assert!((average_precision_at(&later, &gold, 5) - 0.5).abs() < 1e-12);
    }
}
