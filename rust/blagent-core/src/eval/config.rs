//! What an evaluation takes: its configuration, and the instances it selects with their trees.

use std::collections::HashSet;
use std::path::PathBuf;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use serde::Deserialize;

use crate::agent::{LlmRun, Pipeline};
use crate::dataset::{first_of_each_id, instance_tree, load_dataset, Instance};
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
