"""The one result type, as typed Python objects: `LocalizationResult.from_dict` reads the JSON the
core returns (`schemas/localize-result.schema.json`) and `to_dict()` writes it back, whichever
pipeline ranked the files (and whichever localizer: other localizers build these too)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ._core import DEFAULTS as _DEFAULTS
from ._core import SCHEMA_VERSION


@dataclass(frozen=True)
class Evidence:
    """One reason a file is ranked: the signal, its raw contribution, and where it points."""

    signal: str
    score: float
    detail: str
    lines: tuple[int, int] | None = None
    symbol: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Evidence:
        lines = d.get("lines")
        return cls(
            d["signal"], d["score"], d["detail"], tuple(lines) if lines else None, d.get("symbol")
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"signal": self.signal, "score": self.score, "detail": self.detail}
        if self.lines is not None:
            out["lines"] = list(self.lines)
        if self.symbol is not None:
            out["symbol"] = self.symbol
        return out


@dataclass(frozen=True)
class FileHit:
    """A ranked file: rank, path, fused score, raw signal scores, evidence, whether hinted, and
    what each signal added to its LLM-free fused score (they sum to it)."""

    rank: int
    path: str
    score: float
    signals: dict[str, float] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    hinted: bool = False
    contributions: dict[str, float] = field(default_factory=dict)

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
            dict(d.get("contributions", {})),
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "rank": self.rank,
            "path": self.path,
            "score": self.score,
            "signals": dict(self.signals),
            "contributions": dict(self.contributions),
            "evidence": [e.to_dict() for e in self.evidence],
            "hinted": self.hinted,
        }


@dataclass(frozen=True)
class Entity:
    """A class, function or method of a returned file: `id` is `path::Class.method`; what each
    feature added to its LLM-free function score (they sum to it; empty for one only the model
    named)."""

    id: str
    path: str
    name: str
    kind: str
    lines: tuple[int, int]
    score: float
    file_rank: int
    contributions: dict[str, float] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Entity:
        lines = (int(d["lines"][0]), int(d["lines"][1]))
        return cls(
            d["id"],
            d["path"],
            d["name"],
            d["kind"],
            lines,
            d["score"],
            d["file_rank"],
            dict(d.get("contributions", {})),
        )

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "lines": list(self.lines)}


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

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, **self.detail}


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
    files: list[FileHit]
    pipeline: str = _DEFAULTS["pipeline"]
    granularity: str = _DEFAULTS["granularity"]
    entities: list[Entity] | None = None
    query: dict[str, Any] = field(default_factory=dict)
    skipped: list[Skipped] = field(default_factory=list)
    stats: dict[str, Any] = field(default_factory=dict)
    timings: dict[str, Any] = field(default_factory=dict)
    usage: TokenUsage = field(default_factory=TokenUsage)
    warnings: list[str] = field(default_factory=list)
    llm: dict[str, Any] | None = None
    schema_version: str = SCHEMA_VERSION

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LocalizationResult:
        entities = d.get("entities")
        return cls(
            instance_id=d["instance_id"],
            localizer=LocalizerInfo(**d["localizer"]),
            pipeline=d.get("pipeline", _DEFAULTS["pipeline"]),
            granularity=d.get("granularity", _DEFAULTS["granularity"]),
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
        )

    @property
    def paths(self) -> list[str]:
        """Ranked paths, best first."""
        return [f.path for f in self.files]

    def to_dict(self) -> dict[str, Any]:
        """The result as JSON data (`schemas/localize-result.schema.json`), as the CLI prints it."""
        out: dict[str, Any] = {
            "schema_version": self.schema_version,
            "instance_id": self.instance_id,
            "localizer": asdict(self.localizer),
            "pipeline": self.pipeline,
            "granularity": self.granularity,
            "files": [f.to_dict() for f in self.files],
            "query": self.query,
            "skipped": [s.to_dict() for s in self.skipped],
            "stats": self.stats,
            "timings": dict(self.timings),
            "usage": asdict(self.usage),
            "warnings": list(self.warnings),
        }
        if self.entities is not None:
            out["entities"] = [e.to_dict() for e in self.entities]
        if self.llm is not None:
            out["llm"] = self.llm
        return out


# The names of the result types before schema 1.1, when the LLM-free and the standardized
# results were two types.
LocalizeResult = LocalizationResult
RankedFile = FileHit
