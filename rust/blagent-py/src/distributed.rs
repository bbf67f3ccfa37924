//! A job's two halves (a batch or an evaluation), for a driver that runs the per-item half
//! elsewhere (`blagent batch --ray`, `blagent eval --ray`): a worker turns one item into an
//! outcome, a sink writes outcomes as they come. Glue only: the work is
//! `blagent_core::interface::{AnyWorker, AnySink}` (`blagent_core::eval::{job_worker,
//! job_sink}`). Everything crosses as JSON text.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex};

use blagent_core::agent::LlmRun;
use blagent_core::eval::{job_sink, job_worker};
use blagent_core::interface::{AnySink, AnyWorker};
use pyo3::prelude::*;

use crate::convert::{run, run_with_llm};
use crate::errors::{panic_error, to_py, InputError, InternalError};

/// A job's worker or sink by `half` ([`job_worker`] or [`job_sink`]) from its kind,
/// configuration and LLM settings ([`run_with_llm`]).
fn make<T: Send + 'static>(
    py: Python<'_>,
    half: fn(&str, &str, Option<LlmRun>) -> blagent_core::Result<T>,
    (kind, config_json): (&str, &str),
    llm: (Option<&str>, Option<&str>),
) -> PyResult<T> {
    let kind = kind.to_owned();
    run_with_llm(py, config_json, llm, move |config, llm| {
        half(&kind, config, llm)
    })
}

/// Turns items of a job into outcomes, one at a time, as `batch` or `evaluate` does for each.
#[pyclass(name = "JobWorker", module = "blagent._core", frozen)]
pub(crate) struct PyJobWorker {
    inner: Arc<dyn AnyWorker>,
}

#[pymethods]
impl PyJobWorker {
    /// Args:
    ///     kind: the job, "batch" or "eval" (`JOB_KINDS`).
    ///     config_json: its configuration as JSON, as for `batch` or `evaluate`.
    ///     llm_options_json: `LlmOptions` as JSON, for the LLM pipelines.
    ///     llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON).
    #[new]
    #[pyo3(signature = (kind, config_json, llm_options_json=None, llm_config_json=None))]
    fn new(
        py: Python<'_>,
        kind: &str,
        config_json: &str,
        llm_options_json: Option<&str>,
        llm_config_json: Option<&str>,
    ) -> PyResult<Self> {
        let inner = make(
            py,
            job_worker,
            (kind, config_json),
            (llm_options_json, llm_config_json),
        )?;
        Ok(PyJobWorker {
            inner: Arc::from(inner),
        })
    }

    /// Runs one item (a panic in it is the item's `internal` failure).
    ///
    /// Args:
    ///     item_json: the `item` of one of `JobSink.todo_json()`'s entries.
    ///
    /// Returns:
    ///     The outcome as JSON, for `JobSink.record`.
    fn run(&self, py: Python<'_>, item_json: &str) -> PyResult<String> {
        let item = item_json.to_owned();
        let worker = Arc::clone(&self.inner);
        run(py, move || worker.run_json(&item))
    }
}

/// A job's output while its items are run elsewhere: the items to do, and each outcome
/// taken as it comes (the same output and report as `batch` or `evaluate`).
#[pyclass(name = "JobSink", module = "blagent._core", frozen)]
pub(crate) struct PyJobSink {
    inner: Mutex<Option<Box<dyn AnySink>>>,
}

#[pymethods]
impl PyJobSink {
    /// Plans the job (its selection, what an earlier batch wrote) and opens its outputs.
    ///
    /// Args:
    ///     kind: the job, "batch" or "eval" (`JOB_KINDS`).
    ///     config_json: its configuration as JSON, as for `batch` or `evaluate`.
    ///     llm_options_json, llm_config_json: the workers' LLM settings: no output may be
    ///         what they read (prompts, profile, cassette, …), as in a run on one machine.
    #[new]
    #[pyo3(signature = (kind, config_json, llm_options_json=None, llm_config_json=None))]
    fn new(
        py: Python<'_>,
        kind: &str,
        config_json: &str,
        llm_options_json: Option<&str>,
        llm_config_json: Option<&str>,
    ) -> PyResult<Self> {
        let sink = make(
            py,
            job_sink,
            (kind, config_json),
            (llm_options_json, llm_config_json),
        )?;
        Ok(PyJobSink {
            inner: Mutex::new(Some(sink)),
        })
    }

    /// The items still to do, in order, as a JSON list of {"instance" (the dataset row),
    /// "item" (what `JobWorker.run` takes)}.
    fn todo_json(&self, py: Python<'_>) -> PyResult<String> {
        self.with(py, |sink| sink.todo_json())
    }

    /// Shows on the progress bar that an instance is being worked on.
    fn started(&self, py: Python<'_>, instance_id: &str) -> PyResult<()> {
        self.with(py, |sink| {
            sink.started(instance_id);
            Ok(())
        })
    }

    /// Prints a note above the progress bar (a line on stderr when no bar is drawn).
    fn note(&self, py: Python<'_>, message: &str) -> PyResult<()> {
        self.with(py, |sink| {
            sink.note(message);
            Ok(())
        })
    }

    /// Takes one outcome (from `JobWorker.run`).
    ///
    /// Raises:
    ///     InputError: the outcome is malformed, or its item is not pending.
    fn record(&self, py: Python<'_>, outcome_json: &str) -> PyResult<()> {
        self.with(py, |sink| sink.record_json(outcome_json))
    }

    /// Records that an item failed where no worker could say so (e.g. `worker_lost`).
    ///
    /// Args:
    ///     item_json: the item, as given to the worker.
    ///     kind: the failure's kind (`worker_lost`, `internal`).
    ///     error: what went wrong.
    fn record_failure(
        &self,
        py: Python<'_>,
        item_json: &str,
        kind: &str,
        error: &str,
    ) -> PyResult<()> {
        self.with(py, |sink| sink.record_failure_json(item_json, kind, error))
    }

    /// Ends the run once every item has its outcome; returns the report as JSON (as `batch`
    /// or `evaluate` does).
    fn finish(&self, py: Python<'_>) -> PyResult<String> {
        self.locked(py, |slot| match slot.take() {
            Some(sink) => sink.finish_json().map_err(Failure::Core),
            None => Err(Failure::Finished),
        })
    }
}

/// Why a call on the sink failed, found with the GIL released and its lock held: turned into
/// Python's exception only once both are as they were (making one takes the GIL).
enum Failure {
    Core(blagent_core::Error),
    Finished,
    Poisoned,
    Panicked(Box<dyn std::any::Any + Send>),
}

impl PyJobSink {
    /// Runs `work` on the sink with the GIL released; an error once it is finished.
    fn with<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&mut dyn AnySink) -> blagent_core::Result<T> + Send,
    ) -> PyResult<T> {
        self.locked(py, |slot| match slot.as_mut() {
            Some(sink) => work(sink.as_mut()).map_err(Failure::Core),
            None => Err(Failure::Finished),
        })
    }

    /// Runs `work` on the sink's slot with the GIL released and the slot locked there: a
    /// thread never waits for the lock while it holds the GIL (a review: two threads on one
    /// sink deadlocked, one holding the GIL waiting for the lock, the other holding the lock
    /// waiting for the GIL). Panics become `InternalError`.
    fn locked<T: Send>(
        &self,
        py: Python<'_>,
        work: impl FnOnce(&mut Option<Box<dyn AnySink>>) -> Result<T, Failure> + Send,
    ) -> PyResult<T> {
        let inner = &self.inner;
        let outcome = py.detach(move || {
            let mut guard = inner.lock().map_err(|_| Failure::Poisoned)?;
            catch_unwind(AssertUnwindSafe(|| work(&mut guard)))
                .unwrap_or_else(|panic| Err(Failure::Panicked(panic)))
        });
        outcome.map_err(|failure| match failure {
            Failure::Core(err) => to_py(err),
            Failure::Finished => InputError::new_err("the sink is finished"),
            Failure::Poisoned => InternalError::new_err("the sink failed earlier"),
            Failure::Panicked(panic) => panic_error(&*panic),
        })
    }
}
