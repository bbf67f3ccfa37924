//! What a batch is given and what it gives: its configuration, each instance's outcome and
//! the run's report.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::dataset_config::DatasetConfig;
use crate::repo::Inputs;
use crate::retrieve::Granularity;

/// What to localize and where to write it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchConfig {
    /// The dataset, its trees, the selection (unknown ids are an input error), the options,
    /// `top_k`, the pipeline, progress and the LLM.
    #[serde(flatten)]
    pub run: DatasetConfig,
    /// The Agentless `loc_outputs.jsonl` to append to.
    pub out: PathBuf,
    /// Where to write this run's failures (JSONL); replaced at each run, empty when none
    /// failed. By default next to `out` ([`BatchConfig::failures_path`]).
    #[serde(default)]
    pub failures_out: Option<PathBuf>,
    /// Files only, or entities too (carried in the `blagent` key).
    #[serde(default)]
    pub granularity: Granularity,
    /// Write related-level lines: blagent's functions of the top files as Agentless's
    /// `found_related_locs`, so Agentless's edit-location stage starts from them (implies
    /// function granularity; see [`super::AgentlessLine::with_related_locs`]).
    #[serde(default)]
    pub related_locs: bool,
}

impl BatchConfig {
    /// A batch of every instance of `dataset` into `out`, with the defaults a configuration
    /// read from JSON gets: LLM-free, files only, `DEFAULT_TOP_K` files, no progress, and
    /// the failures written next to `out` ([`BatchConfig::failures_path`]).
    pub fn new(dataset: PathBuf, repos: PathBuf, out: PathBuf) -> Self {
        BatchConfig {
            run: DatasetConfig::new(dataset, repos),
            failures_out: None,
            out,
            granularity: Granularity::default(),
            related_locs: false,
        }
    }

    /// The granularity the run asks for: functions with `related_locs`, which needs them.
    pub fn asked_granularity(&self) -> Granularity {
        if self.related_locs {
            Granularity::Function
        } else {
            self.granularity
        }
    }

    /// What the run reads, which no output may be: the dataset, the trees, the prompts.
    pub fn inputs(&self) -> Inputs {
        self.run.inputs()
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
    /// [`SCHEMA_VERSION`].
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
    /// Lines of this run where a stage of the LLM pipeline fell back to retrieval (the model
    /// unreachable, unknown to a cassette, or its answers invalid).
    #[serde(default)]
    pub llm_fell_back: usize,
    /// The first fallback of the first such line, as its `warnings` say it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_first_fallback: Option<String>,
    /// Wall-clock seconds.
    pub seconds: f64,
}

/// What localizing one instance of a batch gave: its line, or why it has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchOutcome {
    /// The instance.
    pub instance_id: String,
    /// The `loc_outputs.jsonl` line as it is written (JSON text, no newline), when it worked.
    pub line: Option<String>,
    /// Why the instance has no line, when it failed.
    pub failure: Option<BatchFailure>,
    /// Files in the line.
    pub files: usize,
    /// The LLM pipeline's fallbacks in this line, if any.
    #[serde(default)]
    pub llm_fallbacks: Vec<String>,
    /// Seconds the instance took.
    pub seconds: f64,
}

impl BatchOutcome {
    /// The outcome of an instance that failed.
    pub fn failed(failure: BatchFailure, seconds: f64) -> Self {
        BatchOutcome {
            instance_id: failure.instance_id.clone(),
            line: None,
            failure: Some(failure),
            files: 0,
            llm_fallbacks: Vec::new(),
            seconds,
        }
    }
}

/// A failure record.
pub(super) fn failure(instance_id: &str, kind: &str, error: impl Into<String>) -> BatchFailure {
    BatchFailure {
        instance_id: instance_id.to_owned(),
        kind: kind.to_owned(),
        error: error.into(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

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

    /// Found by a review: the run's options are flattened into the configuration, so serde
    /// buffered them out of the strict reading's reach, and a tagged enum reads from a list.
    #[test]
    fn the_options_of_a_run_are_objects_at_every_depth() {
        let with = |options: &str| {
            format!(
                r#"{{"dataset": "d.jsonl", "repos": "r", "out": "o.jsonl", "options": {options}}}"#
            )
        };
        for options in [
            "[]",
            "[[[], [], [1.2, 0.75], 0]]",
            r#"{"index": []}"#,
            r#"{"dense": {"model_dir": "m", "kind": ["hnsw", 16]}}"#,
        ] {
            let err = crate::json::from_object::<BatchConfig>(&with(options))
                .expect_err(options)
                .to_string();
            assert!(
                err.contains("expected a JSON object, found an array"),
                "{options}: {err}"
            );
        }
        let read: BatchConfig = crate::json::from_object(&with(
            r#"{"index": {}, "dense": {"model_dir": "m", "kind": {"kind": "hnsw", "m": 16}}}"#,
        ))
        .unwrap();
        let dense = read.run.options.dense.expect("dense options");
        assert_eq!(dense.kind, crate::dense::VectorIndexKind::Hnsw { m: 16 });
        let read: BatchConfig = crate::json::from_object(&with("{}")).unwrap();
        assert!(read.run.options.dense.is_none());
    }
}
