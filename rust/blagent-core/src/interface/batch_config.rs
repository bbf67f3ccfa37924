//! What a batch run takes and gives: its configuration, its failures and its report.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::localizer::LocalizeOptions;
use super::request::{Granularity, DEFAULT_TOP_K};
use crate::agent::{LlmRun, Pipeline};
use crate::repo::Inputs;

/// What to localize and where to write it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchConfig {
    /// The dataset (JSONL with `instance_id` and `problem_statement`).
    pub dataset: PathBuf,
    /// Directory holding one tree per instance, `<repos>/<instance_id>`.
    pub repos: PathBuf,
    /// The Agentless `loc_outputs.jsonl` to append to.
    pub out: PathBuf,
    /// Where to write this run's failures (JSONL); replaced at each run, empty when none
    /// failed. By default next to `out` ([`BatchConfig::failures_path`]).
    #[serde(default)]
    pub failures_out: Option<PathBuf>,
    /// Only these instances, in dataset order (all when `None`); unknown ids are an input error.
    #[serde(default)]
    pub ids: Option<Vec<String>>,
    /// Localizer options (walk, chunking, weights, dense retrieval).
    #[serde(default)]
    pub options: LocalizeOptions,
    /// Files per instance.
    #[serde(default = "default_top_k")]
    pub top_k: usize,
    /// Files only, or entities too (carried in the `blagent` key).
    #[serde(default)]
    pub granularity: Granularity,
    /// Write related-level lines: blagent's functions of the top files as Agentless's
    /// `found_related_locs`, so Agentless's edit-location stage starts from them (implies
    /// function granularity; see [`AgentlessLine::with_related_locs`]).
    #[serde(default)]
    pub related_locs: bool,
    /// The pipeline that ranks each instance.
    #[serde(default)]
    pub pipeline: Pipeline,
    /// Show progress on stderr.
    #[serde(default)]
    pub progress: bool,
    /// The model and options of the LLM pipelines (none: they fall back to retrieval).
    #[serde(skip)]
    pub llm: Option<LlmRun>,
}

fn default_top_k() -> usize {
    DEFAULT_TOP_K
}

impl BatchConfig {
    /// A batch of every instance of `dataset` into `out`, with the defaults a configuration
    /// read from JSON gets: LLM-free, files only, [`DEFAULT_TOP_K`] files, no progress, and
    /// the failures written next to `out` ([`BatchConfig::failures_path`]).
    pub fn new(dataset: PathBuf, repos: PathBuf, out: PathBuf) -> Self {
        BatchConfig {
            dataset,
            repos,
            failures_out: None,
            out,
            ids: None,
            options: LocalizeOptions::default(),
            top_k: DEFAULT_TOP_K,
            granularity: Granularity::default(),
            related_locs: false,
            pipeline: Pipeline::default(),
            progress: false,
            llm: None,
        }
    }

    /// What the run reads, which no output may be: the dataset, the trees, the prompts.
    pub fn inputs(&self) -> Inputs {
        run_inputs(&self.dataset, &self.repos, self.llm.as_ref())
    }

    /// Where this run's failures go: `failures_out`, or by default next to `out` with
    /// `.failures.jsonl` in place of its `.jsonl` (`loc_outputs.failures.jsonl` for
    /// `loc_outputs.jsonl`; any other name gets the suffix added).
    pub fn failures_path(&self) -> PathBuf {
        if let Some(path) = &self.failures_out {
            return path.clone();
        }
        let name = self
            .out
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = name.strip_suffix(".jsonl").unwrap_or(&name);
        self.out.with_file_name(format!("{stem}.failures.jsonl"))
    }
}

/// The inputs of a run over `dataset`'s trees in `repos` with `llm`: no output of the run may
/// be one of them or lie inside them.
pub(crate) fn run_inputs(dataset: &Path, repos: &Path, llm: Option<&LlmRun>) -> Inputs {
    Inputs::new()
        .file(Some(dataset))
        .folder(Some(repos))
        .folder(llm.and_then(|l| l.options.prompts_dir.as_ref()))
}

/// One instance that produced no line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchFailure {
    /// The instance.
    pub instance_id: String,
    /// `missing_tree`, the error's kind (`input`, `io`, `model`, `llm` or `internal`), or,
    /// from a distributed run, `worker_lost` (the worker died each time it was given the
    /// instance).
    pub kind: String,
    /// What went wrong.
    pub error: String,
}

/// What a batch run did.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct BatchReport {
    /// [`super::SCHEMA_VERSION`].
    pub schema_version: String,
    /// The output file.
    pub out: PathBuf,
    /// The failures file (written only when `failures` is not empty).
    pub failures_out: PathBuf,
    /// Instances selected.
    pub selected: usize,
    /// Instances already in the output, skipped.
    pub resumed: usize,
    /// Lines written by this run.
    pub written: usize,
    /// Instances that failed, in order.
    pub failures: Vec<BatchFailure>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_go_next_to_the_output_unless_named() {
        let config = |out: &str| BatchConfig::new("d.jsonl".into(), "trees".into(), out.into());
        let path = |out: &str| config(out).failures_path();
        assert_eq!(
            path("runs/loc_outputs.jsonl"),
            PathBuf::from("runs/loc_outputs.failures.jsonl")
        );
        // One suffix is replaced, as Python's removesuffix does, and other names get it added.
        assert_eq!(
            path("a.jsonl.jsonl"),
            PathBuf::from("a.jsonl.failures.jsonl")
        );
        assert_eq!(path("out.txt"), PathBuf::from("out.txt.failures.jsonl"));
        let named = BatchConfig {
            failures_out: Some("elsewhere.jsonl".into()),
            ..config("loc_outputs.jsonl")
        };
        assert_eq!(named.failures_path(), PathBuf::from("elsewhere.jsonl"));
    }
}
