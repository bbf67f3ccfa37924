"""The driver's bookkeeping: the job it runs (a batch or an evaluation), its worker slots and
what the cluster did."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .. import _core
from .schedule import Item, repository_of


@dataclasses.dataclass
class Job:
    """A batch or an evaluation, as the driver runs it: the core's configuration as JSON, and
    how its sink, items and lost instances are handled for each kind."""

    kind: str
    config_json: str
    llm_options_json: str | None
    llm_config_json: str | None
    uses_llm: bool
    permits: int

    def open_sink(self) -> Any:
        """The core's sink of the run (`_core.BatchSink` or `_core.EvalSink`)."""
        if self.kind == "batch":
            return _core.BatchSink(self.config_json)
        return _core.EvalSink(self.config_json)

    def items(self, sink: Any) -> list[Item]:
        """The sink's instances to do, as items."""
        rows = json.loads(sink.todo_json())
        if self.kind == "batch":
            return [
                Item(row["instance_id"], row["instance_id"], repository_of(row), json.dumps(row))
                for row in rows
            ]
        return [
            Item(
                row["position"],
                row["instance"]["instance_id"],
                repository_of(row["instance"]),
                json.dumps(row),
            )
            for row in rows
        ]

    def failed(self, sink: Any, item: Item, kind: str, message: str) -> None:
        """Records that `item` has no outcome from a worker (`kind`: `worker_lost` or
        `internal`)."""
        if self.kind == "batch":
            sink.record_failure(item.instance_id, kind, message)
        else:
            sink.record_failure(item.key, item.instance_id, message)


@dataclasses.dataclass
class Slot:
    """A worker slot: its current actor, what it was given and whether it is ready."""

    index: int
    actor: Any = None
    generation: int = 0
    probe: Any = None
    inflight: list[tuple[Any, Item]] = dataclasses.field(default_factory=list)
    start_failures: int = 0
    retired: bool = False

    @property
    def holder(self) -> str:
        return f"worker-{self.index}.{self.generation}"


@dataclasses.dataclass
class Stats:
    """What the cluster did, for the report's `ray` key."""

    run: str = ""
    workers: int = 0
    worker_deaths: int = 0
    retried: int = 0
    lost: int = 0
    llm_permits: dict[str, int] | None = None
    #: Seconds to connect to (or start) the cluster.
    connect_seconds: float = 0.0
    #: Seconds until the first worker was ready (its localizer loaded) and the output opened.
    startup_seconds: float = 0.0
    #: Seconds from then until the last outcome was written.
    run_seconds: float = 0.0
