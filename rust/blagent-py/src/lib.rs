//! Python bindings of blagent-core. Glue only: argument conversion, the GIL released around
//! every heavy call, core errors mapped to Python exceptions in one place, panics caught.
//! Results cross as JSON text; `python/blagent` turns them into typed objects.

// Doc comments here are Python docstrings (Args: sections name Python parameters), pyo3
// extracts arguments as owned values, and Python keyword signatures may be long.
#![allow(
    clippy::doc_markdown,
    clippy::needless_pass_by_value,
    clippy::too_many_arguments
)]

use std::path::PathBuf;

use blagent_core::agent::{LlmOptions, LlmRun, Pipeline};
use blagent_core::analysis::{analyze_failures as run_analysis, write_outputs, AnalysisConfig};
use blagent_core::eval::{run_eval, EvalConfig};
use blagent_core::interface::{run_batch, BatchConfig, Granularity, LocalizeRequest};
use blagent_core::llm::{model_from_config, LlmClient, LlmConfig, Message};
use blagent_core::{Error, LocalizeOptions, Localizer, RepoIndex};
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

mod cancel;

/// The encoder allocates and frees large tensors at a high rate; mimalloc keeps those pages
/// mapped instead of returning them to the kernel after each batch (measured in
/// `bench/encoder_bench.py`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

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

/// The one conversion point from core errors to Python exceptions.
fn to_py(err: Error) -> PyErr {
    let message = err.to_string();
    match err {
        Error::Io { .. } => BlagentIOError::new_err(message),
        Error::Internal(_) | Error::Json(_) => InternalError::new_err(message),
        Error::Model(_) => ModelError::new_err(message),
        Error::Llm(_) => LlmError::new_err(message),
        _ if err.is_input_error() => InputError::new_err(message),
        _ => BlagentError::new_err(message),
    }
}

/// Runs `work` with the GIL released, turning errors and panics into Python exceptions; Ctrl-C
/// stops it (see `cancel`).
fn run<T: Send>(
    py: Python<'_>,
    work: impl FnOnce() -> blagent_core::Result<T> + Send,
) -> PyResult<T> {
    cancel::run_cancellable(py, work, to_py)
}

fn to_json<T: serde::Serialize>(value: &T) -> blagent_core::Result<String> {
    Ok(serde_json::to_string(value)?)
}

fn parse_options(options_json: Option<&str>) -> PyResult<LocalizeOptions> {
    match options_json {
        None => Ok(LocalizeOptions::default()),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| InputError::new_err(format!("invalid options: {e}"))),
    }
}

fn parse_granularity(granularity: &str) -> PyResult<Granularity> {
    serde_json::from_value(serde_json::Value::String(granularity.to_owned())).map_err(|_| {
        InputError::new_err(format!(
            "invalid granularity {granularity:?}: use \"file\" or \"function\""
        ))
    })
}

/// The LLM run a `pipeline` name asks for: none for `fused` (the LLM-free ranking).
///
/// The model comes from `llm_config_json` (HTTP, replay, or record); without an endpoint it is the
/// LLM-free `NoModel`, with which every stage falls back to retrieval.
fn llm_run(
    pipeline: &str,
    llm_options_json: Option<&str>,
    llm_config_json: Option<&str>,
) -> PyResult<Option<LlmRun>> {
    let pipeline = match pipeline {
        "fused" => return Ok(None),
        "blagent" => Pipeline::Blagent,
        "rrl" => Pipeline::Rrl,
        other => {
            return Err(InputError::new_err(format!(
                "invalid pipeline {other:?}: use \"fused\", \"blagent\" or \"rrl\""
            )))
        }
    };
    let mut options: LlmOptions = match llm_options_json {
        None => LlmOptions::default(),
        Some(text) => serde_json::from_str(text)
            .map_err(|e| InputError::new_err(format!("invalid LLM options: {e}")))?,
    };
    options.pipeline = pipeline;
    blagent_core::agent::validate_rrl_groups(&options.rrl_groups).map_err(to_py)?;
    // Without a configuration (or with one that names no endpoint) every stage falls back to
    // retrieval: `model_from_config` gives the LLM-free model then.
    let config = LlmConfig::from_json(llm_config_json.unwrap_or("{}")).map_err(to_py)?;
    options.temperature = config.temperature;
    if config.seed.is_some() {
        options.seed = config.seed;
    }
    if config.max_tokens.is_some() {
        options.max_completion_tokens = config.max_tokens;
    }
    let model: std::sync::Arc<dyn blagent_core::llm::ChatModel> =
        model_from_config(&config).map_err(to_py)?.into();
    Ok(Some(LlmRun { model, options }))
}

/// A repository's index, reusable across issues.
#[pyclass(name = "RepoIndex", module = "blagent._core", frozen)]
struct PyRepoIndex {
    inner: RepoIndex,
}

#[pymethods]
impl PyRepoIndex {
    /// Number of indexed files.
    #[getter]
    fn num_files(&self) -> usize {
        self.inner.files.len()
    }

    /// Number of indexed chunks.
    #[getter]
    fn num_chunks(&self) -> usize {
        self.inner.num_chunks()
    }

    /// The path-augmented text of every chunk, in index order (what dense retrieval embeds).
    fn chunk_texts(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let index = &self.inner;
        run(py, || {
            Ok(index
                .chunk_refs
                .iter()
                .map(|&(f, c)| {
                    let file = &index.files[f as usize];
                    file.parsed.chunks[c as usize].text(&file.text)
                })
                .collect())
        })
    }

    /// Indexing time per stage, as JSON.
    fn timings_json(&self) -> PyResult<String> {
        to_json(&self.inner.timings).map_err(to_py)
    }
}

/// The LLM-free localizer.
#[pyclass(name = "Localizer", module = "blagent._core", frozen)]
struct PyLocalizer {
    inner: Localizer,
}

#[pymethods]
impl PyLocalizer {
    /// Args:
    ///     options_json: `LocalizeOptions` as JSON (defaults when None).
    #[new]
    #[pyo3(signature = (options_json=None))]
    fn new(options_json: Option<&str>) -> PyResult<Self> {
        let options = parse_options(options_json)?;
        Ok(PyLocalizer {
            inner: Localizer::new(options).map_err(to_py)?,
        })
    }

    /// The options in force, as JSON.
    fn options_json(&self) -> PyResult<String> {
        to_json(self.inner.options()).map_err(to_py)
    }

    /// Indexes a repository.
    fn index(&self, py: Python<'_>, repo: PathBuf) -> PyResult<PyRepoIndex> {
        let inner = run(py, || self.inner.index(&repo))?;
        Ok(PyRepoIndex { inner })
    }

    /// Indexes `repo` and localizes `issue`; returns the result as JSON.
    fn localize(&self, py: Python<'_>, repo: PathBuf, issue: &str) -> PyResult<String> {
        run(py, || to_json(&self.inner.localize(&repo, issue)?))
    }

    /// Localizes `issue` in a prebuilt index; returns the result as JSON.
    fn localize_in(&self, py: Python<'_>, index: &PyRepoIndex, issue: &str) -> PyResult<String> {
        let index = &index.inner;
        run(py, || to_json(&self.inner.localize_in(index, issue)?))
    }

    /// Localizes `issue` with an LLM pipeline; returns the result (with its `llm` section) as
    /// JSON.
    ///
    /// Args:
    ///     repo: the repository checkout.
    ///     issue: the issue text.
    ///     pipeline: "blagent" or "rrl".
    ///     top_k: files to return.
    ///     llm_options_json: `LlmOptions` as JSON (defaults when None).
    ///     llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON; LLM-free when None).
    #[pyo3(signature = (repo, issue, pipeline, top_k=10, llm_options_json=None, llm_config_json=None))]
    fn localize_llm(
        &self,
        py: Python<'_>,
        repo: PathBuf,
        issue: &str,
        pipeline: &str,
        top_k: usize,
        llm_options_json: Option<&str>,
        llm_config_json: Option<&str>,
    ) -> PyResult<String> {
        let Some(mut run_with) = llm_run(pipeline, llm_options_json, llm_config_json)? else {
            return Err(InputError::new_err(
                "localize_llm needs pipeline \"blagent\" or \"rrl\"",
            ));
        };
        run_with.options.top_k = top_k;
        run(py, || {
            let index = self.inner.index(&repo)?;
            to_json(&self.inner.localize_with_llm(
                &index,
                issue,
                run_with.model.as_ref(),
                &run_with.options,
            )?)
        })
    }

    /// Answers a standardized request (`schemas/localize-request.schema.json`).
    ///
    /// Args:
    ///     request_json: the request as JSON text.
    ///
    /// Returns:
    ///     The result as JSON text (`schemas/localize-result.schema.json`).
    fn localize_request(&self, py: Python<'_>, request_json: &str) -> PyResult<String> {
        run(py, || {
            to_json(
                &self
                    .inner
                    .localize_request(&LocalizeRequest::from_json(request_json)?)?,
            )
        })
    }

    /// Answers a standardized request in a prebuilt index of its repository.
    ///
    /// Args:
    ///     index: the index of the request's repository.
    ///     request_json: the request as JSON text.
    fn localize_request_in(
        &self,
        py: Python<'_>,
        index: &PyRepoIndex,
        request_json: &str,
    ) -> PyResult<String> {
        let index = &index.inner;
        run(py, || {
            to_json(
                &self
                    .inner
                    .localize_request_in(index, &LocalizeRequest::from_json(request_json)?)?,
            )
        })
    }
}

/// Cache hits, misses and discarded entries, by name, as Python receives them.
type CacheCounts = std::collections::HashMap<&'static str, usize>;

fn text_kind(kind: &str) -> PyResult<blagent_core::embed::TextKind> {
    match kind {
        "document" => Ok(blagent_core::embed::TextKind::Document),
        "query" => Ok(blagent_core::embed::TextKind::Query),
        other => Err(InputError::new_err(format!(
            "kind must be 'document' or 'query', not {other:?}"
        ))),
    }
}

/// A sentence encoder loaded from a model folder.
#[pyclass(name = "Encoder", module = "blagent._core", frozen)]
struct PyEncoder {
    inner: blagent_core::embed::Encoder,
}

#[pymethods]
impl PyEncoder {
    /// Args:
    ///     model_dir: a sentence-transformers / Hugging Face model folder.
    #[new]
    fn new(py: Python<'_>, model_dir: PathBuf) -> PyResult<Self> {
        let inner = run(py, || blagent_core::embed::Encoder::load(&model_dir))?;
        Ok(PyEncoder { inner })
    }

    /// Embedding width.
    #[getter]
    fn dimension(&self) -> usize {
        self.inner.folder().dimension
    }

    /// Identifies the model's weights (used as the embedding cache key).
    #[getter]
    fn identity(&self) -> String {
        self.inner.folder().identity.clone()
    }

    /// Embeds texts; one vector per text.
    ///
    /// Args:
    ///     texts: the texts.
    ///     kind: "document" or "query" (models with task prefixes embed them differently).
    #[pyo3(signature = (texts, kind="document"))]
    fn embed(&self, py: Python<'_>, texts: Vec<String>, kind: &str) -> PyResult<Vec<Vec<f32>>> {
        let kind = text_kind(kind)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        run(py, || self.inner.embed(&refs, kind))
    }

    /// Embeds texts through the on-disk cache under `cache_dir`: cached vectors are read,
    /// the others computed and stored.
    ///
    /// Args:
    ///     texts: the texts.
    ///     cache_dir: the cache's root folder (one sub-folder per model).
    ///     kind: "document" or "query".
    ///
    /// Returns:
    ///     (vectors, {"hits": int, "misses": int, "discarded": int})
    #[pyo3(signature = (texts, cache_dir, kind="document"))]
    fn embed_cached(
        &self,
        py: Python<'_>,
        texts: Vec<String>,
        cache_dir: PathBuf,
        kind: &str,
    ) -> PyResult<(Vec<Vec<f32>>, CacheCounts)> {
        let kind = text_kind(kind)?;
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let (vectors, stats) = run(py, || {
            let cache = blagent_core::embed::EmbeddingCache::open(
                &cache_dir,
                &self.inner.folder().identity,
            )?;
            cache.embed(&self.inner, &refs, kind)
        })?;
        let stats = [
            ("hits", stats.hits),
            ("misses", stats.misses),
            ("discarded", stats.discarded),
        ]
        .into_iter()
        .collect();
        Ok((vectors, stats))
    }
}

/// A chat client: an OpenAI-compatible endpoint, a replay cassette, or none (LLM-free), with
/// retries, timeouts, a concurrency limit and token accounting per stage.
#[pyclass(name = "LlmClient", module = "blagent._core", frozen)]
struct PyLlmClient {
    inner: LlmClient,
}

#[pymethods]
impl PyLlmClient {
    /// Args:
    ///     config_json: the configuration as JSON (`LlmConfig` fields: base_url, model, api_key,
    ///         temperature, seed, max_tokens, connect_timeout_s, request_timeout_s, max_retries,
    ///         backoff_base_ms, max_concurrency, prices, tokenizer, replay, record); unset
    ///         base_url, model and api_key are read from BLAGENT_LLM_BASE_URL,
    ///         BLAGENT_LLM_MODEL and BLAGENT_LLM_API_KEY.
    ///
    /// Raises:
    ///     InputError: the configuration is invalid.
    #[new]
    #[pyo3(signature = (config_json="{}"))]
    fn new(py: Python<'_>, config_json: &str) -> PyResult<Self> {
        let inner = run(py, || LlmClient::from_json(config_json))?;
        Ok(PyLlmClient { inner })
    }

    /// The model's name (`http:MODEL`, `replay:MODEL` or `none`); never contains the key.
    #[getter]
    fn name(&self) -> String {
        self.inner.name()
    }

    /// Whether requests can be answered (False in LLM-free mode).
    #[getter]
    fn enabled(&self) -> bool {
        self.inner.is_enabled()
    }

    /// The validated configuration as JSON, the key shown as "<redacted>".
    fn config_json(&self) -> PyResult<String> {
        to_json(self.inner.config()).map_err(to_py)
    }

    /// Sends one chat request with the configured temperature, seed and token cap.
    ///
    /// Args:
    ///     messages_json: a JSON list of {"role": "system"|"user"|"assistant", "content": str}.
    ///     stage: the pipeline stage asking, for token accounting.
    ///
    /// Returns:
    ///     The response as JSON: {"content", "usage": {"prompt_tokens", "completion_tokens",
    ///     "estimated"}, "finish_reason"}.
    ///
    /// Raises:
    ///     LlmError: no answer after the retries (or no LLM configured).
    fn chat(&self, py: Python<'_>, messages_json: &str, stage: &str) -> PyResult<String> {
        let messages: Vec<Message> = serde_json::from_str(messages_json)
            .map_err(|e| InputError::new_err(format!("invalid messages: {e}")))?;
        run(py, || to_json(&self.inner.chat(stage, messages)?))
    }

    /// Tokens, calls and estimated cost so far, per stage and in total, as JSON.
    fn usage_json(&self) -> PyResult<String> {
        to_json(&self.inner.usage()).map_err(to_py)
    }
}

/// Runs an evaluation; returns the report as JSON.
///
/// Args:
///     dataset: JSONL dataset path.
///     repos: directory of per-instance trees.
///     ids: instance ids to keep (all when None).
///     options_json: `LocalizeOptions` as JSON.
///     out: predictions JSONL path.
///     signals_out: per-candidate raw signal dump (JSONL) for tuning.
///     progress: show a progress bar on stderr.
///     queries: pre-written T0/T1 rewrites per instance (JSONL); needs dense retrieval on.
///     pipeline: "fused" (LLM-free), "blagent" or "rrl".
///     llm_options_json: `LlmOptions` as JSON.
///     llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON; LLM-free when None).
#[pyfunction]
#[pyo3(signature = (dataset, repos, ids=None, options_json=None, out=None, signals_out=None, progress=true, queries=None, pipeline="fused", llm_options_json=None, llm_config_json=None))]
fn evaluate(
    py: Python<'_>,
    dataset: PathBuf,
    repos: PathBuf,
    ids: Option<Vec<String>>,
    options_json: Option<&str>,
    out: Option<PathBuf>,
    signals_out: Option<PathBuf>,
    progress: bool,
    queries: Option<PathBuf>,
    pipeline: &str,
    llm_options_json: Option<&str>,
    llm_config_json: Option<&str>,
) -> PyResult<String> {
    let llm = llm_run(pipeline, llm_options_json, llm_config_json)?;
    let options = parse_options(options_json)?;
    let config = EvalConfig {
        dataset,
        repos,
        ids,
        options,
        out,
        signals_out,
        progress,
        queries,
        llm,
    };
    run(py, || to_json(&run_eval(&config)?))
}

/// Localizes many instances into an Agentless `loc_outputs.jsonl`; returns the report as JSON.
///
/// Resumable: instances already in `out` are skipped. A failing instance is recorded in
/// `failures_out` and the report, and the others go on.
///
/// Args:
///     dataset: JSONL dataset path (`instance_id`, `problem_statement`).
///     repos: directory of per-instance trees, `repos/<instance_id>`.
///     out: the `loc_outputs.jsonl` to append to.
///     failures_out: where this run's failures go (JSONL; removed when none).
///     ids: instance ids to run (all when None).
///     options_json: `LocalizeOptions` as JSON.
///     top_k: files per instance.
///     granularity: "file" or "function".
///     progress: show progress on stderr.
///     pipeline: "fused" (LLM-free), "blagent" or "rrl".
///     llm_options_json: `LlmOptions` as JSON.
///     llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON; LLM-free when None).
#[pyfunction]
#[pyo3(signature = (dataset, repos, out, failures_out, ids=None, options_json=None, top_k=10, granularity="file", progress=true, pipeline="fused", llm_options_json=None, llm_config_json=None))]
fn batch(
    py: Python<'_>,
    dataset: PathBuf,
    repos: PathBuf,
    out: PathBuf,
    failures_out: PathBuf,
    ids: Option<Vec<String>>,
    options_json: Option<&str>,
    top_k: usize,
    granularity: &str,
    progress: bool,
    pipeline: &str,
    llm_options_json: Option<&str>,
    llm_config_json: Option<&str>,
) -> PyResult<String> {
    let llm = llm_run(pipeline, llm_options_json, llm_config_json)?;
    let options = parse_options(options_json)?;
    let granularity = parse_granularity(granularity)?;
    let config = BatchConfig {
        dataset,
        repos,
        out,
        failures_out,
        ids,
        options,
        top_k,
        granularity,
        progress,
        llm,
    };
    run(py, || to_json(&run_batch(&config)?))
}

/// Finds, for every unresolved instance of an APR run, the first stage that failed (file,
/// function, line, patch generation); returns the analysis as JSON (`summary`, `instances`,
/// `warnings`, and `outputs`: the files written).
///
/// Args:
///     dataset: JSONL with `instance_id`, `patch` (gold patch), `repo`.
///     locs: localization outputs (JSONL: `instance_id`, `found_files`, optional function entries).
///     predictions: generated patches (SWE-bench predictions JSONL: `instance_id`, `model_patch`).
///     report: evaluation report JSON (resolved / unresolved / empty-patch ids).
///     repos: directory of base trees `<repos>/<instance_id>` (no function stage without it).
///     top_k: localized files the file stage looks at.
///     out_dir: where to write `instances/<id>.json`, `summary.md`, `summary.json`, `chart.png`.
#[pyfunction]
#[pyo3(signature = (dataset, locs, predictions, report, repos=None, top_k=3, out_dir=None))]
fn analyze_failures(
    py: Python<'_>,
    dataset: PathBuf,
    locs: PathBuf,
    predictions: PathBuf,
    report: PathBuf,
    repos: Option<PathBuf>,
    top_k: usize,
    out_dir: Option<PathBuf>,
) -> PyResult<String> {
    let config = AnalysisConfig {
        dataset,
        locs,
        predictions,
        report,
        repos,
        top_k,
    };
    run(py, || {
        let analysis = run_analysis(&config)?;
        let outputs = out_dir
            .as_deref()
            .map(|dir| write_outputs(&analysis, dir))
            .transpose()?
            .unwrap_or_default();
        let mut value = serde_json::to_value(&analysis)?;
        value["outputs"] = serde_json::to_value(outputs)?;
        to_json(&value)
    })
}

/// Reformulates an issue into the extracted fields; returns JSON.
#[pyfunction]
fn reformulate(py: Python<'_>, issue: &str) -> PyResult<String> {
    run(py, || to_json(&blagent_core::query::reformulate(issue)))
}

/// Parses a file's text into chunks, symbols and skeleton; returns JSON.
///
/// Args:
///     path: repository-relative path (selects the language by extension).
///     text: the file's contents.
#[pyfunction]
fn parse_source(py: Python<'_>, path: &str, text: &str) -> PyResult<String> {
    run(py, || {
        let language = blagent_core::repo::language_for_path(path)
            .ok_or_else(|| Error::InvalidInput(format!("no supported language for {path}")))?;
        let file = blagent_core::repo::SourceFile {
            path: path.to_owned(),
            language,
            text: text.to_owned(),
            lossy: false,
        };
        to_json(&blagent_core::chunk::parse_file(
            &file,
            &blagent_core::chunk::ChunkOptions::default(),
        ))
    })
}

/// The native core of blagent.
#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("BlagentError", py.get_type::<BlagentError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("BlagentIOError", py.get_type::<BlagentIOError>())?;
    m.add("InternalError", py.get_type::<InternalError>())?;
    m.add("ModelError", py.get_type::<ModelError>())?;
    m.add("LlmError", py.get_type::<LlmError>())?;
    m.add("SCHEMA_VERSION", blagent_core::SCHEMA_VERSION)?;
    m.add(
        "INTERFACE_SCHEMA_VERSION",
        blagent_core::interface::SCHEMA_VERSION,
    )?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyLocalizer>()?;
    m.add_class::<PyRepoIndex>()?;
    m.add_class::<PyEncoder>()?;
    m.add_class::<PyLlmClient>()?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(batch, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_failures, m)?)?;
    m.add_function(wrap_pyfunction!(reformulate, m)?)?;
    m.add_function(wrap_pyfunction!(parse_source, m)?)?;
    Ok(())
}
