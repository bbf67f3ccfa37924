"""Typed views of the JSON the core returns. `to_dict()` gives back exactly that JSON."""

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
class RankedFile:
    """A file of the ranking, with its fused score, per-signal scores and evidence."""

    rank: int
    path: str
    score: float
    signals: dict[str, float]
    evidence: list[Evidence]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RankedFile:
        evidence = [Evidence.from_dict(e) for e in d["evidence"]]
        return cls(d["rank"], d["path"], d["score"], dict(d["signals"]), evidence)


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
class LocalizeResult:
    """The ranking for one issue, with the reformulated query and index statistics."""

    schema_version: str
    files: list[RankedFile]
    query: dict[str, Any]
    skipped: list[Skipped]
    stats: dict[str, Any]
    timings: dict[str, float]
    raw: dict[str, Any] = field(repr=False, compare=False, default_factory=dict)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LocalizeResult:
        return cls(
            schema_version=d["schema_version"],
            files=[RankedFile.from_dict(f) for f in d["files"]],
            query=d["query"],
            skipped=[Skipped.from_dict(s) for s in d["skipped"]],
            stats=d["stats"],
            timings=d["timings"],
            raw=d,
        )

    @property
    def paths(self) -> list[str]:
        """Ranked paths, best first."""
        return [f.path for f in self.files]

    @property
    def llm(self) -> Optional[dict[str, Any]]:
        """The `llm` section of an LLM pipeline's result (pipeline, model, tokens per stage, parse
        failures, retries, fallbacks, the model's evidence per file); None in LLM-free mode."""
        return self.raw.get("llm")

    def to_dict(self) -> dict[str, Any]:
        """The JSON object the CLI prints."""
        return self.raw
