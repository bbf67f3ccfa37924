//! The two halves of a batch and of an evaluation, for a driver that runs the per-instance
//! half elsewhere (`blagent batch --ray`, `blagent eval --ray`): a worker localizes one
//! instance into an outcome, a sink writes outcomes as they come. Glue only: the work is
//! `blagent_core::interface::{BatchWorker, BatchSink}` and `blagent_core::eval::{EvalWorker,
//! EvalSink}`. Everything crosses as JSON text.

use std::sync::Mutex;

use pyo3::prelude::*;

use crate::{cancel, to_py, InputError, InternalError};

mod batch;
mod eval;

pub(crate) use self::batch::{PyBatchSink, PyBatchWorker};
pub(crate) use self::eval::{PyEvalSink, PyEvalWorker};

/// Runs `work` on the sink in `slot` with the GIL released; an error once it is finished.
pub(super) fn with_sink<S: Send, T: Send>(
    py: Python<'_>,
    slot: &Mutex<Option<S>>,
    what: &str,
    work: impl FnOnce(&mut S) -> blagent_core::Result<T> + Send,
) -> PyResult<T> {
    let mut guard = slot
        .lock()
        .map_err(|_| InternalError::new_err(format!("the {what} sink failed earlier")))?;
    let sink = guard
        .as_mut()
        .ok_or_else(|| InputError::new_err(format!("the {what} sink is finished")))?;
    cancel::run_short(py, || work(sink), to_py)
}

/// Takes the sink out of `slot` (it is finished after this).
pub(super) fn take_sink<S>(slot: &Mutex<Option<S>>, what: &str) -> PyResult<S> {
    slot.lock()
        .map_err(|_| InternalError::new_err(format!("the {what} sink failed earlier")))?
        .take()
        .ok_or_else(|| InputError::new_err(format!("the {what} sink is finished")))
}
