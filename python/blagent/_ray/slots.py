"""The driver's bookkeeping: the job it runs (a batch or an evaluation, one of
`_core.JOB_KINDS`), its worker slots and what the cluster did."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from .. import _core
from .schedule import Item, repository_of


@dataclasses.dataclass
class Job:
    """A batch or an evaluation, as the driver runs it: the core's job kind and configuration
    as JSON, as given (the driver's sink reads and writes here, and reports the paths as a
    local run does); its sink, items and lost instances are the same for each kind."""

    kind: str
    config_json: str
    llm_options_json: str | None
    llm_config_json: str | None
    uses_llm: bool
    permits: int
    #: The workers' configuration, options and LLM configuration: the same with every path
    #: absolute (a worker's folder is not the driver's); None: the three above.
    worker_jsons: tuple[str, str | None, str | None] | None = None

    def worker_args(self) -> tuple[str, str | None, str | None]:
        """What a worker is given (see `worker_jsons`)."""
        return self.worker_jsons or (self.config_json, self.llm_options_json, self.llm_config_json)

    def open_sink(self) -> Any:
        """The core's sink of the run (`_core.JobSink`), with the workers' LLM settings, so
        that no output is what they read."""
        return _core.JobSink(
            self.kind, self.config_json, self.llm_options_json, self.llm_config_json
        )

    def items(self, sink: Any) -> list[Item]:
        """The sink's items to do."""
        return [
            Item(
                entry["instance"]["instance_id"],
                repository_of(entry["instance"]),
                json.dumps(entry["item"]),
            )
            for entry in json.loads(sink.todo_json())
        ]

    def failed(self, sink: Any, item: Item, kind: str, message: str) -> None:
        """Records that `item` has no outcome from a worker (`kind`: `worker_lost` or
        `internal`)."""
        sink.record_failure(item.payload, kind, message)


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
