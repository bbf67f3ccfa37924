//! The settings every run over a dataset's instances has (a batch, an evaluation, a
//! calibration), written once and flattened into each run's configuration.

use std::path::PathBuf;

use serde::Deserialize;

use super::localizer::LocalizeOptions;
use crate::agent::{LlmRun, Pipeline};
use crate::repo::Inputs;
use crate::retrieve::DEFAULT_TOP_K;

/// The dataset, its trees, the selection and how each instance is localized.
#[derive(Debug, Clone, Deserialize)]
pub struct DatasetConfig {
    /// The dataset (JSONL with `instance_id` and `problem_statement`).
    pub dataset: PathBuf,
    /// Directory holding one tree per instance, `<repos>/<instance_id>`.
    pub repos: PathBuf,
    /// Only these instances, in dataset order (all when `None`).
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Localizer options (walk, chunking, weights, dense retrieval). An object, as every
    /// struct in it: this struct is flattened into each run's, so serde buffers it.
    #[serde(default, deserialize_with = "crate::json::object")]
    pub options: LocalizeOptions,
    /// Files per instance.
    #[serde(default = "default_top_k")]
    pub top_k: usize,
    /// The pipeline that ranks each instance.
    #[serde(default)]
    pub pipeline: Pipeline,
    /// Show progress on stderr (hidden anyway when stderr is not a terminal).
    #[serde(default)]
    pub progress: bool,
    /// The model and options of the LLM pipelines (none: they fall back to retrieval).
    #[serde(skip)]
    pub llm: Option<LlmRun>,
}

fn default_top_k() -> usize {
    DEFAULT_TOP_K
}

impl DatasetConfig {
    /// Every instance of `dataset` whose tree is under `repos`, with the defaults a
    /// configuration read from JSON gets: LLM-free, [`DEFAULT_TOP_K`] files, no progress.
    pub fn new(dataset: PathBuf, repos: PathBuf) -> Self {
        DatasetConfig {
            dataset,
            repos,
            ids: None,
            options: LocalizeOptions::default(),
            top_k: DEFAULT_TOP_K,
            pipeline: Pipeline::default(),
            progress: false,
            llm: None,
        }
    }

    /// What the run reads, which no output may be or lie inside: the dataset, the trees, and
    /// what the LLM side reads ([`LlmRun::inputs`]: prompts, profile, cassette, prices,
    /// tokenizer).
    pub fn inputs(&self) -> Inputs {
        let llm = self.llm.as_ref().map(LlmRun::inputs);
        llm.unwrap_or_default()
            .file(Some(&self.dataset))
            .folder(Some(&self.repos))
    }

    /// Refuses the cassette the run records to (made at its first exchange) where it would be
    /// one of the run's `outputs` or lie among `inputs` (with every instance's tree): checked
    /// with the outputs, before any is created.
    pub fn check_recording(
        &self,
        outputs: &[(&std::path::Path, &str)],
        inputs: &Inputs,
    ) -> crate::error::Result<()> {
        let Some(cassette) = self.llm.as_ref().and_then(|l| l.recording.as_deref()) else {
            return Ok(());
        };
        crate::repo::check_place(cassette, inputs, "cassette")?;
        let mut all = outputs.to_vec();
        all.push((cassette, "--llm-record"));
        crate::repo::check_distinct(&all)
    }
}
