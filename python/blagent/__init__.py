"""blagent: file-level bug localization for automated program repair.

    >>> from blagent import Localizer
    >>> result = Localizer(top_k=5).localize("path/to/repo", "TypeError in QuerySet.filter ...")
    >>> result.paths
"""

from ._core import (
    SCHEMA_VERSION,
    BlagentError,
    BlagentIOError,
    InputError,
    InternalError,
    RepoIndex,
    __version__,
)
from .localizer import Localizer, default_weights
from .results import Evidence, LocalizeResult, RankedFile, Skipped

__all__ = [
    "SCHEMA_VERSION",
    "BlagentError",
    "BlagentIOError",
    "Evidence",
    "InputError",
    "InternalError",
    "LocalizeResult",
    "Localizer",
    "RankedFile",
    "RepoIndex",
    "Skipped",
    "__version__",
    "default_weights",
]
