//! What an evaluation is given and what it gives: its configuration, each item and its
//! outcome, the prediction lines and the report.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::functions::FunctionReport;
use super::llm::{LlmInstanceStats, LlmTotals};
use super::rewrites::{RewriteReport, RewriteSample};
use crate::dataset::Instance;
use crate::dataset::Metrics;
use crate::dense::DenseStats;
use crate::interface::{DatasetConfig, Granularity};
use crate::retrieve::Rewrites;

/// What to evaluate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    /// The dataset, its trees, the selection, the options, `top_k` (how many files each
    /// prediction lists; the metrics see at least 10), the pipeline, progress and the LLM.
    #[serde(flatten)]
    pub run: DatasetConfig,
    /// Where to write predictions (JSONL), if anywhere.
    #[serde(default)]
    pub out: Option<PathBuf>,
    /// Where to write every candidate file's raw signal scores (JSONL), for tuning the fusion.
    #[serde(default)]
    pub signals_out: Option<PathBuf>,
    /// Pre-written T0/T1 rewrites per instance (JSONL), used for the dense views and measured.
    #[serde(default)]
    pub queries: Option<PathBuf>,
    /// `function`: also score the ranked functions against each instance's gold functions.
    #[serde(default)]
    pub granularity: Granularity,
}

impl EvalConfig {
    /// An evaluation of every instance of `dataset` whose tree is under `repos`, with the
    /// defaults a configuration read from JSON gets: LLM-free, files only, `DEFAULT_TOP_K`
    /// files, nothing written, no progress bar.
    pub fn new(dataset: PathBuf, repos: PathBuf) -> Self {
        EvalConfig {
            run: DatasetConfig::new(dataset, repos),
            out: None,
            signals_out: None,
            queries: None,
            granularity: Granularity::default(),
        }
    }
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
    /// Ranked instances whose gold patch names no file (an empty patch and no `gold_files`):
    /// left out of the file metrics, as `compare` leaves them out.
    #[serde(default)]
    pub no_gold_files: Vec<String>,
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

/// One instance to evaluate, with its place in the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalItem {
    /// Its place among the run's instances (the report adds them up in this order).
    pub position: usize,
    /// The instance.
    pub instance: Instance,
    /// Its pre-written rewrites (`--queries`), if any.
    #[serde(default)]
    pub rewrites: Option<Rewrites>,
}

/// What one instance gave; [`super::EvalSink::record`] adds it to the report.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalOutcome {
    /// The item's position.
    pub position: usize,
    /// The instance.
    pub instance_id: String,
    /// What dense indexing cost (dense retrieval only).
    #[serde(default)]
    pub dense: Option<DenseStats>,
    /// Retrieval under the given rewrites (with rewrites and dense retrieval).
    #[serde(default)]
    pub rewrite: Option<RewriteSample>,
    /// The signal dump line (with `signals_out`).
    #[serde(default)]
    pub signals: Option<serde_json::Value>,
    /// The localization, when it worked.
    #[serde(default)]
    pub evaluated: Option<Evaluated>,
    /// Why it failed, when it did.
    #[serde(default)]
    pub error: Option<String>,
}

/// A localized instance, as the metrics and the prediction line read it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evaluated {
    /// Ranked files, best first (at least the metrics' 10 when the repository has them).
    pub ranked: Vec<String>,
    /// The fused scores of the first `top_k` files.
    pub scores: Vec<f32>,
    /// Milliseconds to index the tree (walk, parse, index, dense).
    pub index_ms: f64,
    /// Milliseconds to answer the query.
    pub query_ms: f64,
    /// What the LLM pipeline cost, with its pipeline and model names (LLM mode only).
    #[serde(default)]
    pub llm: Option<(LlmInstanceStats, String, String)>,
    /// Ranked and gold functions (function granularity only; gold `None` when a patched
    /// file's functions are not known).
    #[serde(default)]
    pub functions: Option<(Vec<String>, Option<Vec<String>>)>,
}
