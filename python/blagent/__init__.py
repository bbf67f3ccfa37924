"""blagent: file-level bug localization for automated program repair.

>>> from blagent import Localizer
>>> result = Localizer(top_k=5).localize("path/to/repo", "TypeError in QuerySet.filter ...")
>>> result.paths
"""

import os

# `_start` takes a Ctrl-C while the command starts; it is imported before the native core.
from . import _blas, _start  # noqa: F401

with _blas.prepared():  # OpenBLAS picks its kernels as _core loads it
    from . import _core

if hasattr(os, "register_at_fork"):
    # A child forked while a blagent call runs in another thread refuses every call: that
    # call is left part-way in it for good (a lock or a one-time initialisation held).
    os.register_at_fork(after_in_child=_core._note_fork_in_child)

from ._core import (
    DEFAULT_TOP_K,
    PIPELINES,
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
from .interface import FileLocalizer, Hints, LocalizeRequest, Rewrites
from .localizer import Localizer, default_options, default_weights
from .results import (
    Entity,
    Evidence,
    FileHit,
    LocalizationResult,
    LocalizeResult,
    LocalizerInfo,
    RankedFile,
    Skipped,
    TokenUsage,
)


def blas_status() -> dict[str, object]:
    """The BLAS kernels in use (`core`), the CPU's vector flags, `fallback` (True when the
    kernels are older than the CPU allows: a slow encoder and exact search), and
    `encoder_precision` ("bf16-amx" where the encoder's linear layers run on AMX tiles) and
    `threads`, the encoder's threads (`workers`, and `candle` once an encoder has loaded: the
    CPUs this process may use)."""
    return {
        **_blas.status(_core.blas_core()),
        "encoder_precision": _core.encoder_precision(),
        "threads": _core.thread_counts(),
    }


__all__ = [
    "DEFAULT_TOP_K",
    "PIPELINES",
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
    "LlmClient",
    "LlmError",
    "LocalizationResult",
    "LocalizeRequest",
    "LocalizeResult",
    "Localizer",
    "LocalizerInfo",
    "ModelError",
    "RankedFile",
    "RepoIndex",
    "Rewrites",
    "Skipped",
    "TokenUsage",
    "__version__",
    "blas_status",
    "default_options",
    "default_weights",
]
