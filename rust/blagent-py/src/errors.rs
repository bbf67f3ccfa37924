//! Python's exceptions for blagent's errors: the one conversion point from a core error to a
//! Python exception ([`to_py`], which [`Error::kind`] decides), and a caught panic as
//! `InternalError`.

use std::any::Any;

use blagent_core::{Error, ErrorKind};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

pyo3::create_exception!(
    _core,
    BlagentError,
    PyException,
    "Base class of every blagent error."
);
pyo3::create_exception!(
    _core,
    InputError,
    BlagentError,
    "Bad input: missing repository, empty issue, malformed file."
);
pyo3::create_exception!(
    _core,
    BlagentIOError,
    BlagentError,
    "Reading or writing failed."
);
pyo3::create_exception!(
    _core,
    ModelError,
    BlagentError,
    "An embedding model folder is missing or malformed, or the model failed."
);
pyo3::create_exception!(
    _core,
    LlmError,
    BlagentError,
    "The LLM endpoint failed after retries, or no LLM is configured."
);
pyo3::create_exception!(
    _core,
    InternalError,
    BlagentError,
    "A bug in blagent (an invariant failed or a panic was caught)."
);

/// The one conversion point from core errors to Python exceptions: [`Error::kind`] decides.
pub(crate) fn to_py(err: Error) -> PyErr {
    let message = err.to_string();
    match err.kind() {
        ErrorKind::Input => InputError::new_err(message),
        ErrorKind::Io => BlagentIOError::new_err(message),
        ErrorKind::Model => ModelError::new_err(message),
        ErrorKind::Llm => LlmError::new_err(message),
        ErrorKind::Interrupted => pyo3::exceptions::PyKeyboardInterrupt::new_err(message),
        ErrorKind::Internal => InternalError::new_err(message),
    }
}

/// A panic caught in a call, as the `InternalError` Python sees.
pub(crate) fn panic_error(panic: &(dyn Any + Send)) -> PyErr {
    InternalError::new_err(format!(
        "internal error (panic): {}",
        blagent_core::panic_message(panic)
    ))
}
