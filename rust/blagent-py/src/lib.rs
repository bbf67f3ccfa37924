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
use std::sync::Arc;

use blagent_core::analysis::{analyze_failures as run_analysis, AnalysisConfig};
use blagent_core::eval::{run_calibration, CalibrateConfig, EvalJob};
use blagent_core::interface::{parse_config, run_job, BatchJob, Job, LocalizeRequest};
use blagent_core::llm::{LlmClient, Message};
use blagent_core::{Error, LocalizeOptions, Localizer, SearchIndex};
use pyo3::prelude::*;

mod cancel;
mod convert;
mod distributed;
mod errors;

use convert::{core_llm_run, parse, parse_required, run, run_with_llm, to_json, Text};
use errors::{
    to_py, BlagentError, BlagentIOError, InputError, InternalError, LlmError, ModelError,
};

/// The encoder allocates and frees large tensors at a high rate; mimalloc keeps those pages
/// mapped instead of returning them to the kernel after each batch (measured in
/// `bench/encoder_bench.py`).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A repository's index, reusable across requests.
#[pyclass(name = "RepoIndex", module = "blagent._core", frozen)]
struct PyRepoIndex {
    inner: Arc<SearchIndex>,
    /// The index settings of the localizer that built it (`Localizer::index_settings`).
    built_with: serde_json::Value,
}

#[pymethods]
impl PyRepoIndex {
    /// Number of indexed files.
    #[getter]
    fn num_files(&self) -> usize {
        self.inner.repo.files.len()
    }

    /// Number of indexed chunks.
    #[getter]
    fn num_chunks(&self) -> usize {
        self.inner.repo.num_chunks()
    }

    /// The path-augmented text of every chunk, in index order (what dense retrieval embeds).
    fn chunk_texts(&self, py: Python<'_>) -> PyResult<Vec<String>> {
        let index = Arc::clone(&self.inner);
        run(py, move || {
            let repo = &index.repo;
            Ok((0..repo.num_chunks()).map(|i| repo.chunk_text(i)).collect())
        })
    }

    /// Indexing time per stage, as JSON.
    fn timings_json(&self) -> PyResult<String> {
        to_json(&self.inner.repo.timings).map_err(to_py)
    }
}

/// The localizer: LLM-free, or with an LLM for the requests that name an LLM pipeline.
#[pyclass(name = "Localizer", module = "blagent._core", frozen)]
struct PyLocalizer {
    inner: Arc<Localizer>,
}

#[pymethods]
impl PyLocalizer {
    /// Args:
    ///     options_json: `LocalizeOptions` as JSON (defaults for what it leaves out).
    ///     llm_options_json: `LlmOptions` as JSON, for the LLM pipelines.
    ///     llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON); without it
    ///         and without LLM options, the LLM pipelines run with no model and fall back.
    ///     reads: what the localizer's runs read, when known: the repositories it will index
    ///         (a cassette it records may not lie inside one) and files such as an issue file
    ///         (a cassette may not be one); refused before the cassette is created.
    #[new]
    #[pyo3(signature = (options_json=None, llm_options_json=None, llm_config_json=None, reads=Vec::new()))]
    fn new(
        py: Python<'_>,
        options_json: Option<Text>,
        llm_options_json: Option<Text>,
        llm_config_json: Option<Text>,
        reads: Vec<PathBuf>,
    ) -> PyResult<Self> {
        let options: LocalizeOptions = parse("options", options_json.as_deref())?;
        let (folders, files): (Vec<PathBuf>, Vec<PathBuf>) =
            reads.into_iter().partition(|path| path.is_dir());
        let inputs = files.into_iter().fold(
            blagent_core::repo::Inputs::new().folders(folders),
            |inputs, file| inputs.file(Some(file)),
        );
        let llm_options_json = llm_options_json.map(|text| text.0);
        let llm_config_json = llm_config_json.map(|text| text.0);
        // Loading the encoder and a cassette can take a while (and fail any way): it runs
        // as every call does, interruptible, a panic an error.
        let inner = run(py, move || {
            let inner = Localizer::new(options)?;
            let llm = core_llm_run(
                llm_options_json.as_deref(),
                llm_config_json.as_deref(),
                inputs,
            )?;
            Ok(match llm {
                Some(llm) => inner.with_llm(llm),
                None => inner,
            })
        })?;
        Ok(PyLocalizer {
            inner: Arc::new(inner),
        })
    }

    /// The options in force, as JSON.
    fn options_json(&self) -> PyResult<String> {
        to_json(self.inner.options()).map_err(to_py)
    }

    /// Indexes a repository.
    fn index(&self, py: Python<'_>, repo: PathBuf) -> PyResult<PyRepoIndex> {
        let localizer = Arc::clone(&self.inner);
        let inner = run(py, move || localizer.index(&repo))?;
        Ok(PyRepoIndex {
            inner: Arc::new(inner),
            built_with: self.inner.index_settings(),
        })
    }

    /// Answers a request (`schemas/localize-request.schema.json`), indexing its repository.
    ///
    /// Args:
    ///     request_json: the request as JSON text.
    ///
    /// Returns:
    ///     The result as JSON text (`schemas/localize-result.schema.json`).
    fn localize(&self, py: Python<'_>, request_json: Text) -> PyResult<String> {
        let localizer = Arc::clone(&self.inner);
        let request = request_json.to_owned();
        run(py, move || {
            to_json(&localizer.localize(&LocalizeRequest::from_json(&request)?)?)
        })
    }

    /// Answers a request in a prebuilt index of its repository.
    ///
    /// Args:
    ///     index: the index of the request's repository.
    ///     request_json: the request as JSON text.
    fn localize_in(
        &self,
        py: Python<'_>,
        index: &PyRepoIndex,
        request_json: Text,
    ) -> PyResult<String> {
        let request = LocalizeRequest::from_json(&request_json).map_err(to_py)?;
        self.inner
            .check_index(&index.built_with, &index.inner, &request)
            .map_err(to_py)?;
        if request.is_quick() {
            if index.inner.dense.is_some() {
                // The query is embedded on the core's thread pool, which a fork does not copy.
                cancel::refuse_after_fork().map_err(to_py)?;
            }
            return cancel::run_short(
                py,
                || to_json(&self.inner.localize_in(&index.inner, &request)?),
                to_py,
            );
        }
        let localizer = Arc::clone(&self.inner);
        let index = Arc::clone(&index.inner);
        run(py, move || {
            to_json(&localizer.localize_in(&index, &request)?)
        })
    }
}

/// Cache hits, misses and discarded entries, by name, as Python receives them.
type CacheCounts = std::collections::HashMap<&'static str, usize>;

fn text_kind(kind: &str) -> PyResult<blagent_core::embed::TextKind> {
    blagent_core::embed::TextKind::from_name(kind).map_err(to_py)
}

/// A sentence encoder loaded from a model folder.
#[pyclass(name = "Encoder", module = "blagent._core", frozen)]
struct PyEncoder {
    inner: Arc<blagent_core::embed::Encoder>,
}

#[pymethods]
impl PyEncoder {
    /// Args:
    ///     model_dir: a sentence-transformers / Hugging Face model folder.
    ///     precision: "auto" (the one BLAGENT_ENCODER_PRECISION names, else bf16 on AMX tiles
    ///         where the CPU has them, else int8 by AVX-512 VNNI where it has AVX-512 BF16
    ///         and VNNI, else bf16 dot products on AMD CPUs with AVX-512 BF16, else f32), "f32",
    ///         "bf16-amx", "bf16-avx512" or "int8-avx512".
    #[new]
    #[pyo3(signature = (model_dir, precision="auto"))]
    fn new(py: Python<'_>, model_dir: PathBuf, precision: &str) -> PyResult<Self> {
        let precision = blagent_core::embed::Precision::parse(precision)
            .map_err(|e| to_py(Error::InvalidInput(e)))?;
        let inner = run(py, move || {
            blagent_core::embed::Encoder::load_with(&model_dir, None, precision)
        })?;
        Ok(PyEncoder {
            inner: Arc::new(inner),
        })
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

    /// The precision of the linear layers: "f32", "bf16-amx", "bf16-avx512" or "int8-avx512".
    #[getter]
    fn precision(&self) -> &'static str {
        self.inner.precision().name()
    }

    /// Embeds texts; one vector per text.
    ///
    /// Args:
    ///     texts: the texts.
    ///     kind: "document" or "query" (models with task prefixes embed them differently).
    #[pyo3(signature = (texts, kind="document"))]
    fn embed(&self, py: Python<'_>, texts: Vec<Text>, kind: &str) -> PyResult<Vec<Vec<f32>>> {
        let kind = text_kind(kind)?;
        let encoder = Arc::clone(&self.inner);
        run(py, move || {
            let refs: Vec<&str> = texts.iter().map(|text| text.0.as_str()).collect();
            encoder.embed(&refs, kind)
        })
    }

    /// Embeds texts through the on-disk cache under `cache_dir`: cached vectors are read,
    /// the others computed and stored.
    ///
    /// Args:
    ///     texts: the texts.
    ///     cache_dir: blagent's cache folder (the one dense retrieval uses).
    ///     kind: "document" or "query".
    ///
    /// Returns:
    ///     (vectors, {"hits": int, "misses": int, "discarded": int})
    #[pyo3(signature = (texts, cache_dir, kind="document"))]
    fn embed_cached(
        &self,
        py: Python<'_>,
        texts: Vec<Text>,
        cache_dir: PathBuf,
        kind: &str,
    ) -> PyResult<(Vec<Vec<f32>>, CacheCounts)> {
        let kind = text_kind(kind)?;
        let encoder = Arc::clone(&self.inner);
        let (vectors, stats) = run(py, move || {
            let refs: Vec<&str> = texts.iter().map(|text| text.0.as_str()).collect();
            let cache = blagent_core::embed::EmbeddingCache::in_cache_dir(
                &cache_dir,
                &encoder.folder().identity,
            )?;
            cache.embed(&encoder, &refs, kind)
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
    inner: Arc<LlmClient>,
}

#[pymethods]
impl PyLlmClient {
    /// Args:
    ///     config_json: the configuration as JSON (`LlmConfig` fields: base_url, model, api_key,
    ///         temperature, seed, max_tokens, connect_timeout_s, request_timeout_s, max_retries,
    ///         backoff_base_ms, max_concurrency, prices, tokenizer, replay, record); unset
    ///         base_url, model and api_key are read from BLAGENT_LLM_BASE_URL,
    ///         BLAGENT_LLM_MODEL and BLAGENT_LLM_API_KEY. None is "{}".
    ///
    /// Raises:
    ///     InputError: the configuration is invalid.
    #[new]
    #[pyo3(signature = (config_json=None))]
    fn new(py: Python<'_>, config_json: Option<Text>) -> PyResult<Self> {
        let config = config_json.map_or_else(|| "{}".to_owned(), |text| text.0);
        let inner = run(py, move || LlmClient::from_json(&config))?;
        Ok(PyLlmClient {
            inner: Arc::new(inner),
        })
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
    fn chat(&self, py: Python<'_>, messages_json: Text, stage: Text) -> PyResult<String> {
        let invalid = |e: String| to_py(Error::InvalidInput(format!("invalid messages: {e}")));
        let items: Vec<serde_json::Value> = blagent_core::json::value(&messages_json)
            .and_then(serde_json::from_value)
            .map_err(|e| invalid(e.to_string()))?;
        if items.is_empty() {
            return Err(invalid("no message in the list".to_owned()));
        }
        // Each an object: serde would read a message from a list of its fields too.
        let messages = items
            .into_iter()
            .map(blagent_core::json::from_object_value::<Message>)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| invalid(e.to_string()))?;
        let client = Arc::clone(&self.inner);
        let stage = stage.to_owned();
        run(py, move || to_json(&client.chat(&stage, messages)?))
    }

    /// Tokens, calls and estimated cost so far, per stage and in total, as JSON.
    fn usage_json(&self) -> PyResult<String> {
        to_json(&self.inner.usage()).map_err(to_py)
    }
}

/// Runs an evaluation; returns the report as JSON.
///
/// Args:
///     config_json: `EvalConfig` as JSON (dataset, repos, ids, options, top_k, out,
///         signals_out, progress, queries, pipeline).
///     llm_options_json: `LlmOptions` as JSON, for the LLM pipelines.
///     llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON).
#[pyfunction]
#[pyo3(signature = (config_json, llm_options_json=None, llm_config_json=None))]
fn evaluate(
    py: Python<'_>,
    config_json: Text,
    llm_options_json: Option<Text>,
    llm_config_json: Option<Text>,
) -> PyResult<String> {
    let llm = (llm_options_json.as_deref(), llm_config_json.as_deref());
    run_job_json::<EvalJob>(py, &config_json, llm.0, llm.1)
}

/// Calibrates a model's trust on labelled instances and writes its profile; returns the
/// report as JSON (`profile`, `out`, `missing_trees`, `failures`, `no_gold`, `llm`, `seconds`).
///
/// Args:
///     config_json: `CalibrateConfig` as JSON (dataset, repos, ids, options, top_k, pipeline,
///         folds, out, progress).
///     llm_options_json: `LlmOptions` as JSON.
///     llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON): an endpoint or a
///         cassette.
#[pyfunction]
#[pyo3(signature = (config_json, llm_options_json=None, llm_config_json=None))]
fn calibrate(
    py: Python<'_>,
    config_json: Text,
    llm_options_json: Option<Text>,
    llm_config_json: Option<Text>,
) -> PyResult<String> {
    let mut config: CalibrateConfig = parse_required("calibration config", &config_json)?;
    let llm = (llm_options_json.as_deref(), llm_config_json.as_deref());
    run_with_llm(py, &config_json, llm, move |_, llm| {
        config.run.llm = llm;
        to_json(&run_calibration(&config)?)
    })
}

/// Localizes many instances into an Agentless `loc_outputs.jsonl`; returns the report as JSON.
///
/// Resumable: instances already in `out` are skipped. A failing instance is recorded in
/// `failures_out` and the report, and the others go on.
///
/// Args:
///     config_json: `BatchConfig` as JSON (dataset, repos, out, failures_out, ids, options,
///         top_k, granularity, pipeline, progress).
///     llm_options_json: `LlmOptions` as JSON, for the LLM pipelines.
///     llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON).
#[pyfunction]
#[pyo3(signature = (config_json, llm_options_json=None, llm_config_json=None))]
fn batch(
    py: Python<'_>,
    config_json: Text,
    llm_options_json: Option<Text>,
    llm_config_json: Option<Text>,
) -> PyResult<String> {
    let llm = (llm_options_json.as_deref(), llm_config_json.as_deref());
    run_job_json::<BatchJob>(py, &config_json, llm.0, llm.1)
}

/// `evaluate` and `batch`: the job `J` read from its config and LLM settings, and run; its
/// report as JSON.
fn run_job_json<J: Job>(
    py: Python<'_>,
    config_json: &str,
    llm_options_json: Option<&str>,
    llm_config_json: Option<&str>,
) -> PyResult<String> {
    let llm = (llm_options_json, llm_config_json);
    run_with_llm(py, config_json, llm, |json, llm| {
        to_json(&run_job::<J>(&parse_config::<J>(json, llm)?)?)
    })
}

/// Finds, for every unresolved instance of an APR run, the first stage that failed (file,
/// function, line, patch generation); returns the analysis as JSON (`summary`, `instances`,
/// `warnings`, and `outputs`: the files written to `out_dir`).
///
/// Args:
///     config_json: `AnalysisConfig` as JSON (dataset, locs, predictions, report, repos,
///         top_k, out_dir).
#[pyfunction]
fn analyze_failures(py: Python<'_>, config_json: Text) -> PyResult<String> {
    let config: AnalysisConfig = parse_required("analysis config", &config_json)?;
    run(py, move || to_json(&run_analysis(&config)?))
}

/// Compares localization runs with paired significance; returns the report as JSON.
///
/// Args:
///     config_json: `CompareConfig` as JSON (dataset, runs, peers, peer_names, ids,
///         resamples, seed).
#[pyfunction]
fn compare(py: Python<'_>, config_json: Text) -> PyResult<String> {
    let config: blagent_core::eval::CompareConfig = parse_required("compare config", &config_json)?;
    run(py, move || {
        to_json(&blagent_core::eval::compare_runs(&config)?)
    })
}

/// The bytes of the regular file `path`, at most `limit` of them: the core's bounded read of a
/// file the user named (a FIFO, device or socket is refused without blocking on it).
///
/// Args:
///     path: the file.
///     limit: the most bytes read; a larger file is refused.
///     what: what the file is, as messages name it ("issue file", "ids file").
///
/// Raises:
///     InputError: `path` is missing, not a regular file, or larger than `limit`.
///     BlagentIOError: it exists but cannot be read.
#[pyfunction]
fn read_user_file(
    py: Python<'_>,
    path: PathBuf,
    limit: u64,
    what: Text,
) -> PyResult<Bound<'_, pyo3::types::PyBytes>> {
    let read = || blagent_core::repo::read::read_user_bytes(&path, limit, &what);
    let bytes = cancel::run_short(py, read, to_py)?;
    Ok(pyo3::types::PyBytes::new(py, &bytes))
}

/// Checks a request's JSON text as `Localizer.localize` reads it, answering nothing: an error
/// gives positions in this text (a caller that changes the request before sending it checks
/// the user's text first).
///
/// Args:
///     request_json: the request as JSON text.
#[pyfunction]
fn check_request(py: Python<'_>, request_json: Text) -> PyResult<()> {
    let request = request_json.0;
    run(py, move || LocalizeRequest::from_json(&request).map(drop))
}

/// Parses a file's text into chunks, symbols and skeleton; returns JSON.
///
/// Args:
///     path: repository-relative path (selects the language by extension).
///     text: the file's contents. A Kotlin text without a final newline is read with one
///         added (its grammar needs it), so a chunk may end one byte past the text.
#[pyfunction]
fn parse_source(py: Python<'_>, path: Text, text: Text) -> PyResult<String> {
    let (path, text) = (path.0, text.0);
    run(py, move || {
        let language = blagent_core::repo::language_for_path(&path)
            .ok_or_else(|| Error::InvalidInput(format!("no supported language for {path}")))?;
        let file = blagent_core::repo::SourceFile::new(path, language, text, false);
        to_json(&blagent_core::chunk::parse_file(
            &file,
            &blagent_core::chunk::ChunkOptions::default(),
        ))
    })
}

/// Notes, in a child just after a fork, whether a blagent call was running in a thread of its
/// parent: the child then refuses every call (`blagent` registers it with
/// `os.register_at_fork(after_in_child=...)`).
#[pyfunction]
fn _note_fork_in_child() {
    cancel::note_fork_in_child();
}

/// The kernel set OpenBLAS chose when the module loaded (`Haswell`, `Zen`, `SkylakeX`, ...; an
/// old generic one such as `Prescott` means it did not know the CPU).
#[pyfunction]
fn blas_core() -> String {
    blagent_core::embed::blas_core()
}

/// The precision an encoder loaded now runs its linear layers in: the one
/// BLAGENT_ENCODER_PRECISION names (f32, bf16-amx, bf16-avx512 or int8-avx512), else
/// "bf16-amx" on CPUs with AMX, "int8-avx512" on other CPUs with AVX-512 BF16 and VNNI,
/// "bf16-avx512" on AMD CPUs with AVX-512 BF16 alone, "f32" elsewhere. InputError where the
/// variable names no precision this CPU runs.
#[pyfunction]
fn encoder_precision() -> PyResult<&'static str> {
    blagent_core::embed::Precision::from_environment()
        .map(blagent_core::embed::Precision::name)
        .map_err(|e| to_py(Error::InvalidInput(e)))
}

/// The threads the encoder runs on: `workers` (blagent's own pool) and `candle` (candle's
/// element-wise operations; None until an encoder has loaded), both the CPUs this process may
/// use unless RAYON_NUM_THREADS (or CANDLE_NUM_THREADS for candle) says otherwise. Starts no
/// thread.
#[pyfunction]
fn thread_counts(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let (workers, candle) = blagent_core::embed::thread_counts();
    let d = pyo3::types::PyDict::new(py);
    d.set_item("workers", workers)?;
    d.set_item("candle", candle)?;
    Ok(d)
}

/// The core's default for each setting the Python API and the CLI offer.
fn defaults(py: Python<'_>) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    use blagent_core::{dense, eval, interface, repo, Pipeline};
    let d = pyo3::types::PyDict::new(py);
    d.set_item("pipeline", Pipeline::default().name())?;
    d.set_item("granularity", interface::Granularity::default().name())?;
    d.set_item("index_kind", dense::VectorIndexKind::default().name())?;
    d.set_item("dense_max_tokens", dense::DEFAULT_MAX_TOKENS)?;
    d.set_item("folds", eval::DEFAULT_FOLDS)?;
    d.set_item("resamples", eval::DEFAULT_RESAMPLES)?;
    d.set_item("max_issue_bytes", repo::read::MAX_ISSUE_BYTES)?;
    d.set_item("history_commits", repo::history::DEFAULT_MAX_COMMITS)?;
    Ok(d)
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
    m.add("MAX_TIMEOUT_S", blagent_core::llm::MAX_TIMEOUT_S)?;
    m.add("MAX_RESAMPLES", blagent_core::eval::MAX_RESAMPLES)?;
    m.add(
        "PIPELINES",
        blagent_core::Pipeline::ALL.map(blagent_core::Pipeline::name),
    )?;
    m.add("DEFAULT_TOP_K", blagent_core::interface::DEFAULT_TOP_K)?;
    m.add(
        "GRANULARITIES",
        blagent_core::interface::Granularity::ALL.map(blagent_core::interface::Granularity::name),
    )?;
    m.add("INDEX_KINDS", blagent_core::dense::VectorIndexKind::NAMES)?;
    m.add("JOB_KINDS", blagent_core::eval::JOB_KINDS)?;
    m.add("DEFAULTS", defaults(py)?)?;
    m.add(
        "LANGUAGES",
        blagent_core::repo::LANGUAGES
            .iter()
            .map(|l| l.name)
            .collect::<Vec<_>>(),
    )?;
    m.add(
        "DEFAULT_ANALYSIS_TOP_K",
        blagent_core::analysis::DEFAULT_ANALYSIS_TOP_K,
    )?;
    m.add(
        "LLM_CONFIG_FLAGS",
        to_json(&blagent_core::llm::config_flags()).map_err(to_py)?,
    )?;
    m.add(
        "EXIT_CODES",
        blagent_core::ErrorKind::ALL
            .map(|kind| (kind.name(), kind.exit_code()))
            .into_iter()
            .collect::<std::collections::BTreeMap<_, _>>(),
    )?;
    m.add("ERROR_CLASSES", errors::exception_classes(py))?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_class::<PyLocalizer>()?;
    m.add_class::<PyRepoIndex>()?;
    m.add_class::<PyEncoder>()?;
    m.add_class::<PyLlmClient>()?;
    m.add_class::<distributed::PyJobWorker>()?;
    m.add_class::<distributed::PyJobSink>()?;
    m.add_function(wrap_pyfunction!(_note_fork_in_child, m)?)?;
    m.add_function(wrap_pyfunction!(evaluate, m)?)?;
    m.add_function(wrap_pyfunction!(batch, m)?)?;
    m.add_function(wrap_pyfunction!(calibrate, m)?)?;
    m.add_function(wrap_pyfunction!(analyze_failures, m)?)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(check_request, m)?)?;
    m.add_function(wrap_pyfunction!(parse_source, m)?)?;
    m.add_function(wrap_pyfunction!(read_user_file, m)?)?;
    m.add_function(wrap_pyfunction!(blas_core, m)?)?;
    m.add_function(wrap_pyfunction!(encoder_precision, m)?)?;
    m.add_function(wrap_pyfunction!(thread_counts, m)?)?;
    Ok(())
}
