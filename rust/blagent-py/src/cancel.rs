//! Running a core call so that Ctrl-C stops it: the call runs on a worker thread with the GIL
//! released while the calling thread looks for signals every [`SIGNAL_POLL`]. On a pending
//! `KeyboardInterrupt` (or any exception a signal handler raises) the core is asked to stop
//! ([`blagent_core::cancel::request`]), the worker is waited for (batch and eval stop between
//! instances, LLM waits at once) and the exception is raised. Panics in the call are caught and
//! raised as `InternalError`.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::time::Duration;

use blagent_core::{cancel, Error};
use pyo3::exceptions::PyKeyboardInterrupt;
use pyo3::prelude::*;

/// How often the calling thread looks for signals.
const SIGNAL_POLL: Duration = Duration::from_millis(100);

/// The outcome of the worker: the call's result, or its panic.
type Outcome<T> = std::thread::Result<blagent_core::Result<T>>;

/// Runs `work` (see the module documentation); `to_py` converts its error.
pub(crate) fn run_cancellable<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> blagent_core::Result<T> + Send,
    to_py: impl FnOnce(Error) -> PyErr,
) -> PyResult<T> {
    let _scope = cancel::Scope::enter();
    let outcome: Result<Outcome<T>, PyErr> = std::thread::scope(|s| {
        let (tx, rx) = mpsc::channel::<Outcome<T>>();
        let worker = s.spawn(move || {
            let _ = tx.send(catch_unwind(AssertUnwindSafe(work)));
        });
        let mut rx = rx;
        loop {
            // The receiver is moved in and out: it is `Send`, not `Sync`.
            let (received, back) = py.detach(move || (rx.recv_timeout(SIGNAL_POLL), rx));
            rx = back;
            match received {
                Ok(outcome) => {
                    let _ = py.detach(move || worker.join());
                    return Ok(outcome);
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    let _ = py.detach(move || worker.join());
                    return Err(panic_error(&"the worker thread ended without a result"));
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
            }
            if let Err(interrupt) = py.check_signals() {
                cancel::request();
                let _ = py.detach(move || worker.join());
                return Err(interrupt);
            }
        }
    });
    match outcome? {
        Ok(Ok(value)) => Ok(value),
        Ok(Err(Error::Cancelled)) => Err(PyKeyboardInterrupt::new_err("interrupted")),
        Ok(Err(err)) => Err(to_py(err)),
        Err(panic) => Err(panic_error(&*panic)),
    }
}

fn panic_error(panic: &(dyn Any + Send)) -> PyErr {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned());
    crate::InternalError::new_err(format!("internal error (panic): {detail}"))
}
