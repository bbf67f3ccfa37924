//! The evaluation loop: every dataset instance whose repository tree exists is localized, its
//! prediction written as a JSONL line, and its ranking scored against the gold files. An
//! evaluation is a [`Job`]: the per-instance work is [`EvalWorker`]'s, the adding up
//! [`EvalSink`]'s (see `worker` and `sink`), so a distributed run (`blagent eval --ray`)
//! shares both.

use super::sink::EvalSink;
use super::types::{EvalConfig, EvalItem, EvalOutcome, EvalReport};
use super::worker::EvalWorker;
use crate::agent::LlmRun;
use crate::dataset::Instance;
use crate::error::{Error, Result};
use crate::interface::{
    json_sink, json_worker, run_job, AnySink, AnyWorker, BatchJob, DatasetConfig, Job, JobSink,
    JobWorker,
};

/// The jobs a driver can run by name ([`job_worker`], [`job_sink`]): a batch, an evaluation.
pub const JOB_KINDS: [&str; 2] = ["batch", "eval"];

/// The worker of the job named `kind` (one of [`JOB_KINDS`]) for `config_json` (its
/// configuration as JSON), with `llm` for the LLM pipelines, behind JSON.
pub fn job_worker(
    kind: &str,
    config_json: &str,
    llm: Option<LlmRun>,
) -> Result<Box<dyn AnyWorker>> {
    match kind {
        "batch" => json_worker::<BatchJob>(config_json, llm),
        "eval" => json_worker::<EvalJob>(config_json, llm),
        other => Err(unknown_kind(other)),
    }
}

/// The sink of the job named `kind` (one of [`JOB_KINDS`]) for `config_json`, behind JSON.
pub fn job_sink(kind: &str, config_json: &str) -> Result<Box<dyn AnySink>> {
    match kind {
        "batch" => json_sink::<BatchJob>(config_json),
        "eval" => json_sink::<EvalJob>(config_json),
        other => Err(unknown_kind(other)),
    }
}

fn unknown_kind(kind: &str) -> Error {
    Error::InvalidInput(format!(
        "unknown job {kind:?}: one of {}",
        JOB_KINDS.join(", ")
    ))
}

/// An evaluation, as a [`Job`]: its items are the instances with their place in the run.
#[derive(Debug, Clone, Copy)]
pub struct EvalJob;

impl Job for EvalJob {
    const NAME: &'static str = "evaluation";
    type Config = EvalConfig;
    type Item = EvalItem;
    type Outcome = EvalOutcome;
    type Report = EvalReport;
    type Worker = EvalWorker;
    type Sink = EvalSink;

    fn settings(config: &mut EvalConfig) -> &mut DatasetConfig {
        &mut config.run
    }

    fn instance(item: &EvalItem) -> &Instance {
        &item.instance
    }

    fn failed(item: &EvalItem, _kind: &str, error: String) -> EvalOutcome {
        EvalOutcome {
            position: item.position,
            instance_id: item.instance.instance_id.clone(),
            error: Some(error),
            ..EvalOutcome::default()
        }
    }

    fn took(report: &mut EvalReport, seconds: f64) {
        report.seconds = seconds;
    }
}

impl JobWorker<EvalJob> for EvalWorker {
    fn new(config: &EvalConfig) -> Result<Self> {
        EvalWorker::new(config)
    }

    fn run(&self, item: &EvalItem) -> Result<EvalOutcome> {
        self.evaluate(item)
    }
}

impl JobSink<EvalJob> for EvalSink {
    fn open(config: &EvalConfig) -> Result<Self> {
        EvalSink::open(config)
    }

    fn todo(&self) -> &[EvalItem] {
        EvalSink::todo(self)
    }

    fn started(&self, instance_id: &str) {
        EvalSink::started(self, instance_id);
    }

    fn note(&self, message: &str) {
        EvalSink::note(self, message);
    }

    fn record(&mut self, outcome: EvalOutcome) -> Result<()> {
        EvalSink::record(self, outcome)
    }

    fn finish(self) -> Result<EvalReport> {
        EvalSink::finish(self)
    }
}

/// Runs the localizer over the dataset and scores it: an [`EvalWorker`] evaluates each
/// instance in turn and an [`EvalSink`] adds them up.
pub fn run_eval(config: &EvalConfig) -> Result<EvalReport> {
    run_job::<EvalJob>(config)
}
