//! The writing half of a batch run: which instances it has to do (the selection, less those
//! already in the output), and each outcome written as it comes, in whatever order, with the
//! progress shown and the report kept.

use std::collections::HashSet;
use std::time::Instant;

use super::batch_types::{BatchConfig, BatchFailure, BatchOutcome, BatchReport};
use super::progress::Progress;
use super::resume::{existing_ids, line_settings, LineShape};
use super::SCHEMA_VERSION;
use crate::dataset::{instance_tree, load_dataset, select_ids, Instance, JsonlWriter};
use crate::error::{Error, Result};
use crate::repo::{json_lines_with, open_outputs_checked, OutputMode};

/// What a batch output holds: Agentless lines that carry blagent's result, appended to.
const BATCH_LINES: OutputMode = OutputMode {
    append: true,
    holds: "blagent's loc_outputs lines (JSON with instance_id, found_files and blagent)",
    is_ours: |b| {
        json_lines_with(
            b,
            &["instance_id", "found_files", "blagent"],
            b"{\"instance_id\":",
        )
    },
};

/// What a failures file holds: one line per instance that failed, replaced by each run.
const FAILURE_LINES: OutputMode = OutputMode {
    append: false,
    holds: "blagent's failure lines (JSON with instance_id, kind and error)",
    is_ours: |b| json_lines_with(b, &["instance_id", "kind", "error"], b"{\"instance_id\":"),
};

/// A batch's output while the run goes on (see the module documentation).
#[derive(Debug)]
pub struct BatchSink {
    todo: Vec<Instance>,
    pending: HashSet<String>,
    out: JsonlWriter,
    failures_file: JsonlWriter,
    report: BatchReport,
    progress: Progress,
    start: Instant,
}

/// The selected instances of `config`, in dataset order, each id once; unknown `ids` are an
/// input error.
fn selected(config: &BatchConfig) -> Result<Vec<Instance>> {
    let instances = load_dataset(&config.run.dataset)?;
    select_ids(instances, config.run.ids.as_deref(), &config.run.dataset)
}

/// The shape of the lines `config`'s run writes, named as the lines record it.
fn line_shape(config: &BatchConfig) -> LineShape {
    LineShape {
        pipeline: config.run.pipeline.name(),
        granularity: config.asked_granularity().name(),
        related_locs: config.related_locs,
        settings: line_settings(&config.run.options),
        llm_model: (config.run.pipeline != crate::agent::Pipeline::Fused).then(|| {
            let name = config.run.llm.as_ref().map_or_else(
                || crate::llm::ChatModel::name(&crate::llm::NoModel),
                |llm| llm.model.name(),
            );
            super::resume::asked_model(&name).to_owned()
        }),
    }
}

impl BatchSink {
    /// Plans `config`'s run: reads the dataset, opens the output for appending (locked: a
    /// second run on it is refused) and reads what it holds so far (cutting a half-written
    /// last line), and empties the last run's failures file.
    pub fn open(config: &BatchConfig) -> Result<Self> {
        let start = Instant::now();
        // A trees folder that is missing or not a folder is bad input, not a failure of every
        // instance (a review: exit 3 and a failures file naming each instance's missing tree).
        crate::repo::read::user_folder(&config.run.repos, "the trees folder (--repos)")?;
        let instances = selected(config)?;
        // The trees of ids that name one (an id leaving the trees folder fails on its own).
        let trees = instances
            .iter()
            .filter_map(|i| instance_tree(&config.run.repos, &i.instance_id).ok());
        let inputs = config.inputs().folders(trees);
        let failures_out = config.failures_path();
        let outputs = [
            (config.out.as_path(), BATCH_LINES, "the batch output"),
            (failures_out.as_path(), FAILURE_LINES, "the failures file"),
        ];
        let named: Vec<_> = outputs.iter().map(|&(p, _, w)| (p, w)).collect();
        config.run.check_recording(&named, &inputs)?;
        // A refusal creates and empties nothing (see `open_outputs_checked`): the lines already
        // in the output are read and checked before this run's failures replace the last run's.
        let shape = line_shape(config);
        let mut resumed = None;
        let [out, failures_file]: [crate::repo::Output; 2] =
            open_outputs_checked(&outputs, &inputs, |files| {
                resumed = Some(existing_ids(&config.out, &mut files[0], &shape)?);
                Ok(())
            })?
            .try_into()
            .expect("one file per output");
        let (done, truncated) = resumed.expect("checked when opened");
        let out = JsonlWriter::from_file(&config.out, out);
        let failures_file = JsonlWriter::from_file(&failures_out, failures_file);
        let selected = instances.len();
        let todo: Vec<Instance> = instances
            .into_iter()
            .filter(|i| !done.contains(&i.instance_id))
            .collect();
        let report = BatchReport {
            schema_version: SCHEMA_VERSION.to_owned(),
            out: config.out.clone(),
            failures_out,
            selected,
            resumed: selected - todo.len(),
            ..BatchReport::default()
        };
        let progress = Progress::new(config.run.progress, todo.len() as u64);
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
        Ok(BatchSink {
            pending: todo.iter().map(|i| i.instance_id.clone()).collect(),
            todo,
            out,
            failures_file,
            report,
            progress,
            start,
        })
    }

    /// The instances this run has to do, in dataset order.
    pub fn todo(&self) -> &[Instance] {
        &self.todo
    }

    /// Shows that `instance_id` is being worked on.
    pub fn started(&self, instance_id: &str) {
        self.progress.start(instance_id);
    }

    /// A note above the progress (or a line of it).
    pub fn note(&self, message: &str) {
        self.progress.note(message);
    }

    /// Writes one outcome: its line to the output (flushed), or its failure to the failures
    /// file. An outcome of an instance that is not pending (not selected, already in the
    /// output or recorded by this run), a line that is not this instance's one-line JSON
    /// object, or an outcome with both or neither of a line and a failure is an input error
    /// and writes nothing.
    pub fn record(&mut self, outcome: BatchOutcome) -> Result<()> {
        let id = outcome.instance_id.as_str();
        if !self.pending.contains(id) {
            return Err(Error::InvalidInput(format!(
                "{id} is not pending in this batch (not selected, or already written)"
            )));
        }
        match (outcome.line, outcome.failure) {
            (Some(line), None) => {
                check_line(id, &line)?;
                self.out.write_raw(&line)?;
                self.report.written += 1;
                if let Some(first) = outcome.llm_fallbacks.first() {
                    self.report.llm_fell_back += 1;
                    self.report
                        .llm_first_fallback
                        .get_or_insert_with(|| format!("{id}: {first}"));
                }
                self.progress.finish_one(
                    id,
                    &format!("{} files, {:.2} s", outcome.files, outcome.seconds),
                );
            }
            (None, Some(failed)) if failed.instance_id == id => self.fail(failed)?,
            _ => {
                return Err(Error::InvalidInput(format!(
                    "the outcome of {id} must have either a line or its own failure"
                )))
            }
        }
        self.pending.remove(&outcome.instance_id);
        Ok(())
    }

    fn fail(&mut self, failed: BatchFailure) -> Result<()> {
        self.failures_file.write(&failed)?;
        self.progress.finish_one(
            &failed.instance_id,
            &format!("FAILED ({}): {}", failed.kind, failed.error),
        );
        self.report.failures.push(failed);
        Ok(())
    }

    /// The report, once every instance to do has its outcome (else an input error naming
    /// one that has none). `seconds` counts from [`BatchSink::open`].
    pub fn finish(mut self) -> Result<BatchReport> {
        self.progress.finish();
        if let Some(missing) = self
            .todo
            .iter()
            .find(|i| self.pending.contains(&i.instance_id))
        {
            return Err(Error::InvalidInput(format!(
                "{} instance(s) of the batch have no outcome, {} among them",
                self.pending.len(),
                missing.instance_id
            )));
        }
        self.report.seconds = self.start.elapsed().as_secs_f64();
        // This run's failures replace the last run's only now: a run stopped before leaves
        // them as they were (its lines are in the output, and a rerun resumes it).
        self.failures_file.commit()?;
        Ok(self.report)
    }
}

/// Whether `line` is one line of JSON, an object whose `instance_id` is `id`.
fn check_line(id: &str, line: &str) -> Result<()> {
    let parsed: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| Error::InvalidInput(format!("the line of {id} is not JSON: {e}")))?;
    let named = parsed
        .get("instance_id")
        .and_then(serde_json::Value::as_str);
    if line.contains('\n') || named != Some(id) {
        return Err(Error::InvalidInput(format!(
            "the line of {id} is not one loc_outputs line for it"
        )));
    }
    Ok(())
}
