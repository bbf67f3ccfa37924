//! Python's exceptions for blagent's errors: the one table from an error kind to its exception
//! class ([`exception_class`], which `_core.ERROR_CLASSES` exports for the CLI's exit codes),
//! the one conversion point from a core error to a Python exception ([`to_py`], which
//! [`Error::kind`] decides), and a caught panic as `InternalError`.

use std::any::Any;
use std::collections::BTreeMap;

use blagent_core::{Error, ErrorKind};
use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;
use pyo3::types::PyType;

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

/// The Python exception class of each error kind: the one table.
pub(crate) fn exception_class(py: Python<'_>, kind: ErrorKind) -> Bound<'_, PyType> {
    match kind {
        ErrorKind::Input => py.get_type::<InputError>(),
        ErrorKind::Io => py.get_type::<BlagentIOError>(),
        ErrorKind::Model => py.get_type::<ModelError>(),
        ErrorKind::Llm => py.get_type::<LlmError>(),
        ErrorKind::Interrupted => py.get_type::<PyKeyboardInterrupt>(),
        ErrorKind::Internal => py.get_type::<InternalError>(),
    }
}

/// Every kind's name and exception class (`_core.ERROR_CLASSES`).
pub(crate) fn exception_classes(py: Python<'_>) -> BTreeMap<&'static str, Bound<'_, PyType>> {
    ErrorKind::ALL
        .into_iter()
        .map(|kind| (kind.name(), exception_class(py, kind)))
        .collect()
}

/// The one conversion point from core errors to Python exceptions: [`Error::kind`] decides
/// the class ([`exception_class`]).
pub(crate) fn to_py(err: Error) -> PyErr {
    let message = err.to_string();
    Python::attach(|py| PyErr::from_type(exception_class(py, err.kind()), message))
}

/// A panic caught in a call, as the `InternalError` Python sees.
pub(crate) fn panic_error(panic: &(dyn Any + Send)) -> PyErr {
    InternalError::new_err(format!(
        "internal error (panic): {}",
        blagent_core::panic_message(panic)
    ))
}
