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
from dataclasses import dataclass, field
from typing import Any, Optional, Protocol, Union, runtime_checkable

from ._core import INTERFACE_SCHEMA_VERSION, InputError
from .results import Evidence

PathLike = Union[str, "os.PathLike[str]"]

GRANULARITIES = ("file", "function")


def _check_paths(files: Any) -> None:
    """Refuses a string where a list of paths is expected (it would be read as its characters)."""
    if isinstance(files, (str, bytes, os.PathLike)) or not all(isinstance(f, str) for f in files):
        raise InputError(f"Hints.files must be a list of path strings, not {files!r}")


@dataclass(frozen=True)
class Hints:
    """What the caller already suspects.

    Args:
        files: repository-relative paths. Each indexed one is scored as if the issue named its
            full path (its `path_mention` signal raised to 1: a boost of at most the
            `path_mention` fusion weight, 3.0 by default) and carries `hint` evidence; the
            others are reported in `warnings`.
        language: the repository's main language; an unsupported one is reported in `warnings`.
    """

    files: list[str] = field(default_factory=list)
    language: Optional[str] = None

    def __post_init__(self) -> None:
        _check_paths(self.files)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"files": list(self.files)}
        if self.language is not None:
            out["language"] = self.language
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Hints:
        files = d.get("files", [])
        return cls(files if isinstance(files, (str, bytes)) else list(files), d.get("language"))


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
    """

    instance_id: str
    repo_path: str
    issue: str
    hints: Hints = field(default_factory=Hints)
    top_k: int = 10
    granularity: str = "file"
    schema_version: str = INTERFACE_SCHEMA_VERSION

    def to_dict(self) -> dict[str, Any]:
        """The request as JSON data (`schemas/localize-request.schema.json`)."""
        return {
            "schema_version": self.schema_version,
            "instance_id": self.instance_id,
            "repo_path": os.fspath(self.repo_path),
            "issue": self.issue,
            "hints": self.hints.to_dict(),
            "top_k": self.top_k,
            "granularity": self.granularity,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LocalizeRequest:
        return cls(
            instance_id=d["instance_id"],
            repo_path=d["repo_path"],
            issue=d["issue"],
            hints=Hints.from_dict(d.get("hints", {})),
            top_k=d.get("top_k", 10),
            granularity=d.get("granularity", "file"),
            schema_version=d.get("schema_version", INTERFACE_SCHEMA_VERSION),
        )


def _evidence_dict(e: Evidence) -> dict[str, Any]:
    out: dict[str, Any] = {"signal": e.signal, "score": e.score, "detail": e.detail}
    if e.lines is not None:
        out["lines"] = list(e.lines)
    if e.symbol is not None:
        out["symbol"] = e.symbol
    return out


@dataclass(frozen=True)
class FileHit:
    """A ranked file: rank, path, fused score, raw signal scores, evidence, whether hinted."""

    rank: int
    path: str
    score: float
    signals: dict[str, float] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    hinted: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "path": self.path,
            "score": self.score,
            "signals": dict(self.signals),
            "evidence": [_evidence_dict(e) for e in self.evidence],
            "hinted": self.hinted,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FileHit:
        evidence = [Evidence.from_dict(e) for e in d.get("evidence", [])]
        return cls(
            d["rank"],
            d["path"],
            d["score"],
            dict(d.get("signals", {})),
            evidence,
            d.get("hinted", False),
        )


@dataclass(frozen=True)
class Entity:
    """A class, function or method of a returned file: `id` is `path::Class.method`."""

    id: str
    path: str
    name: str
    kind: str
    lines: tuple[int, int]
    score: float
    file_rank: int

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "lines": list(self.lines)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Entity:
        return cls(
            d["id"], d["path"], d["name"], d["kind"], tuple(d["lines"]), d["score"], d["file_rank"]
        )  # type: ignore[arg-type]


@dataclass(frozen=True)
class TokenUsage:
    """LLM tokens spent; all zero in LLM-free mode."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0


@dataclass(frozen=True)
class LocalizerInfo:
    """Who answered: name, version and mode (`llm-free` or the model used)."""

    name: str
    version: str
    mode: str


@dataclass(frozen=True)
class LocalizationResult:
    """The answer to one request (`schemas/localize-result.schema.json`)."""

    instance_id: str
    localizer: LocalizerInfo
    files: list[FileHit]
    granularity: str = "file"
    entities: Optional[list[Entity]] = None
    timings: dict[str, float] = field(default_factory=dict)
    usage: TokenUsage = field(default_factory=TokenUsage)
    warnings: list[str] = field(default_factory=list)
    schema_version: str = INTERFACE_SCHEMA_VERSION

    @property
    def paths(self) -> list[str]:
        """Ranked paths, best first."""
        return [f.path for f in self.files]

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON data."""
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "instance_id": self.instance_id,
            "localizer": dict(self.localizer.__dict__),
            "granularity": self.granularity,
            "files": [f.to_dict() for f in self.files],
            "timings": dict(self.timings),
            "usage": dict(self.usage.__dict__),
            "warnings": list(self.warnings),
        }
        if self.entities is not None:
            out["entities"] = [e.to_dict() for e in self.entities]
        return out

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LocalizationResult:
        entities = d.get("entities")
        return cls(
            instance_id=d["instance_id"],
            localizer=LocalizerInfo(**d["localizer"]),
            files=[FileHit.from_dict(f) for f in d["files"]],
            granularity=d.get("granularity", "file"),
            entities=None if entities is None else [Entity.from_dict(e) for e in entities],
            timings=dict(d.get("timings", {})),
            usage=TokenUsage(**d.get("usage", {})),
            warnings=list(d.get("warnings", [])),
            schema_version=d["schema_version"],
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
