"""The one result type, as typed Python objects: `LocalizationResult.from_dict` reads the JSON the
core returns (`schemas/localize-result.schema.json`) and `to_dict()` gives back exactly that JSON,
whichever pipeline ranked the files."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional


@dataclass(frozen=True)
class Evidence:
    """One reason a file is ranked: the signal, its raw contribution, and where it points."""

    signal: str
    score: float
    detail: str
    lines: Optional[tuple[int, int]] = None
    symbol: Optional[str] = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Evidence:
        lines = d.get("lines")
        return cls(d["signal"], d["score"], d["detail"], tuple(lines) if lines else None, d.get("symbol"))


@dataclass(frozen=True)
class FileHit:
    """A ranked file: rank, path, fused score, raw signal scores, evidence, whether hinted."""

    rank: int
    path: str
    score: float
    signals: dict[str, float] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    hinted: bool = False

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FileHit:
        evidence = [Evidence.from_dict(e) for e in d.get("evidence", [])]
        return cls(d["rank"], d["path"], d["score"], dict(d.get("signals", {})), evidence, d.get("hinted", False))


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

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Entity:
        lines = (int(d["lines"][0]), int(d["lines"][1]))
        return cls(d["id"], d["path"], d["name"], d["kind"], lines, d["score"], d["file_rank"])


@dataclass(frozen=True)
class Skipped:
    """A file or directory the walk left out, and why (`test`, `binary`, `too_large`, …)."""

    path: str
    reason: str
    detail: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Skipped:
        rest = {k: v for k, v in d.items() if k not in ("path", "reason")}
        return cls(d["path"], d["reason"], rest)


@dataclass(frozen=True)
class TokenUsage:
    """LLM tokens spent; all zero in LLM-free mode."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0


@dataclass(frozen=True)
class LocalizerInfo:
    """Who answered: name, version and mode (`llm-free`, or `llm:PIPELINE:MODEL`)."""

    name: str
    version: str
    mode: str


@dataclass(frozen=True)
class LocalizationResult:
    """The answer to one request: the ranked files with their evidence, and how they came about.

    `files` has `top_k` files when the repository has that many; `llm` is the model's report
    (tokens per stage, parse failures, retries, fallbacks, its weight and evidence per file) for
    the LLM pipelines, None for the fused one.
    """

    instance_id: str
    localizer: LocalizerInfo
    pipeline: str
    granularity: str
    files: list[FileHit]
    entities: Optional[list[Entity]]
    query: dict[str, Any]
    skipped: list[Skipped]
    stats: dict[str, Any]
    timings: dict[str, Any]
    usage: TokenUsage
    warnings: list[str]
    llm: Optional[dict[str, Any]]
    schema_version: str
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LocalizationResult:
        entities = d.get("entities")
        return cls(
            instance_id=d["instance_id"],
            localizer=LocalizerInfo(**d["localizer"]),
            pipeline=d.get("pipeline", "fused"),
            granularity=d.get("granularity", "file"),
            files=[FileHit.from_dict(f) for f in d["files"]],
            entities=None if entities is None else [Entity.from_dict(e) for e in entities],
            query=d.get("query", {}),
            skipped=[Skipped.from_dict(s) for s in d.get("skipped", [])],
            stats=d.get("stats", {}),
            timings=dict(d.get("timings", {})),
            usage=TokenUsage(**d.get("usage", {})),
            warnings=list(d.get("warnings", [])),
            llm=d.get("llm"),
            schema_version=d["schema_version"],
            raw=d,
        )

    @property
    def paths(self) -> list[str]:
        """Ranked paths, best first."""
        return [f.path for f in self.files]

    def to_dict(self) -> dict[str, Any]:
        """The result as the JSON object the core wrote (and the CLI prints)."""
        return self.raw


# The names of the result types before schema 1.1, when the LLM-free and the standardized
# results were two types.
LocalizeResult = LocalizationResult
RankedFile = FileHit
