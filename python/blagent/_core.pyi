"""Type stubs of the native module (rust/blagent-py). Results cross as JSON text."""

from collections.abc import Sequence
from os import PathLike
from typing import Any, final

from typing_extensions import Self

__all__ = [
    "DEFAULTS",
    "DEFAULT_ANALYSIS_TOP_K",
    "DEFAULT_TOP_K",
    "ERROR_CLASSES",
    "EXIT_CODES",
    "GRANULARITIES",
    "INDEX_KINDS",
    "JOB_KINDS",
    "LANGUAGES",
    "LLM_CONFIG_FLAGS",
    "MAX_RESAMPLES",
    "MAX_TIMEOUT_S",
    "PIPELINES",
    "SCHEMA_VERSION",
    "BlagentError",
    "BlagentIOError",
    "Encoder",
    "InputError",
    "InternalError",
    "JobSink",
    "JobWorker",
    "LlmClient",
    "LlmError",
    "Localizer",
    "ModelError",
    "RepoIndex",
    "__version__",
    "_note_fork_in_child",
    "analyze_failures",
    "batch",
    "blas_core",
    "calibrate",
    "check_request",
    "compare",
    "encoder_precision",
    "evaluate",
    "parse_source",
    "read_user_file",
    "thread_counts",
]

__version__: str
SCHEMA_VERSION: str
#: The longest LLM timeout, in seconds.
MAX_TIMEOUT_S: float
#: The most bootstrap resamples `compare` draws.
MAX_RESAMPLES: int
PIPELINES: list[str]
#: What a result ranks: file, function.
GRANULARITIES: list[str]
#: The dense vector index kinds: exact, hnsw.
INDEX_KINDS: list[str]
#: The jobs a `JobWorker` / `JobSink` runs: batch, eval.
JOB_KINDS: list[str]
#: The core's default of each setting: pipeline, granularity, index_kind, dense_max_tokens,
#: folds, resamples, max_issue_bytes (the default top_k is DEFAULT_TOP_K).
DEFAULTS: dict[str, Any]
#: The languages blagent indexes, by name: python, java, kotlin.
LANGUAGES: list[str]
DEFAULT_TOP_K: int
DEFAULT_ANALYSIS_TOP_K: int
#: The `--llm-*` flags as JSON: [{"flag", "key", "kind", "metavar", "help"}].
LLM_CONFIG_FLAGS: str
#: The CLI's exit code of each error kind: input, io, model, llm, interrupted, internal.
EXIT_CODES: dict[str, int]
#: The exception class of each error kind (the keys of EXIT_CODES): the one table the core raises
#: from, and the CLI maps to exit codes.
ERROR_CLASSES: dict[str, type[BaseException]]

class BlagentError(Exception): ...
class InputError(BlagentError): ...
class BlagentIOError(BlagentError): ...
class InternalError(BlagentError): ...
class LlmError(BlagentError): ...
class ModelError(BlagentError): ...

@final
class Encoder:
    def __new__(cls, model_dir: str | PathLike[str], precision: str = "auto") -> Self: ...
    @property
    def dimension(self) -> int: ...
    @property
    def identity(self) -> str: ...
    @property
    def precision(self) -> str: ...
    def embed(self, texts: list[str], kind: str = "document") -> list[list[float]]: ...
    def embed_cached(
        self, texts: list[str], cache_dir: str | PathLike[str], kind: str = "document"
    ) -> tuple[list[list[float]], dict[str, int]]: ...

@final
class LlmClient:
    def __new__(cls, config_json: str | None = None) -> Self: ...
    @property
    def name(self) -> str: ...
    @property
    def enabled(self) -> bool: ...
    def config_json(self) -> str: ...
    def chat(self, messages_json: str, stage: str) -> str: ...
    def usage_json(self) -> str: ...

@final
class RepoIndex:
    @property
    def num_files(self) -> int: ...
    @property
    def num_chunks(self) -> int: ...
    def chunk_texts(self) -> list[str]: ...
    def timings_json(self) -> str: ...

@final
class Localizer:
    def __new__(
        cls,
        options_json: str | None = None,
        llm_options_json: str | None = None,
        llm_config_json: str | None = None,
        reads: Sequence[str | PathLike[str]] = ...,
    ) -> Self: ...
    def options_json(self) -> str: ...
    def index(self, repo: str | PathLike[str]) -> RepoIndex: ...
    def localize(self, request_json: str) -> str: ...
    def localize_in(self, index: RepoIndex, request_json: str) -> str: ...

@final
class JobWorker:
    def __new__(
        cls,
        kind: str,
        config_json: str,
        llm_options_json: str | None = None,
        llm_config_json: str | None = None,
    ) -> Self: ...
    def run(self, item_json: str) -> str: ...

@final
class JobSink:
    def __new__(
        cls,
        kind: str,
        config_json: str,
        llm_options_json: str | None = None,
        llm_config_json: str | None = None,
    ) -> Self: ...
    def todo_json(self) -> str: ...
    def started(self, instance_id: str) -> None: ...
    def note(self, message: str) -> None: ...
    def record(self, outcome_json: str) -> None: ...
    def record_failure(self, item_json: str, kind: str, error: str) -> None: ...
    def finish(self) -> str: ...

def evaluate(
    config_json: str,
    llm_options_json: str | None = None,
    llm_config_json: str | None = None,
) -> str: ...
def batch(
    config_json: str,
    llm_options_json: str | None = None,
    llm_config_json: str | None = None,
) -> str: ...
def calibrate(
    config_json: str,
    llm_options_json: str | None = None,
    llm_config_json: str | None = None,
) -> str: ...
def analyze_failures(config_json: str) -> str: ...
def compare(config_json: str) -> str: ...
def check_request(request_json: str) -> None: ...
def parse_source(path: str, text: str) -> str: ...
def read_user_file(path: str | PathLike[str], limit: int, what: str) -> bytes: ...
def _note_fork_in_child() -> None: ...
def blas_core() -> str: ...
def encoder_precision() -> str: ...
def thread_counts() -> dict[str, int | None]: ...
