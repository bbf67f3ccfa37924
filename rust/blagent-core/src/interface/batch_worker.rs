//! One instance of a batch into its Agentless line: the per-instance half of a batch run,
//! the same whether [`super::run_batch`] calls it in a loop or a distributed worker calls it
//! for the instances it is given.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::agentless::AgentlessLine;
use super::batch_config::{BatchConfig, BatchFailure};
use super::localizer::Localizer;
use super::request::{Granularity, LocalizeRequest};
use crate::agent::Pipeline;
use crate::dataset::{instance_tree, Instance};
use crate::error::{panic_message, Error, Result};

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

/// Localizes instances of a batch, one at a time, with the batch's localizer and settings.
#[derive(Debug)]
pub struct BatchWorker {
    localizer: Localizer,
    repos: PathBuf,
    top_k: usize,
    granularity: Granularity,
    related_locs: bool,
    pipeline: Pipeline,
}

impl BatchWorker {
    /// A worker for `config`'s batch (its output paths and selection are not used here).
    pub fn new(config: &BatchConfig) -> Result<Self> {
        let mut localizer = Localizer::new(config.options.clone())?;
        if let Some(run) = &config.llm {
            localizer = localizer.with_llm(run.clone());
        }
        Ok(BatchWorker {
            localizer,
            repos: config.repos.clone(),
            top_k: config.top_k,
            granularity: if config.related_locs {
                Granularity::Function
            } else {
                config.granularity
            },
            related_locs: config.related_locs,
            pipeline: config.pipeline,
        })
    }

    /// Localizes `instance` (its tree is `<repos>/<instance_id>`). Every failure of the
    /// instance, a panic included, is in the outcome; the `Err` is only [`Error::Cancelled`]
    /// (an instance cut short by a cancellation has no outcome: its LLM stages fell back) or
    /// a line that cannot be serialized.
    pub fn localize(&self, instance: &Instance) -> Result<BatchOutcome> {
        let begun = Instant::now();
        let id = &instance.instance_id;
        let localized = match instance_tree(&self.repos, id) {
            Err(err) => Err(failure(id, err.kind().name(), err.to_string())),
            Ok(tree) if !tree.is_dir() => Err(failure(
                id,
                "missing_tree",
                format!("no tree at {}", tree.display()),
            )),
            Ok(tree) => {
                let mut request =
                    LocalizeRequest::new(id.clone(), tree, instance.problem_statement.clone());
                request.top_k = self.top_k;
                request.granularity = self.granularity;
                request.pipeline = self.pipeline;
                match catch_unwind(AssertUnwindSafe(|| self.localizer.localize(&request))) {
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
        crate::cancel::check()?;
        let seconds = begun.elapsed().as_secs_f64();
        Ok(match localized {
            Ok(result) => {
                let files = result.files.len();
                let line = if self.related_locs {
                    AgentlessLine::with_related_locs(result)
                } else {
                    AgentlessLine::from_result(result)
                };
                BatchOutcome {
                    instance_id: id.clone(),
                    line: Some(serde_json::to_string(&line)?),
                    failure: None,
                    files,
                    seconds,
                }
            }
            Err(failed) => BatchOutcome::failed(failed, seconds),
        })
    }
}
