//! Calls and their arguments: a core call run with the GIL released and Ctrl-C polled, JSON
//! text to the core's types and back, and the LLM run the options and configuration describe.

use blagent_core::agent::{LlmOptions, LlmRun};
use blagent_core::llm::LlmConfig;
use blagent_core::repo::Inputs;
use blagent_core::Error;
use pyo3::prelude::*;
use serde::de::DeserializeOwned;

use crate::cancel;
use crate::errors::to_py;

/// Runs `work` with the GIL released, turning errors and panics into Python exceptions; Ctrl-C
/// stops it (see `cancel`).
pub(crate) fn run<T: Send + 'static>(
    py: Python<'_>,
    work: impl FnOnce() -> blagent_core::Result<T> + Send + 'static,
) -> PyResult<T> {
    cancel::run_cancellable(py, work, to_py)
}

/// A Python `str` argument as Rust text: one that cannot be UTF-8 (a lone surrogate, as
/// JSON's "\ud800" or a `surrogateescape` decoding gives) is an `InputError`, where pyo3's
/// own conversion of `&str` and `String` raises `UnicodeEncodeError`, which no caller of
/// blagent expects (a review). Anything but a `str` is pyo3's `TypeError` naming the argument.
pub(crate) struct Text(pub String);

impl<'a, 'py> FromPyObject<'a, 'py> for Text {
    type Error = PyErr;

    fn extract(obj: Borrowed<'a, 'py, PyAny>) -> PyResult<Self> {
        let text = obj.cast::<pyo3::types::PyString>()?;
        match text.to_cow() {
            Ok(text) => Ok(Text(text.into_owned())),
            Err(err) => Err(to_py(Error::InvalidInput(format!(
                "a text argument holds a lone surrogate, which is not valid Unicode text ({err})"
            )))),
        }
    }
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> blagent_core::Result<String> {
    Ok(serde_json::to_string(value)?)
}

/// `T` from JSON text (`what` names it in the error), its default when `None`.
pub(crate) fn parse<T: DeserializeOwned + Default>(what: &str, json: Option<&str>) -> PyResult<T> {
    parse_or_default(what, json).map_err(to_py)
}

fn parse_or_default<T: DeserializeOwned + Default>(
    what: &str,
    json: Option<&str>,
) -> blagent_core::Result<T> {
    json.map_or_else(
        || Ok(T::default()),
        |text| {
            blagent_core::json::from_object(text)
                .map_err(|e| Error::InvalidInput(format!("invalid {what}: {e}")))
        },
    )
}

/// `T` from JSON text (`what` names it in the error).
pub(crate) fn parse_required<T: DeserializeOwned>(what: &str, json: &str) -> PyResult<T> {
    blagent_core::json::from_object(json)
        .map_err(|e| to_py(Error::InvalidInput(format!("invalid {what}: {e}"))))
}

/// The LLM run for the pipelines, when an LLM configuration or LLM options are given, in a
/// run that reads `inputs`: a recorded cassette may not be one of them or lie inside.
pub(crate) fn core_llm_run(
    llm_options_json: Option<&str>,
    llm_config_json: Option<&str>,
    inputs: Inputs,
) -> blagent_core::Result<Option<LlmRun>> {
    if llm_options_json.is_none() && llm_config_json.is_none() {
        return Ok(None);
    }
    let options: LlmOptions = parse_or_default("LLM options", llm_options_json)?;
    let config = LlmConfig::from_json(llm_config_json.unwrap_or("{}"))?;
    LlmRun::from_config_reading(options, &config, inputs).map(Some)
}

/// Runs `work` on a dataset job's configuration JSON and its LLM run ([`llm_run_reading`]) with
/// the GIL released: reading the LLM run reads files (a cassette, a tokenizer, a profile), so it
/// happens inside [`run`], where Ctrl-C is heard and a panic stays in Rust.
pub(crate) fn run_with_llm<T: Send + 'static>(
    py: Python<'_>,
    config_json: &str,
    (llm_options_json, llm_config_json): (Option<&str>, Option<&str>),
    work: impl FnOnce(&str, Option<LlmRun>) -> blagent_core::Result<T> + Send + 'static,
) -> PyResult<T> {
    let config = config_json.to_owned();
    let options = llm_options_json.map(str::to_owned);
    let endpoint = llm_config_json.map(str::to_owned);
    run(py, move || {
        let llm = llm_run_reading(options.as_deref(), endpoint.as_deref(), &config)?;
        work(&config, llm)
    })
}

/// [`core_llm_run`] for a dataset job: the `dataset` and `repos` its configuration JSON names are
/// inputs.
fn llm_run_reading(
    llm_options_json: Option<&str>,
    llm_config_json: Option<&str>,
    job_config_json: &str,
) -> blagent_core::Result<Option<LlmRun>> {
    let job: serde_json::Value = serde_json::from_str(job_config_json).unwrap_or_default();
    let path = |key: &str| job.get(key).and_then(serde_json::Value::as_str);
    let inputs = Inputs::new().file(path("dataset")).folder(path("repos"));
    core_llm_run(llm_options_json, llm_config_json, inputs)
}
