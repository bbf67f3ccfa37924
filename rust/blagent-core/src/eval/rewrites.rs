//! Evaluation with pre-written query rewrites (`blagent eval --queries`): BLAgent's recorded
//! structural (T0) and behavioral (T1) queries, to compare our retrieval with BLAgent's under the
//! same LLM-written queries.
//!
//! Besides the fused ranking (which uses the rewrites for its dense views), it measures each
//! rewrite's dense ranking alone and BLAgent's candidate pool `unique(T0[:m] ⊕ T1[:m])` capped at
//! [`POOL_CAP`] files: how often it holds a gold file, and how large it is.

use std::collections::HashMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::dataset::read_jsonl;
use crate::dataset::{Metrics, MetricsAccumulator};
use crate::dense::merge_candidates;
use crate::error::Result;
use crate::index::RepoIndex;
use crate::retrieve::{FileSignals, Rewrites, Signal};

/// Most files in a candidate pool (BLAgent's cap).
pub const POOL_CAP: usize = 15;
/// Files taken from each rewrite's ranking into the pool (two halves fill the cap).
pub const POOL_PER_QUERY: usize = 8;

#[derive(Deserialize)]
struct QueryLine {
    instance_id: String,
    #[serde(alias = "t0")]
    structural_t0: String,
    #[serde(alias = "t1")]
    behavioral_t1: String,
}

/// Reads `{"instance_id", "structural_t0", "behavioral_t1"}` lines (`t0` / `t1` accepted too).
pub fn load_rewrites(path: &Path) -> Result<HashMap<String, Rewrites>> {
    Ok(read_jsonl::<QueryLine>(path)?
        .into_iter()
        .map(|row| {
            (
                row.instance_id,
                Rewrites {
                    structural: row.structural_t0,
                    behavioral: row.behavioral_t1,
                },
            )
        })
        .collect())
}

/// Retrieval measured under the given rewrites.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct RewriteReport {
    /// Instances that had rewrites.
    pub instances: usize,
    /// Dense ranking of the structural rewrite alone.
    pub dense_structural: Metrics,
    /// Dense ranking of the behavioral rewrite alone.
    pub dense_behavioral: Metrics,
    /// Share of instances whose pool holds a gold file.
    pub pool_recall: f64,
    /// Mean pool size.
    pub pool_mean_size: f64,
    /// Share of instances with a gold file in the fused ranking's first [`POOL_CAP`] files.
    pub fused_recall_at_cap: f64,
    /// Share of instances whose three-ranking pool holds a gold file: the heads of the fused,
    /// T0 and T1 rankings merged as blagent's BLAgent pipeline merges its candidates
    /// ([`merge_candidates`], at most [`POOL_CAP`]).
    pub hybrid_pool_recall: f64,
    /// Mean size of the three-ranking pool.
    pub hybrid_pool_mean_size: f64,
}

/// One instance's retrieval under its rewrites: what [`RewriteAccumulator`] sums.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RewriteSample {
    /// The dense ranking of the structural rewrite alone (paths, best first).
    pub structural: Vec<String>,
    /// The dense ranking of the behavioral rewrite alone.
    pub behavioral: Vec<String>,
    /// Size of BLAgent's pool of the two.
    pub pool_size: usize,
    /// Whether that pool holds a gold file.
    pub pool_hit: bool,
    /// Size of the three-ranking pool (fused, T0, T1).
    pub hybrid_size: usize,
    /// Whether that pool holds a gold file.
    pub hybrid_hit: bool,
    /// Whether the fused ranking's first [`POOL_CAP`] files hold a gold file.
    pub fused_hit: bool,
}

impl RewriteSample {
    /// Measures one instance from its scored signals (whose dense structural and behavioral
    /// views were queried with the given rewrites), its fused ranking (file indices) and gold
    /// files.
    pub fn measure(
        index: &RepoIndex,
        signals: &[FileSignals],
        fused: &[usize],
        gold: &[String],
    ) -> Self {
        let rank = |signal: Signal| -> Vec<usize> {
            let mut files: Vec<(usize, f32)> = signals
                .iter()
                .enumerate()
                .map(|(f, s)| (f, s.get(signal)))
                .filter(|&(_, v)| v > 0.0)
                .collect();
            files.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            files.into_iter().map(|(f, _)| f).collect()
        };
        let paths = |files: &[usize]| -> Vec<String> {
            files
                .iter()
                .map(|&f| index.files[f].path().to_owned())
                .collect()
        };
        let holds_gold = |files: &[usize]| {
            files
                .iter()
                .any(|&f| gold.iter().any(|g| g == index.files[f].path()))
        };
        let t0 = rank(Signal::DenseStructural);
        let t1 = rank(Signal::DenseBehavioral);
        let pool = merge_candidates(&[&t0, &t1], POOL_PER_QUERY, POOL_CAP);
        let hybrid = merge_candidates(&[fused, &t0, &t1], POOL_PER_QUERY, POOL_CAP);
        RewriteSample {
            structural: paths(&t0),
            behavioral: paths(&t1),
            pool_size: pool.len(),
            pool_hit: holds_gold(&pool),
            hybrid_size: hybrid.len(),
            hybrid_hit: holds_gold(&hybrid),
            fused_hit: holds_gold(&fused[..fused.len().min(POOL_CAP)]),
        }
    }
}

/// Accumulates a [`RewriteReport`].
#[derive(Debug, Default)]
pub struct RewriteAccumulator {
    structural: MetricsAccumulator,
    behavioral: MetricsAccumulator,
    instances: usize,
    pool_hits: usize,
    pool_sizes: usize,
    fused_hits: usize,
    hybrid_hits: usize,
    hybrid_sizes: usize,
}

impl RewriteAccumulator {
    /// Adds one instance's sample, against its gold files.
    pub fn add(&mut self, sample: &RewriteSample, gold: &[String]) {
        self.structural.add(&sample.structural, gold);
        self.behavioral.add(&sample.behavioral, gold);
        self.instances += 1;
        self.pool_sizes += sample.pool_size;
        self.pool_hits += usize::from(sample.pool_hit);
        self.hybrid_sizes += sample.hybrid_size;
        self.hybrid_hits += usize::from(sample.hybrid_hit);
        self.fused_hits += usize::from(sample.fused_hit);
    }

    /// The report.
    pub fn finish(&self) -> RewriteReport {
        let n = self.instances.max(1) as f64;
        RewriteReport {
            instances: self.instances,
            dense_structural: self.structural.finish(),
            dense_behavioral: self.behavioral.finish(),
            pool_recall: self.pool_hits as f64 / n,
            pool_mean_size: self.pool_sizes as f64 / n,
            fused_recall_at_cap: self.fused_hits as f64 / n,
            hybrid_pool_recall: self.hybrid_hits as f64 / n,
            hybrid_pool_mean_size: self.hybrid_sizes as f64 / n,
        }
    }
}
