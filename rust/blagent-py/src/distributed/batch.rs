//! A batch's worker and sink (see the parent module).

use std::sync::{Arc, Mutex};

use blagent_core::dataset::Instance;
use blagent_core::interface::{BatchConfig, BatchFailure, BatchOutcome, BatchSink, BatchWorker};
use pyo3::prelude::*;

use super::{take_sink, with_sink};
use crate::{cancel, llm_run, parse_required, run, to_json, to_py};

/// Localizes instances of a batch one at a time, as `batch` does for each.
#[pyclass(name = "BatchWorker", module = "blagent._core", frozen)]
pub(crate) struct PyBatchWorker {
    inner: Arc<BatchWorker>,
}

#[pymethods]
impl PyBatchWorker {
    /// Args:
    ///     config_json: `BatchConfig` as JSON, as for `batch` (its repos, options, top_k,
    ///         granularity, related_locs and pipeline are used).
    ///     llm_options_json: `LlmOptions` as JSON, for the LLM pipelines.
    ///     llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON).
    #[new]
    #[pyo3(signature = (config_json, llm_options_json=None, llm_config_json=None))]
    fn new(
        py: Python<'_>,
        config_json: &str,
        llm_options_json: Option<&str>,
        llm_config_json: Option<&str>,
    ) -> PyResult<Self> {
        let mut config: BatchConfig = parse_required("batch config", config_json)?;
        config.llm = llm_run(llm_options_json, llm_config_json)?;
        let inner = run(py, move || BatchWorker::new(&config))?;
        Ok(PyBatchWorker {
            inner: Arc::new(inner),
        })
    }

    /// Localizes one instance of the batch.
    ///
    /// Args:
    ///     instance_json: the dataset row as JSON (`instance_id`, `problem_statement`).
    ///
    /// Returns:
    ///     The outcome as JSON: {"instance_id", "line" (the loc_outputs line's JSON text, or
    ///     null), "failure" ({"instance_id", "kind", "error"} or null), "files", "seconds"}.
    fn localize(&self, py: Python<'_>, instance_json: &str) -> PyResult<String> {
        let instance: Instance = parse_required("instance", instance_json)?;
        let worker = Arc::clone(&self.inner);
        run(py, move || to_json(&worker.localize(&instance)?))
    }
}

/// A batch's output while its instances are localized elsewhere: the instances to do, and
/// each outcome written as it comes (the same lines, failures file and report as `batch`).
#[pyclass(name = "BatchSink", module = "blagent._core", frozen)]
pub(crate) struct PyBatchSink {
    inner: Mutex<Option<BatchSink>>,
}

#[pymethods]
impl PyBatchSink {
    /// Plans the batch: reads the dataset and the output so far (resuming), opens the output
    /// and removes the last run's failures file.
    ///
    /// Args:
    ///     config_json: `BatchConfig` as JSON, as for `batch`.
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        let config: BatchConfig = parse_required("batch config", config_json)?;
        let sink = run(py, move || BatchSink::open(&config))?;
        Ok(PyBatchSink {
            inner: Mutex::new(Some(sink)),
        })
    }

    /// The instances still to do, in dataset order, as a JSON list of dataset rows.
    fn todo_json(&self, py: Python<'_>) -> PyResult<String> {
        with_sink(py, &self.inner, "batch", |sink| to_json(&sink.todo()))
    }

    /// Shows on the progress bar that an instance is being worked on.
    fn started(&self, py: Python<'_>, instance_id: &str) -> PyResult<()> {
        with_sink(py, &self.inner, "batch", |sink| {
            sink.started(instance_id);
            Ok(())
        })
    }

    /// Prints a note above the progress bar (or as a line of it).
    fn note(&self, py: Python<'_>, message: &str) -> PyResult<()> {
        with_sink(py, &self.inner, "batch", |sink| {
            sink.note(message);
            Ok(())
        })
    }

    /// Writes one outcome (from `BatchWorker.localize`): its line, flushed, or its failure.
    ///
    /// Raises:
    ///     InputError: the outcome is malformed, or its instance is not pending.
    fn record(&self, py: Python<'_>, outcome_json: &str) -> PyResult<()> {
        let outcome: BatchOutcome = parse_required("batch outcome", outcome_json)?;
        with_sink(py, &self.inner, "batch", move |sink| sink.record(outcome))
    }

    /// Records that an instance failed where no worker could say so (e.g. `worker_lost`).
    ///
    /// Args:
    ///     instance_id: the instance.
    ///     kind: the failure's kind.
    ///     error: what went wrong.
    fn record_failure(
        &self,
        py: Python<'_>,
        instance_id: &str,
        kind: &str,
        error: &str,
    ) -> PyResult<()> {
        let failure = BatchFailure {
            instance_id: instance_id.to_owned(),
            kind: kind.to_owned(),
            error: error.to_owned(),
        };
        with_sink(py, &self.inner, "batch", move |sink| {
            sink.record(BatchOutcome::failed(failure, 0.0))
        })
    }

    /// Ends the run once every instance has its outcome; returns the report as JSON (as
    /// `batch` does).
    fn finish(&self, py: Python<'_>) -> PyResult<String> {
        let sink = take_sink(&self.inner, "batch")?;
        cancel::run_short(py, move || to_json(&sink.finish()?), to_py)
    }
}
