//! One instance of an evaluation: index its tree, localize its issue, and measure what the
//! report needs, as plain data ([`EvalOutcome`]) that an [`super::EvalSink`] adds up. The same
//! whether [`super::run_eval`] calls it in a loop or a distributed worker does.

use std::path::PathBuf;

use super::functions::{gold_functions, ranked_functions};
use super::llm::LlmInstanceStats;
use super::rewrites::RewriteSample;
use super::signals::{function_dump, signal_dump};
use super::types::{EvalConfig, EvalItem, EvalOutcome, Evaluated};
use crate::agent::Pipeline;
use crate::dataset::instance_tree;
use crate::error::{Error, Result};
use crate::interface::{LocalizeRequest, Localizer};
use crate::retrieve::{complete, function_candidates};
use crate::retrieve::{Ask, Granularity};

/// Metrics need at least this many ranked files (Acc@10, MAP@10).
const MIN_RANKED_FOR_METRICS: usize = 10;

/// Evaluates instances one at a time with the run's localizer and settings.
#[derive(Debug)]
pub struct EvalWorker {
    localizer: Localizer,
    repos: PathBuf,
    ranked_k: usize,
    written_k: usize,
    pipeline: Pipeline,
    granularity: Granularity,
    dump_signals: bool,
}

impl EvalWorker {
    /// A worker for `config`'s run (its outputs and selection are not used here).
    pub fn new(config: &EvalConfig) -> Result<Self> {
        let ask = Ask::new(config.run.top_k, config.granularity)?;
        if config.queries.is_some() && config.run.options.dense.is_none() {
            return Err(Error::InvalidInput(
                "--queries needs --dense (the rewrites are dense queries)".to_owned(),
            ));
        }
        let mut localizer = Localizer::new(config.run.options.clone())?;
        if let Some(run) = &config.run.llm {
            localizer = localizer.with_llm(run.clone());
        }
        Ok(EvalWorker {
            localizer,
            repos: config.run.repos.clone(),
            ranked_k: ask.top_k().max(MIN_RANKED_FOR_METRICS),
            written_k: ask.top_k(),
            pipeline: config.run.pipeline,
            granularity: config.granularity,
            dump_signals: config.signals_out.is_some(),
        })
    }

    /// Evaluates `item` (its tree is `<repos>/<instance_id>`). A failure of the instance is
    /// in the outcome (a panic is made one by [`crate::interface::run_one`]); the `Err` is
    /// only [`Error::Cancelled`].
    pub fn evaluate(&self, item: &EvalItem) -> Result<EvalOutcome> {
        let instance = &item.instance;
        let mut outcome = EvalOutcome {
            position: item.position,
            instance_id: instance.instance_id.clone(),
            ..EvalOutcome::default()
        };
        match self.localize(item, &mut outcome) {
            Ok(evaluated) => outcome.evaluated = Some(evaluated),
            Err(Error::Cancelled) => return Err(Error::Cancelled),
            Err(err) => outcome.error = Some(err.to_string()),
        }
        crate::cancel::check()?;
        Ok(outcome)
    }

    fn localize(&self, item: &EvalItem, outcome: &mut EvalOutcome) -> Result<Evaluated> {
        let instance = &item.instance;
        let tree = instance_tree(&self.repos, &instance.instance_id)?;
        let index = self.localizer.index(&tree)?;
        outcome.dense = index.dense.as_ref().map(|d| d.stats.clone());
        let given = item.rewrites.as_ref();
        let measure_rewrites = given.is_some() && index.dense.is_some();
        let functions_wanted = self.granularity == Granularity::Function;
        // `Some(None)`: a patched file's parse ran past its budget, so its functions are not
        // known; the instance is left out of the function metrics and named for it.
        let gold = functions_wanted.then(|| gold_functions(&instance.patch, &tree));
        if measure_rewrites || self.dump_signals {
            let scored = self
                .localizer
                .score(&index, &instance.problem_statement, given)?;
            if measure_rewrites {
                let fused: Vec<usize> = scored.ranked.iter().map(|&(f, _)| f).collect();
                outcome.rewrite = Some(RewriteSample::measure(
                    &index.repo,
                    &scored.signals,
                    &fused,
                    &instance.gold_files,
                ));
            }
            if self.dump_signals {
                let mut dump = signal_dump(&index.repo, &scored.signals, instance);
                if let Some(Some(gold)) = &gold {
                    let files: Vec<usize> =
                        complete(&index.repo, scored.ranked.iter().map(|&(f, _)| f))
                            .into_iter()
                            .take(self.ranked_k)
                            .collect();
                    let candidates = function_candidates(&index, &scored, &files)?;
                    dump["functions"] = function_dump(&index.repo, &candidates, gold);
                }
                outcome.signals = Some(dump);
            }
        }
        let mut request = LocalizeRequest::new(
            instance.instance_id.clone(),
            tree.clone(),
            instance.problem_statement.clone(),
        );
        request.top_k = self.ranked_k;
        request.pipeline = self.pipeline;
        request.rewrites = given.cloned();
        request.granularity = self.granularity;
        let result = self.localizer.localize_in(&index, &request)?;
        let functions = gold.map(|gold| {
            let ranked = ranked_functions(result.entities.as_deref().unwrap_or_default());
            (ranked, gold)
        });
        let t = &result.timings;
        Ok(Evaluated {
            ranked: result.paths(),
            scores: result
                .files
                .iter()
                .take(self.written_k)
                .map(|f| f.score)
                .collect(),
            index_ms: t.walk_ms + t.parse_ms + t.index_ms + t.dense_ms,
            query_ms: t.query_ms,
            llm: result.llm.as_ref().map(|report| {
                let stats = LlmInstanceStats::from(report);
                (
                    stats,
                    report.pipeline.name().to_owned(),
                    report.model.clone(),
                )
            }),
            functions,
        })
    }
}
