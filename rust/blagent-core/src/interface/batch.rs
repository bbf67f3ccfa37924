//! Localizing many instances into one Agentless `loc_outputs.jsonl`: resumable (instances
//! already in the output are skipped), one line flushed per instance, and a failing instance
//! recorded and passed over, never losing the others.
//!
//! A run is two parts that meet only through plain data: a [`BatchWorker`] localizes one
//! instance into its line (or its failure), a [`BatchOutcome`]; a [`BatchSink`] plans the run
//! (selection, resumption) and writes each outcome as it comes. [`run_batch`] joins them in one
//! loop; a distributed driver (`blagent batch --ray`) runs workers elsewhere and feeds their
//! outcomes, in any order, to one sink, so both write the same lines.

use std::time::Instant;

use super::batch_config::{BatchConfig, BatchReport};
use super::batch_sink::BatchSink;
use super::batch_worker::BatchWorker;
use crate::error::Result;

/// Runs the batch (see the module documentation). Per-instance failures are in the report;
/// an `Err` means the run could not start or could not write its output.
pub fn run_batch(config: &BatchConfig) -> Result<BatchReport> {
    let start = Instant::now();
    let worker = BatchWorker::new(config)?;
    let mut sink = BatchSink::open(config)?;
    let todo = sink.todo().to_vec();
    for instance in &todo {
        crate::cancel::check()?;
        sink.started(&instance.instance_id);
        let outcome = worker.localize(instance)?;
        sink.record(outcome)?;
    }
    let mut report = sink.finish()?;
    report.seconds = start.elapsed().as_secs_f64();
    Ok(report)
}
