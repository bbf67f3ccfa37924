"""blagent: file-level bug localization for automated program repair.

    >>> from blagent import Localizer
    >>> result = Localizer(top_k=5).localize("path/to/repo", "TypeError in QuerySet.filter ...")
    >>> result.paths
"""

from ._core import (
    INTERFACE_SCHEMA_VERSION,
    SCHEMA_VERSION,
    BlagentError,
    BlagentIOError,
    InputError,
    InternalError,
    LlmClient,
    LlmError,
    ModelError,
    RepoIndex,
    __version__,
)
from .interface import (
    Entity,
    FileHit,
    FileLocalizer,
    Hints,
    LocalizationResult,
    LocalizeRequest,
    LocalizerInfo,
    TokenUsage,
)
from .localizer import Localizer, default_weights
from .results import Evidence, LocalizeResult, RankedFile, Skipped

__all__ = [
    "INTERFACE_SCHEMA_VERSION",
    "SCHEMA_VERSION",
    "BlagentError",
    "BlagentIOError",
    "Entity",
    "Evidence",
    "FileHit",
    "FileLocalizer",
    "Hints",
    "InputError",
    "InternalError",
    "LocalizationResult",
    "LocalizeRequest",
    "LocalizeResult",
    "LlmClient",
    "LlmError",
    "ModelError",
    "Localizer",
    "LocalizerInfo",
    "RankedFile",
    "RepoIndex",
    "Skipped",
    "TokenUsage",
    "__version__",
    "default_weights",
]
