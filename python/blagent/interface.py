"""The standardized localizer interface: typed requests and results, and the `FileLocalizer`
protocol that blagent implements and that any other file-level localizer can implement too.

The JSON forms are specified by `schemas/localize-request.schema.json` and
`schemas/localize-result.schema.json`; `to_dict()` writes them and `from_dict()` reads them.

    >>> from blagent import Localizer, LocalizeRequest
    >>> request = LocalizeRequest("django__django-11099", "trees/django__django-11099", issue_text,
    ...                           hints=Hints(files=["django/contrib/auth/validators.py"]))
    >>> result = Localizer().localize_request(request)
    >>> result.paths[:3], result.usage.prompt_tokens
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol, Union, runtime_checkable

from ._core import DEFAULT_TOP_K, SCHEMA_VERSION, InputError
from ._core import DEFAULTS as _DEFAULTS
from .results import LocalizationResult

PathLike = Union[str, "os.PathLike[str]"]


def _check_paths(files: Any) -> list[str]:
    """`files` as a list, refusing a string (it would be read as its characters) or anything
    that is not an iterable of path strings; a generator is read once, here."""
    if isinstance(files, (str, bytes, os.PathLike)) or not isinstance(files, Iterable):
        raise InputError(f"Hints.files must be a list of path strings, not {files!r}")
    listed = list(files)
    if not all(isinstance(f, str) for f in listed):
        raise InputError(f"Hints.files must be a list of path strings, not {listed!r}")
    return listed


def _check_keys(d: dict[str, Any], known: tuple[str, ...], what: str) -> None:
    """Refuses keys of `d` outside `known`, as the request's schema does."""
    unknown = sorted(str(k) for k in d if k not in known)
    if unknown:
        raise InputError(f"{what} has unknown keys: {', '.join(unknown)}")


@dataclass(frozen=True)
class Hints:
    """What the caller already suspects.

    Args:
        files: repository-relative paths. Each indexed one is scored as if the issue named its
            full path (its `path_mention` signal raised to 1: a boost of at most the
            `path_mention` fusion weight) and carries `hint` evidence; the others are reported in
            `warnings`. A single path must still be given as a list.
        language: the repository's main language; an unsupported one is reported in `warnings`.
    """

    files: list[str] = field(default_factory=list)
    language: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", _check_paths(self.files))

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"files": list(self.files)}
        if self.language is not None:
            out["language"] = self.language
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hints:
        _check_keys(d, ("files", "language"), "the request's hints")
        return cls(d.get("files", []), d.get("language"))


@dataclass(frozen=True)
class Rewrites:
    """Structural (T0) and behavioral (T1) rewrites of the issue, written elsewhere (by an LLM,
    or recorded), for the fused pipeline's dense views."""

    structural: str
    behavioral: str

    def __post_init__(self) -> None:
        for name in ("structural", "behavioral"):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"Rewrites.{name} must be a str, not {type(value).__name__}")

    def to_dict(self) -> dict[str, str]:
        return {"structural": self.structural, "behavioral": self.behavioral}

    @classmethod
    def from_dict(cls, d: Any) -> Rewrites:
        if not isinstance(d, dict):
            raise TypeError(f"LocalizeRequest.rewrites must be an object, not {type(d).__name__}")
        missing = [k for k in ("structural", "behavioral") if k not in d]
        if missing:
            raise TypeError(f"LocalizeRequest.rewrites is missing {', '.join(missing)}")
        _check_keys(d, ("structural", "behavioral"), "LocalizeRequest.rewrites")
        return cls(d["structural"], d["behavioral"])


#: The keys of a request (`schemas/localize-request.schema.json`); others are refused.
REQUEST_KEYS = (
    "schema_version",
    "instance_id",
    "repo_path",
    "issue",
    "hints",
    "top_k",
    "granularity",
    "pipeline",
    "rewrites",
)


@dataclass(frozen=True)
class LocalizeRequest:
    """One localization request.

    Args:
        instance_id: the caller's task id (a SWE-bench `instance_id`), echoed in the result.
        repo_path: the repository checkout.
        issue: the issue text.
        hints: files and language the caller suspects.
        top_k: how many files to return.
        granularity: "file", or "function" for `path::Class.method` entities too.
        pipeline: "fused" (LLM-free), or an LLM pipeline, "blagent" or "rrl" (`blagent.PIPELINES`).
        rewrites: T0/T1 rewrites of the issue written elsewhere (dense views of the fused pipeline).
    """

    instance_id: str
    repo_path: str
    issue: str
    hints: Hints = field(default_factory=Hints)
    top_k: int = DEFAULT_TOP_K
    granularity: str = _DEFAULTS["granularity"]
    pipeline: str = _DEFAULTS["pipeline"]
    schema_version: str = SCHEMA_VERSION
    rewrites: Rewrites | None = None

    def __post_init__(self) -> None:
        """Refuses fields of the wrong type with a `TypeError` naming the field."""
        if self.rewrites is not None and not isinstance(self.rewrites, Rewrites):
            raise TypeError(
                f"LocalizeRequest.rewrites must be a Rewrites, not {type(self.rewrites).__name__}"
            )
        if not isinstance(self.hints, Hints):
            raise TypeError(
                f"LocalizeRequest.hints must be a Hints, not {type(self.hints).__name__}: {self.hints!r}"
            )
        for name in (
            "instance_id",
            "repo_path",
            "issue",
            "granularity",
            "pipeline",
            "schema_version",
        ):
            value = getattr(self, name)
            if not isinstance(value, str):
                raise TypeError(f"LocalizeRequest.{name} must be a str, not {type(value).__name__}")
        if not isinstance(self.top_k, int) or isinstance(self.top_k, bool):
            raise TypeError(
                f"LocalizeRequest.top_k must be an int, not {type(self.top_k).__name__}"
            )

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON data (`schemas/localize-request.schema.json`)."""
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "instance_id": self.instance_id,
            "repo_path": os.fspath(self.repo_path),
            "issue": self.issue,
            "hints": self.hints.to_dict(),
            "top_k": self.top_k,
            "granularity": self.granularity,
            "pipeline": self.pipeline,
        }
        if self.rewrites is not None:
            out["rewrites"] = self.rewrites.to_dict()
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LocalizeRequest:
        """The request of JSON data; a missing required field or a field of the wrong type is an
        `InputError`."""
        if not isinstance(d, dict):
            raise InputError(f"a request must be a JSON object, not {type(d).__name__}")
        missing = [k for k in ("repo_path", "issue") if k not in d]
        if missing:
            raise InputError(f"the request is missing {', '.join(missing)}")
        _check_keys(d, REQUEST_KEYS, "the request")
        hints = d.get("hints", {})
        if not isinstance(hints, dict):
            raise InputError(f"the request's hints must be an object, not {type(hints).__name__}")
        try:
            return cls._from_fields(d, hints)
        except TypeError as err:
            raise InputError(str(err)) from err

    @classmethod
    def _from_fields(cls, d: dict[str, Any], hints: dict[str, Any]) -> LocalizeRequest:
        return cls(
            instance_id=d.get("instance_id", ""),
            repo_path=d["repo_path"],
            issue=d["issue"],
            hints=Hints.from_dict(hints),
            top_k=d.get("top_k", DEFAULT_TOP_K),
            granularity=d.get("granularity", _DEFAULTS["granularity"]),
            pipeline=d.get("pipeline", _DEFAULTS["pipeline"]),
            schema_version=d.get("schema_version", SCHEMA_VERSION),
            rewrites=None if d.get("rewrites") is None else Rewrites.from_dict(d["rewrites"]),
        )


@runtime_checkable
class FileLocalizer(Protocol):
    """A file-level localizer an APR pipeline can swap in: one request in, one result out.

    `blagent.Localizer` implements it; so can any other localizer (an LLM agent, a dense
    retriever), and `agentless_adapter` turns any implementation's results into Agentless's
    file-level `loc_outputs.jsonl`.
    """

    def localize_request(self, request: LocalizeRequest) -> LocalizationResult:
        """Rank the files of `request.repo_path` for `request.issue`."""
        ...
