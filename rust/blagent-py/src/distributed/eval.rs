//! An evaluation's worker and sink (see the parent module).

use std::sync::{Arc, Mutex};

use blagent_core::eval::{EvalConfig, EvalItem, EvalOutcome, EvalSink, EvalWorker};
use pyo3::prelude::*;

use super::{take_sink, with_sink};
use crate::{cancel, llm_run, parse_required, run, to_json, to_py};

/// Evaluates instances one at a time, as `evaluate` does for each.
#[pyclass(name = "EvalWorker", module = "blagent._core", frozen)]
pub(crate) struct PyEvalWorker {
    inner: Arc<EvalWorker>,
}

#[pymethods]
impl PyEvalWorker {
    /// Args:
    ///     config_json: `EvalConfig` as JSON, as for `evaluate`.
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
        let mut config: EvalConfig = parse_required("evaluation config", config_json)?;
        config.llm = llm_run(llm_options_json, llm_config_json)?;
        let inner = run(py, move || EvalWorker::new(&config))?;
        Ok(PyEvalWorker {
            inner: Arc::new(inner),
        })
    }

    /// Evaluates one item of `EvalSink.todo_json()`.
    ///
    /// Args:
    ///     item_json: {"position", "instance", "rewrites"} as JSON.
    ///
    /// Returns:
    ///     The outcome as JSON, for `EvalSink.record`.
    fn evaluate(&self, py: Python<'_>, item_json: &str) -> PyResult<String> {
        let item: EvalItem = parse_required("evaluation item", item_json)?;
        let worker = Arc::clone(&self.inner);
        run(py, move || to_json(&worker.evaluate(&item)?))
    }
}

/// An evaluation's report and predictions while its instances are evaluated elsewhere:
/// outcomes are added in the run's order whatever order they come in.
#[pyclass(name = "EvalSink", module = "blagent._core", frozen)]
pub(crate) struct PyEvalSink {
    inner: Mutex<Option<EvalSink>>,
}

#[pymethods]
impl PyEvalSink {
    /// Plans the evaluation (the selected instances whose tree exists) and creates its
    /// output files.
    ///
    /// Args:
    ///     config_json: `EvalConfig` as JSON, as for `evaluate`.
    #[new]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        let config: EvalConfig = parse_required("evaluation config", config_json)?;
        let sink = run(py, move || EvalSink::open(&config))?;
        Ok(PyEvalSink {
            inner: Mutex::new(Some(sink)),
        })
    }

    /// The items to evaluate, in order, as a JSON list of {"position", "instance",
    /// "rewrites"}.
    fn todo_json(&self, py: Python<'_>) -> PyResult<String> {
        with_sink(py, &self.inner, "evaluation", |sink| to_json(&sink.todo()))
    }

    /// Shows on the progress bar that an instance is being worked on.
    fn started(&self, py: Python<'_>, instance_id: &str) -> PyResult<()> {
        with_sink(py, &self.inner, "evaluation", |sink| {
            sink.started(instance_id);
            Ok(())
        })
    }

    /// Prints a note above the progress bar (a line on stderr when no bar is drawn).
    fn note(&self, py: Python<'_>, message: &str) -> PyResult<()> {
        with_sink(py, &self.inner, "evaluation", |sink| {
            sink.note(message);
            Ok(())
        })
    }

    /// Adds one outcome (from `EvalWorker.evaluate`).
    ///
    /// Raises:
    ///     InputError: the outcome is malformed, or its position is not pending.
    fn record(&self, py: Python<'_>, outcome_json: &str) -> PyResult<()> {
        let outcome: EvalOutcome = parse_required("evaluation outcome", outcome_json)?;
        with_sink(py, &self.inner, "evaluation", move |sink| {
            sink.record(outcome)
        })
    }

    /// Records that an item failed where no worker could say so (its worker died).
    ///
    /// Args:
    ///     position: the item's position.
    ///     instance_id: its instance.
    ///     error: what went wrong.
    fn record_failure(
        &self,
        py: Python<'_>,
        position: usize,
        instance_id: &str,
        error: &str,
    ) -> PyResult<()> {
        let outcome = EvalOutcome {
            position,
            instance_id: instance_id.to_owned(),
            error: Some(error.to_owned()),
            ..EvalOutcome::default()
        };
        with_sink(py, &self.inner, "evaluation", move |sink| {
            sink.record(outcome)
        })
    }

    /// Ends the run once every item has its outcome; returns the report as JSON (as
    /// `evaluate` does).
    fn finish(&self, py: Python<'_>) -> PyResult<String> {
        let sink = take_sink(&self.inner, "evaluation")?;
        cancel::run_short(py, move || to_json(&sink.finish()?), to_py)
    }
}
