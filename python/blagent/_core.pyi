"""Type stubs of the native module (rust/blagent-py). Results cross as JSON text."""

from os import PathLike
from typing import Optional, final

from typing_extensions import Self

__all__ = [
    "BlagentError",
    "InputError",
    "BlagentIOError",
    "InternalError",
    "ModelError",
    "LlmError",
    "SCHEMA_VERSION",
    "PIPELINES",
    "LANGUAGES",
    "DEFAULT_TOP_K",
    "DEFAULT_ANALYSIS_TOP_K",
    "LLM_CONFIG_FLAGS",
    "__version__",
    "Localizer",
    "RepoIndex",
    "Encoder",
    "LlmClient",
    "evaluate",
    "batch",
    "calibrate",
    "analyze_failures",
    "compare",
    "reformulate",
    "parse_source",
    "blas_core",
]

__version__: str
SCHEMA_VERSION: str
PIPELINES: list[str]
#: The languages blagent indexes, by name: python, java, kotlin.
LANGUAGES: list[str]
DEFAULT_TOP_K: int
DEFAULT_ANALYSIS_TOP_K: int
#: The `--llm-*` flags as JSON: [{"flag", "key", "kind", "metavar", "help"}].
LLM_CONFIG_FLAGS: str

class BlagentError(Exception): ...
class InputError(BlagentError): ...
class BlagentIOError(BlagentError): ...
class InternalError(BlagentError): ...
class LlmError(BlagentError): ...
class ModelError(BlagentError): ...

@final
class Encoder:
    def __new__(cls, model_dir: "str | PathLike[str]") -> Self: ...
    @property
    def dimension(self) -> int: ...
    @property
    def identity(self) -> str: ...
    def embed(self, texts: list[str], kind: str = "document") -> list[list[float]]: ...
    def embed_cached(
        self, texts: list[str], cache_dir: "str | PathLike[str]", kind: str = "document"
    ) -> tuple[list[list[float]], dict[str, int]]: ...

@final
class LlmClient:
    def __new__(cls, config_json: str = "{}") -> Self: ...
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
        options_json: Optional[str] = None,
        llm_options_json: Optional[str] = None,
        llm_config_json: Optional[str] = None,
    ) -> Self: ...
    def options_json(self) -> str: ...
    def index(self, repo: "str | PathLike[str]") -> RepoIndex: ...
    def localize(self, request_json: str) -> str: ...
    def localize_in(self, index: RepoIndex, request_json: str) -> str: ...

def evaluate(
    config_json: str,
    llm_options_json: Optional[str] = None,
    llm_config_json: Optional[str] = None,
) -> str: ...
def batch(
    config_json: str,
    llm_options_json: Optional[str] = None,
    llm_config_json: Optional[str] = None,
) -> str: ...
def calibrate(
    config_json: str,
    llm_options_json: Optional[str] = None,
    llm_config_json: Optional[str] = None,
) -> str: ...
def analyze_failures(config_json: str) -> str: ...
def compare(config_json: str) -> str: ...
def reformulate(issue: str) -> str: ...
def parse_source(path: str, text: str) -> str: ...
def blas_core() -> str: ...
