//! The adding-up half of an evaluation: which instances it has to do, and each
//! [`EvalOutcome`] added to the metrics and written as a prediction line, in the run's order
//! whatever order the outcomes come in (held back until those before them are in), so a
//! distributed run reports exactly what a local one does.

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use super::functions::FunctionAccumulator;
use super::llm::LlmTotals;
use super::rewrites::{load_rewrites, RewriteAccumulator};
use super::select::select;
use super::types::{DenseTotals, EvalConfig, EvalItem, EvalOutcome, EvalReport, Prediction};
use crate::dataset::JsonlWriter;
use crate::dataset::{first_hit_rank, GroupedAccumulator};
use crate::error::{Error, Result};
use crate::interface::progress::Progress;
use crate::repo::{json_lines_with, open_outputs, OutputMode};
use crate::retrieve::Rewrites;

/// What `eval --out` holds: one [`Prediction`] a line.
const PREDICTIONS: OutputMode = OutputMode {
    append: false,
    holds: "blagent's predictions (JSON lines with instance_id, found_files, scores, index_ms)",
    is_ours: |b| {
        json_lines_with(
            b,
            &["instance_id", "found_files", "scores", "index_ms"],
            b"{\"instance_id\":",
        )
    },
};

/// What `eval --signals-out` holds: one signal dump a line (its keys in sorted order).
const SIGNALS: OutputMode = OutputMode {
    append: false,
    holds: "blagent's signal dump (JSON lines with instance_id, indexed_files and files)",
    is_ours: |b| {
        json_lines_with(
            b,
            &["instance_id", "indexed_files", "files"],
            b"{\"files\":",
        )
    },
};

/// An evaluation's report and outputs while the run goes on.
#[derive(Debug)]
pub struct EvalSink {
    todo: Vec<EvalItem>,
    held: BTreeMap<usize, EvalOutcome>,
    next: usize,
    written_k: usize,
    out: Option<JsonlWriter>,
    signals_out: Option<JsonlWriter>,
    progress: Progress,
    report: EvalReport,
    files: GroupedAccumulator,
    functions: Option<FunctionAccumulator>,
    rewrites: Option<RewriteAccumulator>,
    dense: Option<DenseTotals>,
    start: Instant,
}

impl EvalSink {
    /// Plans `config`'s run (the selected instances whose tree exists, with their rewrites)
    /// and creates its output files.
    pub fn open(config: &EvalConfig) -> Result<Self> {
        let start = Instant::now();
        let run = &config.run;
        let selection = select(&run.dataset, &run.repos, run.ids.as_deref())?;
        if selection.present.is_empty() {
            // Refused before an output is opened (or a folder for one made).
            return Err(Error::InvalidInput(format!(
                "no instance of {} has a tree under {}",
                run.dataset.display(),
                run.repos.display()
            )));
        }
        let trees = selection.present.iter().map(|(_, tree)| tree);
        let inputs = run.inputs().file(config.queries.as_ref()).folders(trees);
        let mut outputs = Vec::new();
        outputs.extend(config.out.as_deref().map(|p| (p, PREDICTIONS, "--out")));
        outputs.extend(
            config
                .signals_out
                .as_deref()
                .map(|p| (p, SIGNALS, "--signals-out")),
        );
        let named: Vec<_> = outputs.iter().map(|&(p, _, w)| (p, w)).collect();
        run.check_recording(&named, &inputs)?;
        // Every input is read before an output is emptied.
        let mut given: HashMap<String, Rewrites> = config
            .queries
            .as_deref()
            .map(load_rewrites)
            .transpose()?
            .unwrap_or_default();
        // A refusal creates and empties nothing (see `open_outputs`).
        let mut files = open_outputs(&outputs, &inputs)?.into_iter();
        let mut writer = |path: Option<&std::path::Path>| {
            path.map(|p| JsonlWriter::from_file(p, files.next().expect("one file per output")))
        };
        let out = writer(config.out.as_deref());
        let signals_out = writer(config.signals_out.as_deref());
        let todo: Vec<EvalItem> = selection
            .present
            .into_iter()
            .enumerate()
            .map(|(position, (instance, _))| EvalItem {
                position,
                rewrites: given.remove(&instance.instance_id),
                instance,
            })
            .collect();
        let progress = Progress::new(run.progress, todo.len() as u64);
        Ok(EvalSink {
            held: BTreeMap::new(),
            next: 0,
            written_k: run.top_k,
            out,
            signals_out,
            progress,
            report: EvalReport {
                missing_trees: selection.missing,
                failures: selection.refused,
                ..EvalReport::default()
            },
            files: GroupedAccumulator::default(),
            functions: (config.granularity == crate::interface::Granularity::Function)
                .then(FunctionAccumulator::default),
            rewrites: config.queries.is_some().then(RewriteAccumulator::default),
            dense: run.options.dense.is_some().then(DenseTotals::default),
            todo,
            start,
        })
    }

    /// The instances to evaluate, in order.
    pub fn todo(&self) -> &[EvalItem] {
        &self.todo
    }

    /// Shows that `instance_id` is being worked on.
    pub fn started(&self, instance_id: &str) {
        self.progress.start(instance_id);
    }

    /// A note above the progress bar (or a line of it).
    pub fn note(&self, message: &str) {
        self.progress.note(message);
    }

    /// Adds one outcome: held until those before it are in, then added and written. An
    /// outcome whose position is not pending, or that names another instance, is an input
    /// error.
    pub fn record(&mut self, outcome: EvalOutcome) -> Result<()> {
        let position = outcome.position;
        let expected = self
            .todo
            .get(position)
            .map(|i| i.instance.instance_id.as_str());
        if position < self.next || self.held.contains_key(&position) || expected.is_none() {
            return Err(Error::InvalidInput(format!(
                "position {position} ({}) is not pending in this evaluation",
                outcome.instance_id
            )));
        }
        if expected != Some(outcome.instance_id.as_str()) {
            return Err(Error::InvalidInput(format!(
                "position {position} is not {}",
                outcome.instance_id
            )));
        }
        let done = match (&outcome.evaluated, &outcome.error) {
            (Some(evaluated), _) => {
                let gold = &self.todo[position].instance.gold_files;
                match first_hit_rank(&evaluated.ranked, gold) {
                    Some(rank) => format!("first gold file at rank {rank}"),
                    None if gold.is_empty() => "no gold file to score (left out)".to_owned(),
                    None => "no gold file ranked".to_owned(),
                }
            }
            (None, error) => format!("FAILED: {}", error.as_deref().unwrap_or("no result")),
        };
        self.progress.finish_one(&outcome.instance_id, &done);
        self.held.insert(position, outcome);
        while let Some(ready) = self.held.remove(&self.next) {
            self.add(ready)?;
            self.next += 1;
        }
        Ok(())
    }

    fn add(&mut self, outcome: EvalOutcome) -> Result<()> {
        let instance = &self.todo[outcome.position].instance;
        if let (Some(totals), Some(stats)) = (self.dense.as_mut(), &outcome.dense) {
            totals.add(stats);
        }
        if let (Some(acc), Some(sample)) = (self.rewrites.as_mut(), &outcome.rewrite) {
            acc.add(sample, &instance.gold_files);
        }
        if let (Some(writer), Some(dump)) = (self.signals_out.as_mut(), &outcome.signals) {
            writer.write(dump)?;
        }
        let Some(evaluated) = outcome.evaluated else {
            let error = outcome.error.unwrap_or_else(|| "no result".to_owned());
            self.report.failures.push((outcome.instance_id, error));
            return Ok(());
        };
        let gold = &instance.gold_files;
        if let Some((stats, pipeline, model)) = &evaluated.llm {
            let totals = self.report.llm.get_or_insert_with(|| LlmTotals {
                pipeline: pipeline.clone(),
                model: model.clone(),
                ..LlmTotals::default()
            });
            totals.add(stats);
        }
        if let (Some(acc), Some((ranked, gold))) = (self.functions.as_mut(), &evaluated.functions) {
            acc.add(instance, ranked, gold.as_deref());
        }
        let ranked = &evaluated.ranked;
        if gold.is_empty() {
            self.report.no_gold_files.push(instance.instance_id.clone());
        } else {
            self.files
                .add(&instance.repo, &instance.language, ranked, gold);
        }
        if let Some(writer) = self.out.as_mut() {
            let (found_functions, gold_functions) = evaluated.functions.unzip();
            let gold_functions = gold_functions.flatten();
            writer.write(&Prediction {
                instance_id: outcome.instance_id,
                found_files: ranked.iter().take(self.written_k).cloned().collect(),
                scores: evaluated.scores,
                gold_rank: first_hit_rank(ranked, gold),
                index_ms: evaluated.index_ms,
                query_ms: evaluated.query_ms,
                llm: evaluated.llm.map(|(stats, _, _)| stats),
                found_functions,
                gold_functions,
            })?;
        }
        Ok(())
    }

    /// The report, once every instance has its outcome (else an input error naming one that
    /// has none). `seconds` counts from [`EvalSink::open`].
    pub fn finish(self) -> Result<EvalReport> {
        self.progress.finish();
        if let Some(missing) = self.todo.get(self.next) {
            return Err(Error::InvalidInput(format!(
                "{} instance(s) of the evaluation have no outcome, {} among them",
                self.todo.len() - self.next - self.held.len(),
                missing.instance.instance_id
            )));
        }
        let mut report = self.report;
        let files = self.files.finish();
        report.overall = files.overall;
        report.per_repo = files.per_repo;
        report.per_language = files.per_language;
        report.rewrites = self.rewrites.map(|acc| acc.finish());
        report.dense = self.dense;
        report.functions = self.functions.map(FunctionAccumulator::finish);
        report.seconds = self.start.elapsed().as_secs_f64();
        // The outputs replace the last run's only for a run that scored an instance: one that
        // scored none (no tree under --repos, every instance failed) is refused by the caller,
        // and like a stopped run it leaves them as they were.
        if report.overall.instances > 0 {
            for writer in [self.out, self.signals_out].into_iter().flatten() {
                writer.commit()?;
            }
        }
        Ok(report)
    }
}
