//! The evaluation loop: every dataset instance whose repository tree exists is localized, its
//! prediction written as a JSONL line, and its ranking scored against the gold files. The
//! per-instance work is [`EvalWorker`]'s, the adding up [`EvalSink`]'s (see `worker` and
//! `sink`), so a distributed run (`blagent eval --ray`) shares both.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use super::functions::FunctionReport;
use super::llm::{LlmInstanceStats, LlmTotals};
use super::metrics::Metrics;
use super::rewrites::RewriteReport;
use super::sink::EvalSink;
use super::worker::EvalWorker;
use crate::agent::{LlmRun, Pipeline};
use crate::dataset::{first_of_each_id, instance_tree, load_dataset, Instance};
use crate::dense::DenseStats;
use crate::error::{Error, Result};
use crate::interface::{Granularity, LocalizeOptions, DEFAULT_TOP_K};

/// What to evaluate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EvalConfig {
    /// The dataset (JSONL).
    pub dataset: PathBuf,
    /// Directory holding one tree per instance, `<repos>/<instance_id>`.
    pub repos: PathBuf,
    /// Only these instances (all when `None`).
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Localizer options (walk, chunking, weights, dense retrieval).
    #[serde(default)]
    pub options: LocalizeOptions,
    /// How many files each prediction lists (the metrics see at least 10).
    #[serde(default = "default_top_k")]
    pub top_k: usize,
    /// Where to write predictions (JSONL), if anywhere.
    #[serde(default)]
    pub out: Option<PathBuf>,
    /// Where to write every candidate file's raw signal scores (JSONL), for tuning the fusion.
    #[serde(default)]
    pub signals_out: Option<PathBuf>,
    /// Show a progress bar on stderr (hidden anyway when stderr is not a terminal).
    #[serde(default)]
    pub progress: bool,
    /// Pre-written T0/T1 rewrites per instance (JSONL), used for the dense views and measured.
    #[serde(default)]
    pub queries: Option<PathBuf>,
    /// The pipeline that ranks each instance.
    #[serde(default)]
    pub pipeline: Pipeline,
    /// `function`: also score the ranked functions against each instance's gold functions.
    #[serde(default)]
    pub granularity: Granularity,
    /// The model and options of the LLM pipelines (none: they fall back to retrieval).
    #[serde(skip)]
    pub llm: Option<LlmRun>,
}

fn default_top_k() -> usize {
    DEFAULT_TOP_K
}

impl EvalConfig {
    /// An evaluation of every instance of `dataset` whose tree is under `repos`, with the
    /// defaults a configuration read from JSON gets: LLM-free, files only, [`DEFAULT_TOP_K`]
    /// files, nothing written, no progress bar.
    pub fn new(dataset: PathBuf, repos: PathBuf) -> Self {
        EvalConfig {
            dataset,
            repos,
            ids: None,
            options: LocalizeOptions::default(),
            top_k: DEFAULT_TOP_K,
            out: None,
            signals_out: None,
            progress: false,
            queries: None,
            pipeline: Pipeline::default(),
            granularity: Granularity::default(),
            llm: None,
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

/// The instances of a run: those selected whose tree exists, with it.
pub(super) struct Selection {
    /// Each instance with its tree.
    pub present: Vec<(Instance, PathBuf)>,
    /// Selected instances whose tree was not found.
    pub missing: Vec<String>,
    /// Instances whose id cannot name a tree, with the reason.
    pub refused: Vec<(String, String)>,
}

/// The instances of `dataset` (only `ids` when given, each id once) and their trees under
/// `repos`.
pub(super) fn select(
    dataset: &std::path::Path,
    repos: &std::path::Path,
    ids: Option<&[String]>,
) -> Result<Selection> {
    let mut instances = load_dataset(dataset)?;
    if let Some(ids) = ids {
        let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
        instances.retain(|i| wanted.contains(i.instance_id.as_str()));
    }
    first_of_each_id(&mut instances, |i| &i.instance_id);
    let mut selection = Selection {
        present: Vec::new(),
        missing: Vec::new(),
        refused: Vec::new(),
    };
    for instance in instances {
        match instance_tree(repos, &instance.instance_id) {
            Ok(tree) if tree.is_dir() => selection.present.push((instance, tree)),
            Ok(_) => selection.missing.push(instance.instance_id),
            Err(err) => selection
                .refused
                .push((instance.instance_id, err.to_string())),
        }
    }
    Ok(selection)
}

/// A progress bar over `len` instances, drawn only when `shown`.
pub(super) fn progress_bar(len: usize, shown: bool) -> Result<ProgressBar> {
    let bar = ProgressBar::new(len as u64);
    if shown {
        bar.set_style(
            ProgressStyle::with_template(
                "{bar:30} {pos}/{len} [{elapsed_precise}<{eta_precise}] {msg}",
            )
            .map_err(|e| Error::Internal(e.to_string()))?,
        );
    } else {
        bar.set_draw_target(ProgressDrawTarget::hidden());
    }
    Ok(bar)
}

/// Runs the localizer over the dataset and scores it: an [`EvalWorker`] evaluates each
/// instance in turn and an [`EvalSink`] adds them up.
pub fn run_eval(config: &EvalConfig) -> Result<EvalReport> {
    let start = Instant::now();
    let worker = EvalWorker::new(config)?;
    let mut sink = EvalSink::open(config)?;
    let todo = sink.todo().to_vec();
    for item in &todo {
        crate::cancel::check()?;
        sink.started(&item.instance.instance_id);
        let outcome = worker.evaluate(item)?;
        sink.record(outcome)?;
    }
    let mut report = sink.finish()?;
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}

/// A panic in one instance (injected with [`crate::fault`]) is that instance's failure.
#[cfg(test)]
mod fault_tests {
    use std::fs;
    use std::path::Path;

    use super::{run_eval, EvalConfig};
    use crate::interface::{run_batch, BatchConfig};

    /// Two instances with trees; indexing `panics-here` panics.
    fn setup(dir: &Path) -> (std::path::PathBuf, std::path::PathBuf) {
        let trees = dir.join("trees");
        for id in ["works", "panics-here"] {
            fs::create_dir_all(trees.join(id).join("shop")).unwrap();
            fs::write(
                trees.join(id).join("shop/cart.py"),
                "def total(items):\n    return sum(items)\n",
            )
            .unwrap();
        }
        let dataset = dir.join("d.jsonl");
        let rows: Vec<String> = ["works", "panics-here"]
            .iter()
            .map(|id| {
                serde_json::json!({"instance_id": id, "repo": "a/shop",
                    "problem_statement": "cart total is wrong", "gold_files": ["shop/cart.py"]})
                .to_string()
            })
            .collect();
        fs::write(&dataset, rows.join("\n") + "\n").unwrap();
        crate::fault::panic_in("panics-here");
        (dataset, trees)
    }

    #[test]
    fn a_panic_in_one_instance_is_its_failure_in_batch_and_eval() {
        let dir = tempfile::tempdir().unwrap();
        let (dataset, trees) = setup(dir.path());
        let out = dir.path().join("loc_outputs.jsonl");
        let batch = run_batch(&BatchConfig::new(
            dataset.clone(),
            trees.clone(),
            out.clone(),
        ))
        .expect("the run goes on");
        assert_eq!(batch.written, 1);
        assert_eq!(batch.failures.len(), 1);
        let failure = serde_json::to_value(&batch.failures[0])
            .unwrap()
            .to_string();
        assert!(
            failure.contains("panics-here") && failure.contains("panic"),
            "{failure}"
        );
        assert!(fs::read_to_string(&out).unwrap().contains("\"works\""));

        let eval = run_eval(&EvalConfig::new(dataset, trees)).expect("the run goes on");
        assert_eq!(eval.overall.instances, 1);
        assert_eq!(eval.failures.len(), 1);
        let (id, why) = &eval.failures[0];
        assert_eq!(id, "panics-here");
        assert!(
            why.contains("panic") && why.contains("fault injected"),
            "{why}"
        );
    }
}
