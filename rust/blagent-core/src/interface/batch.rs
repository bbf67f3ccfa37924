//! Localizing many instances into one Agentless `loc_outputs.jsonl`: resumable (instances
//! already in the output are skipped), one line flushed per instance, and a failing instance
//! recorded and passed over, never losing the others.
//!
//! A batch is a [`Job`]: a [`BatchWorker`] localizes one instance into its line (or its
//! failure), a [`BatchOutcome`]; a [`BatchSink`] plans the run (selection, resumption) and
//! writes each outcome as it comes. [`run_batch`] joins them in one loop; a distributed
//! driver (`blagent batch --ray`) runs workers elsewhere and feeds their outcomes, in any
//! order, to one sink, so both write the same lines.

use super::batch_sink::BatchSink;
use super::batch_types::{failure, BatchConfig, BatchOutcome, BatchReport};
use super::batch_worker::BatchWorker;
use super::dataset_config::DatasetConfig;
use super::job::{run_job, Job, JobSink, JobWorker};
use crate::dataset::Instance;
use crate::error::Result;

/// A batch, as a [`Job`]: its items are the dataset's rows.
#[derive(Debug, Clone, Copy)]
pub struct BatchJob;

impl Job for BatchJob {
    const NAME: &'static str = "batch";
    type Config = BatchConfig;
    type Item = Instance;
    type Outcome = BatchOutcome;
    type Report = BatchReport;
    type Worker = BatchWorker;
    type Sink = BatchSink;

    fn settings(config: &mut BatchConfig) -> &mut DatasetConfig {
        &mut config.run
    }

    fn instance(item: &Instance) -> &Instance {
        item
    }

    fn failed(item: &Instance, kind: &str, error: String) -> BatchOutcome {
        BatchOutcome::failed(failure(&item.instance_id, kind, error), 0.0)
    }

    fn took(report: &mut BatchReport, seconds: f64) {
        report.seconds = seconds;
    }
}

impl JobWorker<BatchJob> for BatchWorker {
    fn new(config: &BatchConfig) -> Result<Self> {
        BatchWorker::new(config)
    }

    fn run(&self, item: &Instance) -> Result<BatchOutcome> {
        self.localize(item)
    }
}

impl JobSink<BatchJob> for BatchSink {
    fn open(config: &BatchConfig) -> Result<Self> {
        BatchSink::open(config)
    }

    fn todo(&self) -> &[Instance] {
        BatchSink::todo(self)
    }

    fn started(&self, instance_id: &str) {
        BatchSink::started(self, instance_id);
    }

    fn note(&self, message: &str) {
        BatchSink::note(self, message);
    }

    fn record(&mut self, outcome: BatchOutcome) -> Result<()> {
        BatchSink::record(self, outcome)
    }

    fn finish(self) -> Result<BatchReport> {
        BatchSink::finish(self)
    }
}

/// Runs the batch (see the module documentation). Per-instance failures are in the report;
/// an `Err` means the run could not start or could not write its output.
pub fn run_batch(config: &BatchConfig) -> Result<BatchReport> {
    run_job::<BatchJob>(config)
}
