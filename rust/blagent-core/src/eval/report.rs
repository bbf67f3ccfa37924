//! What an evaluation gives: its report and its prediction lines.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::functions::FunctionReport;
use super::llm::{LlmInstanceStats, LlmTotals};
use super::metrics::Metrics;
use super::rewrites::RewriteReport;
use crate::dense::DenseStats;

/// One prediction line.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Prediction {
    /// Instance id.
    pub instance_id: String,
    /// Ranked files, best first (Agentless / LocAgent field name).
    pub found_files: Vec<String>,
    /// Fused score of each found file.
    pub scores: Vec<f32>,
    /// Rank of the first gold file among all ranked files, if ranked.
    pub gold_rank: Option<usize>,
    /// Milliseconds to index the tree.
    pub index_ms: f64,
    /// Milliseconds to answer the query.
    pub query_ms: f64,
    /// What the LLM pipeline cost (LLM mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmInstanceStats>,
    /// Ranked functions, `path::Class.method`, best first (function granularity only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub found_functions: Option<Vec<String>>,
    /// The instance's gold functions (function granularity only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gold_functions: Option<Vec<String>>,
}

/// Metrics overall and per repository, and what could not be evaluated.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct EvalReport {
    /// All evaluated instances.
    pub overall: Metrics,
    /// Per `owner/name`.
    pub per_repo: BTreeMap<String, Metrics>,
    /// Per language, for datasets that name each instance's language (LCA).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub per_language: BTreeMap<String, Metrics>,
    /// Selected instances whose tree was not found.
    pub missing_trees: Vec<String>,
    /// Instances that failed, with the error.
    pub failures: Vec<(String, String)>,
    /// Wall-clock seconds.
    pub seconds: f64,
    /// Retrieval under the pre-written rewrites (with `queries` and `dense`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rewrites: Option<RewriteReport>,
    /// Dense indexing totals (with `dense`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub dense: Option<DenseTotals>,
    /// LLM cost totals and means (LLM mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm: Option<LlmTotals>,
    /// Function-level metrics (function granularity only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub functions: Option<FunctionReport>,
}

/// What dense indexing cost over a run.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize)]
pub struct DenseTotals {
    /// Chunk vectors read from the embedding cache.
    pub cached: usize,
    /// Chunk vectors computed.
    pub embedded: usize,
    /// Vector indexes loaded from disk instead of built.
    pub indexes_loaded: usize,
    /// Seconds spent embedding and building vector indexes.
    pub seconds: f64,
}

impl DenseTotals {
    /// Adds one dense index's cost.
    pub(super) fn add(&mut self, stats: &DenseStats) {
        self.cached += stats.cached;
        self.embedded += stats.embedded;
        self.indexes_loaded += usize::from(stats.index_loaded);
        self.seconds += (stats.embed_ms + stats.index_ms) / 1000.0;
    }
}
