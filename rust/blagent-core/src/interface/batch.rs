//! Localizing many instances into one Agentless `loc_outputs.jsonl`: resumable (instances
//! already in the output are skipped), one line flushed per instance, and a failing instance
//! recorded and passed over, never losing the others.

use std::collections::HashSet;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::agentless::AgentlessLine;
use super::localizer::{LocalizeOptions, Localizer};
use super::progress::Progress;
use super::request::{Granularity, LocalizeRequest, DEFAULT_TOP_K};
use super::resume::{existing_ids, panic_message};
use super::SCHEMA_VERSION;
use crate::agent::{LlmRun, Pipeline};
use crate::dataset::{first_of_each_id, instance_tree, load_dataset, JsonlWriter};
use crate::error::{Error, Result};

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
    /// Where to write this run's failures (JSONL); replaced at each run, absent when none failed.
    pub failures_out: PathBuf,
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

/// One instance that produced no line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BatchFailure {
    /// The instance.
    pub instance_id: String,
    /// `missing_tree`, or the error's kind: `input`, `io`, `model`, `llm` or `internal`.
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
    /// Wall-clock seconds.
    pub seconds: f64,
}

fn failure(instance_id: &str, kind: &str, error: impl Into<String>) -> BatchFailure {
    BatchFailure {
        instance_id: instance_id.to_owned(),
        kind: kind.to_owned(),
        error: error.into(),
    }
}

/// Runs the batch (see the module documentation). Per-instance failures are in the report;
/// an `Err` means the run could not start or could not write its output.
pub fn run_batch(config: &BatchConfig) -> Result<BatchReport> {
    let start = Instant::now();
    let mut instances = load_dataset(&config.dataset)?;
    if let Some(ids) = &config.ids {
        let known: HashSet<&str> = instances.iter().map(|i| i.instance_id.as_str()).collect();
        let unknown: Vec<&str> = ids
            .iter()
            .map(String::as_str)
            .filter(|id| !known.contains(id))
            .collect();
        if !unknown.is_empty() {
            return Err(Error::InvalidInput(format!(
                "{} selected id(s) not in {}: {}",
                unknown.len(),
                config.dataset.display(),
                unknown
                    .iter()
                    .take(5)
                    .copied()
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let wanted: HashSet<&str> = ids.iter().map(String::as_str).collect();
        instances.retain(|i| wanted.contains(i.instance_id.as_str()));
    }
    first_of_each_id(&mut instances, |i| &i.instance_id);
    let mut localizer = Localizer::new(config.options.clone())?;
    if let Some(run) = &config.llm {
        localizer = localizer.with_llm(run.clone());
    }

    let (done, truncated) = existing_ids(&config.out)?;
    let mut out = JsonlWriter::append(&config.out)?;
    match std::fs::remove_file(&config.failures_out) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(Error::io(&config.failures_out, e))
        }
        _ => {}
    }
    let mut failures_file: Option<JsonlWriter> = None;

    let mut report = BatchReport {
        schema_version: SCHEMA_VERSION.to_owned(),
        out: config.out.clone(),
        failures_out: config.failures_out.clone(),
        selected: instances.len(),
        ..BatchReport::default()
    };
    let todo: Vec<_> = instances
        .into_iter()
        .filter(|i| !done.contains(&i.instance_id))
        .collect();
    report.resumed = report.selected - todo.len();
    let mut progress = Progress::new(config.progress, todo.len() as u64);
    if truncated {
        progress.note(&format!(
            "{}: dropped an incomplete last line (an interrupted write)",
            config.out.display()
        ));
    }
    if report.resumed > 0 {
        progress.note(&format!(
            "resuming: {} of {} instances already in {}",
            report.resumed,
            report.selected,
            config.out.display()
        ));
    }
    for instance in &todo {
        crate::cancel::check()?;
        let id = &instance.instance_id;
        progress.start(id);
        let begun = Instant::now();
        let outcome = match instance_tree(&config.repos, id) {
            Err(err) => Err(failure(id, err.kind().name(), err.to_string())),
            Ok(tree) if !tree.is_dir() => Err(failure(
                id,
                "missing_tree",
                format!("no tree at {}", tree.display()),
            )),
            Ok(tree) => {
            let mut request =
                LocalizeRequest::new(id.clone(), tree, instance.problem_statement.clone());
            request.top_k = config.top_k;
            request.granularity = if config.related_locs {
                Granularity::Function
            } else {
                config.granularity
            };
            request.pipeline = config.pipeline;
            match catch_unwind(AssertUnwindSafe(|| localizer.localize(&request))) {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(Error::Cancelled)) => return Err(Error::Cancelled),
                Ok(Err(err)) => Err(failure(id, err.kind().name(), err.to_string())),
                Err(panic) => Err(failure(
                    id,
                    "internal",
                    format!("internal error (panic): {}", panic_message(&*panic)),
                )),
            }
            }
        };
        // An instance cut short by a cancellation (its LLM stages fell back) is not written.
        crate::cancel::check()?;
        match outcome {
            Ok(result) => {
                let files = result.files.len();
                out.write(&if config.related_locs {
                    AgentlessLine::with_related_locs(result)
                } else {
                    AgentlessLine::from_result(result)
                })?;
                report.written += 1;
                progress.finish_one(
                    id,
                    &format!("{files} files, {:.2} s", begun.elapsed().as_secs_f64()),
                );
            }
            Err(failed) => {
                if failures_file.is_none() {
                    failures_file = Some(JsonlWriter::create(&config.failures_out)?);
                }
                if let Some(writer) = failures_file.as_mut() {
                    writer.write(&failed)?;
                }
                progress.finish_one(id, &format!("FAILED ({}): {}", failed.kind, failed.error));
                report.failures.push(failed);
            }
        }
    }
    progress.finish();
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}
