//! The evaluation loop: every dataset instance whose repository tree exists is localized, its
//! prediction written as a JSONL line, and its ranking scored against the gold files.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;
use std::time::Instant;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::{Deserialize, Serialize};

use super::functions::{gold_functions, ranked_functions, FunctionAccumulator, FunctionReport};
use super::llm::{LlmInstanceStats, LlmTotals};
use super::metrics::{first_hit_rank, Metrics, MetricsAccumulator};
use super::rewrites::{load_rewrites, RewriteAccumulator, RewriteReport};
use crate::agent::{LlmRun, Pipeline};
use crate::dataset::{first_of_each_id, instance_tree, load_dataset, Instance, JsonlWriter};
use crate::dense::DenseStats;
use crate::error::{Error, Result};
use crate::index::RepoIndex;
use crate::interface::{Granularity, LocalizeOptions, LocalizeRequest, Localizer, DEFAULT_TOP_K};
use crate::retrieve::{FileSignals, Signal};

/// Metrics need at least this many ranked files (Acc@10, MAP@10).
const MIN_RANKED_FOR_METRICS: usize = 10;
/// Files per signal kept in a signal dump (the union over signals is dumped).
const DUMP_TOP_PER_SIGNAL: usize = 50;

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

impl DenseTotals {
    fn add(&mut self, stats: &DenseStats) {
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

/// Runs the localizer over the dataset and scores it.
pub fn run_eval(config: &EvalConfig) -> Result<EvalReport> {
    let start = Instant::now();
    let selection = select(&config.dataset, &config.repos, config.ids.as_deref())?;
    let present = selection.present;
    let mut report = EvalReport {
        missing_trees: selection.missing,
        failures: selection.refused,
        ..EvalReport::default()
    };

    let rewrites = config.queries.as_deref().map(load_rewrites).transpose()?;
    let dense_on = config.options.dense.is_some();
    if rewrites.is_some() && !dense_on {
        return Err(Error::InvalidInput(
            "--queries needs --dense (the rewrites are dense queries)".to_owned(),
        ));
    }
    let mut dense_totals = DenseTotals::default();
    let mut rewrite_acc = RewriteAccumulator::default();

    if config.top_k == 0 {
        return Err(Error::InvalidInput("top_k must be at least 1".to_owned()));
    }
    let written_k = config.top_k;
    let ranked_k = config.top_k.max(MIN_RANKED_FOR_METRICS);
    let mut localizer = Localizer::new(config.options.clone())?;
    if let Some(run) = &config.llm {
        localizer = localizer.with_llm(run.clone());
    }
    let mut out = config.out.as_deref().map(JsonlWriter::create).transpose()?;
    let mut signals_out = config
        .signals_out
        .as_deref()
        .map(JsonlWriter::create)
        .transpose()?;

    let bar = progress_bar(present.len(), config.progress)?;
    let mut overall = MetricsAccumulator::default();
    let mut per_repo: BTreeMap<String, MetricsAccumulator> = BTreeMap::new();
    let mut per_language: BTreeMap<String, MetricsAccumulator> = BTreeMap::new();
    let by_function = config.granularity == Granularity::Function;
    let mut functions = FunctionAccumulator::default();
    for (instance, tree) in &present {
        crate::cancel::check()?;
        bar.set_message(instance.instance_id.clone());
        let given = rewrites.as_ref().and_then(|r| r.get(&instance.instance_id));
        let outcome = localizer.index(tree).and_then(|index| {
            if let Some(dense) = &index.dense {
                dense_totals.add(&dense.stats);
            }
            let measure_rewrites = given.is_some() && index.dense.is_some();
            if measure_rewrites || signals_out.is_some() {
                let scored = localizer.score(&index, &instance.problem_statement, given)?;
                if measure_rewrites {
                    let fused: Vec<usize> = scored.ranked.iter().map(|&(f, _)| f).collect();
                    rewrite_acc.add(&index.repo, &scored.signals, &fused, &instance.gold_files);
                }
                if let Some(writer) = signals_out.as_mut() {
                    writer.write(&signal_dump(&index.repo, &scored.signals, instance))?;
                }
            }
            let mut request = LocalizeRequest::new(
                instance.instance_id.clone(),
                tree.clone(),
                instance.problem_statement.clone(),
            );
            request.top_k = ranked_k;
            request.pipeline = config.pipeline;
            request.rewrites = given.cloned();
            request.granularity = config.granularity;
            localizer.localize_in(&index, &request)
        });
        bar.inc(1);
        crate::cancel::check()?;
        let result = match outcome {
            Ok(done) => done,
            Err(err) => {
                report
                    .failures
                    .push((instance.instance_id.clone(), err.to_string()));
                continue;
            }
        };
        let llm = result.llm.as_ref().map(LlmInstanceStats::from);
        if let (Some(stats), Some(report_llm)) = (&llm, &result.llm) {
            let totals = report.llm.get_or_insert_with(|| LlmTotals {
                pipeline: report_llm.pipeline.name().to_owned(),
                model: report_llm.model.clone(),
                ..LlmTotals::default()
            });
            totals.add(stats);
        }
        let ranked = result.paths();
        let function_level = by_function.then(|| {
            let ranked = ranked_functions(result.entities.as_deref().unwrap_or_default());
            let gold = gold_functions(&instance.patch, tree);
            functions.add(instance, &ranked, &gold);
            (ranked, gold)
        });
        overall.add(&ranked, &instance.gold_files);
        per_repo
            .entry(instance.repo.clone())
            .or_default()
            .add(&ranked, &instance.gold_files);
        if !instance.language.is_empty() {
            per_language
                .entry(instance.language.clone())
                .or_default()
                .add(&ranked, &instance.gold_files);
        }
        if let Some(writer) = out.as_mut() {
            let prediction = Prediction {
                instance_id: instance.instance_id.clone(),
                found_files: ranked.iter().take(written_k).cloned().collect(),
                scores: result
                    .files
                    .iter()
                    .take(written_k)
                    .map(|f| f.score)
                    .collect(),
                gold_rank: first_hit_rank(&ranked, &instance.gold_files),
                index_ms: result.timings.walk_ms
                    + result.timings.parse_ms
                    + result.timings.index_ms
                    + result.timings.dense_ms,
                query_ms: result.timings.query_ms,
                llm,
                found_functions: function_level.as_ref().map(|(r, _)| r.clone()),
                gold_functions: function_level.map(|(_, g)| g),
            };
            writer.write(&prediction)?;
        }
    }
    bar.finish_and_clear();
    report.overall = overall.finish();
    report.per_repo = per_repo
        .into_iter()
        .map(|(repo, acc)| (repo, acc.finish()))
        .collect();
    report.per_language = per_language
        .into_iter()
        .map(|(language, acc)| (language, acc.finish()))
        .collect();
    report.seconds = start.elapsed().as_secs_f64();
    if rewrites.is_some() {
        report.rewrites = Some(rewrite_acc.finish());
    }
    if dense_on {
        report.dense = Some(dense_totals);
    }
    if by_function {
        report.functions = Some(functions.finish());
    }
    Ok(report)
}

/// Raw scores of the files that any signal ranks in its top [`DUMP_TOP_PER_SIGNAL`], plus the
/// gold files, for offline tuning of the fusion weights.
fn signal_dump(
    index: &RepoIndex,
    signals: &[FileSignals],
    instance: &Instance,
) -> serde_json::Value {
    let mut keep: HashSet<usize> = HashSet::new();
    for signal in Signal::ALL {
        let mut order: Vec<(usize, f32)> = signals
            .iter()
            .enumerate()
            .map(|(i, s)| (i, s.get(signal)))
            .filter(|&(_, v)| v > 0.0)
            .collect();
        order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        keep.extend(order.iter().take(DUMP_TOP_PER_SIGNAL).map(|&(i, _)| i));
    }
    for (i, file) in index.files.iter().enumerate() {
        if instance.gold_files.iter().any(|g| g == file.path()) {
            keep.insert(i);
        }
    }
    let mut keep: Vec<usize> = keep.into_iter().collect();
    keep.sort_unstable();
    let max: Vec<f32> = Signal::ALL
        .iter()
        .map(|&s| signals.iter().map(|f| f.get(s)).fold(0.0, f32::max))
        .collect();
    let min: Vec<f32> = Signal::ALL
        .iter()
        .map(|&s| {
            let lowest = signals
                .iter()
                .map(|f| f.get(s))
                .filter(|&v| v > 0.0)
                .fold(f32::INFINITY, f32::min);
            if lowest.is_finite() {
                lowest
            } else {
                0.0
            }
        })
        .collect();
    let files: Vec<serde_json::Value> = keep
        .iter()
        .map(|&i| serde_json::json!({"path": index.files[i].path(), "scores": signals[i].scores, "lines": index.files[i].text.lines().count()}))
        .collect();
    serde_json::json!({
        "instance_id": instance.instance_id,
        "repo": instance.repo,
        "gold": instance.gold_files,
        "indexed_files": index.files.len(),
        "max": max,
        "min": min,
        "files": files,
    })
}
