//! One instance of a batch into its Agentless line: the per-instance half of a batch run,
//! the same whether [`super::run_batch`] calls it in a loop or a distributed worker calls it
//! for the instances it is given.

use std::path::PathBuf;
use std::time::Instant;

use super::agentless::AgentlessLine;
use super::batch_types::{failure, BatchConfig, BatchOutcome};
use super::localizer::Localizer;
use super::request::LocalizeRequest;
use crate::agent::Pipeline;
use crate::dataset::{instance_tree, Instance};
use crate::error::{Error, Result};
use crate::retrieve::Ask;

/// Localizes instances of a batch, one at a time, with the batch's localizer and settings.
#[derive(Debug)]
pub struct BatchWorker {
    localizer: Localizer,
    repos: PathBuf,
    ask: Ask,
    related_locs: bool,
    pipeline: Pipeline,
    /// What each line records of the localizer's settings (`blagent_settings`).
    settings: serde_json::Value,
}

impl BatchWorker {
    /// A worker for `config`'s batch (its output paths and selection are not used here).
    pub fn new(config: &BatchConfig) -> Result<Self> {
        let mut localizer = Localizer::new(config.run.options.clone())?;
        if let Some(run) = &config.run.llm {
            localizer = localizer.with_llm(run.clone());
        }
        Ok(BatchWorker {
            localizer,
            repos: config.run.repos.clone(),
            ask: Ask::new(config.run.top_k, config.asked_granularity())?,
            related_locs: config.related_locs,
            pipeline: config.run.pipeline,
            settings: super::resume::line_settings(&config.run.options),
        })
    }

    /// Localizes `instance` (its tree is `<repos>/<instance_id>`). Every failure of the
    /// instance is in the outcome (a panic is made one by [`super::run_one`]); the `Err` is
    /// only [`Error::Cancelled`]
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
                request.top_k = self.ask.top_k();
                request.granularity = self.ask.granularity();
                request.pipeline = self.pipeline;
                // The index stays for the related-level line, which reads its files' symbols.
                match self.localizer.localize_indexed(&request) {
                    Err(Error::Cancelled) => return Err(Error::Cancelled),
                    localized => {
                        localized.map_err(|err| failure(id, err.kind().name(), err.to_string()))
                    }
                }
            }
        };
        crate::cancel::check()?;
        let seconds = begun.elapsed().as_secs_f64();
        Ok(match localized {
            Ok((result, index)) => {
                let files = result.files.len();
                let llm_fallbacks = result
                    .llm
                    .as_ref()
                    .map(|llm| llm.stats.fallbacks.clone())
                    .unwrap_or_default();
                let mut line = if self.related_locs {
                    let symbols = super::agentless::python_symbols(&index.repo, &result);
                    AgentlessLine::with_related_locs(result, &symbols)
                } else {
                    AgentlessLine::from_result(result)
                };
                line.blagent_settings = Some(self.settings.clone());
                BatchOutcome {
                    instance_id: id.clone(),
                    line: Some(serde_json::to_string(&line)?),
                    failure: None,
                    files,
                    llm_fallbacks,
                    seconds,
                }
            }
            Err(failed) => BatchOutcome::failed(failed, seconds),
        })
    }
}
