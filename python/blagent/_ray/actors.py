"""The Ray actors of a distributed run: a long-lived worker per slot, holding the core's
per-item half (`_core.JobWorker`, so its localizer and embedding
model load once), and one semaphore of LLM permits for the whole cluster. Imported only once
Ray is (see `cluster.import_ray`)."""

from __future__ import annotations

import asyncio
import os
import time
from collections import Counter
from typing import Any

import ray


@ray.remote(concurrency_groups={"status": 1}, max_restarts=0, max_task_retries=0)  # type: ignore[call-overload]
class Worker:
    """Localizes (or evaluates) the instances it is given, one at a time; `status` answers
    while it works (its own concurrency group).

    Args:
        kind: the job, one of `_core.JOB_KINDS`.
        config_json: the run's config, as for `_core.batch` / `_core.evaluate`.
        llm_options_json: LLM pipeline options as JSON, or None.
        llm_config_json: the LLM endpoint configuration as JSON, or None.
        permits: the run's `LlmPermits` actor, or None when no instance uses an LLM.
        holder: this worker's name for the permits it holds.
        threads: threads for the core's parallel work (its share of the node's CPUs).
    """

    def __init__(
        self,
        kind: str,
        config_json: str,
        llm_options_json: str | None,
        llm_config_json: str | None,
        permits: Any,
        holder: str,
        threads: int,
    ) -> None:
        # Read when the core first runs parallel work, which is after this.
        os.environ.setdefault("RAYON_NUM_THREADS", str(max(1, threads)))
        from blagent import _core
        from blagent._llm_flags import ENVIRONMENT

        # The driver sent the whole LLM configuration, its own environment included: this
        # node's variables must not add an endpoint, model or key to it (this process is the
        # actor's own).
        for name in ENVIRONMENT.values():
            os.environ.pop(name, None)

        self._permits = permits
        self._holder = holder
        self._current: tuple[str, float] | None = None
        self._error: tuple[str, str] | None = None
        self._run: Any = None
        try:
            self._run = _core.JobWorker(kind, config_json, llm_options_json, llm_config_json).run
        except _core.BlagentError as err:
            self._error = (type(err).__name__, str(err))

    def ready(self) -> tuple[str, str] | None:
        """None when the worker can work, else its error's class name and message."""
        return self._error

    @ray.method(concurrency_group="status")
    def status(self) -> dict[str, Any]:
        """The worker's process id, name, and the instance it is on (with since when)."""
        current = self._current
        return {
            "pid": os.getpid(),
            "holder": self._holder,
            "instance_id": current[0] if current else None,
            "seconds": time.monotonic() - current[1] if current else None,
        }

    def run(self, instance_id: str, payload: str, llm: bool) -> str:
        """The outcome (JSON) of one instance; holds an LLM permit meanwhile when `llm`."""
        if self._error is not None:
            raise RuntimeError(f"this worker could not start: {self._error[1]}")
        self._current = (instance_id, time.monotonic())
        try:
            if not llm or self._permits is None:
                return str(self._run(payload))
            if not ray.get(self._permits.acquire.remote(self._holder)):
                raise RuntimeError(f"{self._holder} was given up by the driver")
            try:
                return str(self._run(payload))
            finally:
                self._permits.release.remote(self._holder)
        finally:
            self._current = None


@ray.remote(num_cpus=0)
class LlmPermits:
    """A counting semaphore for the run's LLM-mode instances, cluster-wide: a worker holds one
    permit per instance, and blagent's LLM pipelines send one request at a time per instance,
    so at most `permits` requests are in flight across the cluster. Permits of a worker that
    died are returned by the driver (`forget`)."""

    def __init__(self, permits: int) -> None:
        self._permits = permits
        self._semaphore: asyncio.Semaphore | None = None
        self._held: Counter[str] = Counter()
        self._gone: set[str] = set()
        self._granted = 0
        self._peak = 0

    def _sem(self) -> asyncio.Semaphore:
        # Made on the actor's event loop (Python 3.9 binds a semaphore to the current loop).
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self._permits)
        return self._semaphore

    async def acquire(self, holder: str) -> bool:
        """Waits for a permit; False (none taken) when `holder` was forgotten meanwhile."""
        await self._sem().acquire()
        if holder in self._gone:
            self._sem().release()
            return False
        self._held[holder] += 1
        self._granted += 1
        self._peak = max(self._peak, sum(self._held.values()))
        return True

    async def release(self, holder: str) -> None:
        """Returns one permit of `holder`."""
        if self._held[holder] > 0:
            self._held[holder] -= 1
            self._sem().release()

    async def forget(self, holder: str) -> None:
        """Returns every permit of a dead worker, and refuses it any more."""
        self._gone.add(holder)
        for _ in range(self._held.pop(holder, 0)):
            self._sem().release()

    async def stats(self) -> dict[str, int]:
        """Permits, permits granted so far, and the most held at once."""
        return {"permits": self._permits, "granted": self._granted, "peak": self._peak}
