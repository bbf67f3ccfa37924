"""The driver loop of a distributed run: a worker per slot, each kept busy with up to
`DEPTH` instances (one running, the next queued on it so it never waits for the driver), each
outcome given to the core's sink the moment it arrives. A worker that dies has its running
instance given out again, at most `MAX_RETRIES` times, then recorded as `worker_lost`; the
instances queued behind it go back without counting; a new worker takes its slot."""

from __future__ import annotations

import json
import os
import sys
import time
from types import ModuleType
from typing import Any

from .. import _core
from .actors import LlmPermits, Worker
from .schedule import Item, Scheduler
from .slots import Job, Slot, Stats

#: Times an instance is given out again after its worker died on it.
MAX_RETRIES = 2
#: Instances given to a worker at once.
DEPTH = 2
#: Seconds between looks at the outcomes (a Ctrl-C is seen within this).
POLL_S = 0.25
#: Seconds without a ready worker between the notes that the driver is waiting for one.
WAIT_NOTE_S = 15.0
#: Workers of a slot that may die before they are ready, in a row, before the slot is given up.
MAX_START_FAILURES = 3


class Driver:
    """Runs one job on the connected cluster (see the module documentation)."""

    def __init__(self, ray: ModuleType, job: Job, workers: int, cpus_per_worker: int) -> None:
        self.ray, self.job, self.cpus = ray, job, cpus_per_worker
        self.slots = [Slot(i) for i in range(workers)]
        self.permits = LlmPermits.remote(job.permits) if job.uses_llm else None  # type: ignore[attr-defined]
        self.live: dict[Any, Slot] = {}
        # Workers are named actors (`<run>-worker-<slot>.<generation>`), so they can be found.
        self.stats = Stats(run=f"blagent-{os.getpid()}-{int(time.time())}", workers=workers)
        self.sink: Any = None
        self.scheduler = Scheduler([])

    def run(self) -> tuple[dict[str, Any], Stats]:
        """The core's report once every instance has its outcome, and the stats."""
        started = time.monotonic()
        try:
            for slot in self.slots:
                self._start(slot)
            self._await_first()
            self.sink = self.job.open_sink()
            items = self.job.items(self.sink)
            self.scheduler = Scheduler(items)
            ready = time.monotonic()
            self.stats.startup_seconds = ready - started
            self._loop()
            self.stats.run_seconds = time.monotonic() - ready
            if self.permits is not None:
                self.stats.llm_permits = self.ray.get(self.permits.stats.remote())
            report: dict[str, Any] = json.loads(self.sink.finish())
            if self.job.kind == "batch":
                # A batch's failures come as instances finish; a local batch lists them in the
                # dataset's order (an evaluation adds its outcomes up in that order already).
                place = {item.instance_id: i for i, item in enumerate(items)}
                report["failures"].sort(key=lambda failure: place[failure["instance_id"]])
            return report, self.stats
        finally:
            for slot in self.slots:
                self._kill(slot.actor)
            self._kill(self.permits)
            # The core's sink holds the outputs open: dropped here, not when the traceback that
            # holds this driver goes (a stop by SIGTERM ends the process first), so that an
            # output it created and never wrote, and its new files, are removed (a review).
            self.sink = None

    def _kill(self, actor: Any) -> None:
        if actor is not None:
            try:
                self.ray.kill(actor, no_restart=True)
            except Exception:  # already gone
                pass

    def _start(self, slot: Slot) -> None:
        """A new worker in `slot`; it gets instances once its `ready` probe says it can work."""
        slot.generation += 1
        name = f"{self.stats.run}-{slot.holder}"
        slot.actor = Worker.options(num_cpus=self.cpus, name=name).remote(  # type: ignore[attr-defined]
            self.job.kind,
            *self.job.worker_args(),
            self.permits,
            slot.holder,
            self.cpus,
        )
        slot.probe = slot.actor.ready.remote()
        self.live[slot.probe] = slot

    def _await_first(self) -> None:
        """Waits for the first worker to be ready (the others join when they are): its error,
        a bad option or model, is the run's, before any output is touched. While none is (the
        cluster's CPUs are taken), a note says so every `WAIT_NOTE_S`; Ctrl-C stops the wait."""
        probes = [slot.probe for slot in self.slots]
        ready: list[Any] = []
        started = time.monotonic()
        note_at = started + WAIT_NOTE_S
        while not ready:
            ready, _ = self.ray.wait(probes, num_returns=1, timeout=POLL_S)
            if not ready and time.monotonic() >= note_at:
                free = self.ray.available_resources().get("CPU", 0)
                print(
                    f"blagent: waiting for a Ray worker to start ({time.monotonic() - started:.0f} "
                    f"s so far): each reserves {self.cpus} CPU(s), the cluster has {free:g} free; "
                    "Ctrl-C stops",
                    file=sys.stderr,
                )
                note_at += WAIT_NOTE_S
        slot = self.live.pop(ready[0])
        try:
            error = self.ray.get(ready[0])
        except self.ray.exceptions.RayError as err:
            raise _core.BlagentIOError(f"a Ray worker could not start: {err}") from err
        if error is not None:
            name, message = error
            raise getattr(_core, name, _core.BlagentError)(message)
        slot.probe = None

    def _fill(self) -> None:
        for slot in self.slots:
            while not slot.retired and slot.probe is None and len(slot.inflight) < DEPTH:
                item = self.scheduler.next_for(slot.index)
                if item is None:
                    break
                ref = slot.actor.run.remote(item.instance_id, item.payload, self.job.uses_llm)
                slot.inflight.append((ref, item))
                self.live[ref] = slot
                if len(slot.inflight) == 1:
                    self.sink.started(item.instance_id)

    def _loop(self) -> None:
        while True:
            self._fill()
            if not any(slot.inflight for slot in self.slots):
                if not self.scheduler.remaining():
                    return
                if all(slot.retired for slot in self.slots):
                    raise _core.BlagentIOError(
                        "every Ray worker slot was given up (its workers could not start); the "
                        "output holds what was done, run the same command again to resume"
                    )
            ready, _ = self.ray.wait(list(self.live), num_returns=1, timeout=POLL_S)
            for ref in ready:
                slot = self.live.pop(ref, None)
                if slot is not None:
                    self._settle(slot, ref)

    def _settle(self, slot: Slot, ref: Any) -> None:
        exceptions = self.ray.exceptions
        try:
            value = self.ray.get(ref)
        except exceptions.RayTaskError as err:  # the method raised: the instance failed
            if ref is slot.probe:
                self._died(slot, err)
                return
            self._raised(slot, ref, err)
            return
        except exceptions.RayError as err:  # the worker died, or its result was lost
            self._died(slot, err)
            return
        if ref is slot.probe:
            slot.probe = None
            if value is not None:
                self._retire(slot, f"its worker could not start: {value[1]}")
            return
        self._pop(slot, ref)
        self.sink.record(value)
        slot.start_failures = 0
        if slot.inflight:
            self.sink.started(slot.inflight[0][1].instance_id)

    def _raised(self, slot: Slot, ref: Any, err: Exception) -> None:
        """The worker's method raised on the instance of `ref`: that instance failed."""
        item = self._pop(slot, ref)
        cause = getattr(err, "cause", None) or err
        self.job.failed(
            self.sink, item, "internal", f"the Ray worker raised {type(cause).__name__}: {cause}"
        )

    def _pop(self, slot: Slot, ref: Any) -> Item:
        for i, (r, item) in enumerate(slot.inflight):
            if r is ref:
                del slot.inflight[i]
                return item
        raise _core.InternalError("an outcome came from a worker that was not given its instance")

    def _died(self, slot: Slot, err: Exception) -> None:
        """A worker died: its running instance counts an attempt, the rest go back."""
        self.stats.worker_deaths += 1
        self._harvest(slot)
        was_ready = slot.probe is None
        items = [item for _, item in slot.inflight]
        for ref, _ in slot.inflight:
            self.live.pop(ref, None)
        if slot.probe is not None:
            self.live.pop(slot.probe, None)
        slot.inflight.clear()
        slot.probe = None
        if self.permits is not None:
            self.permits.forget.remote(slot.holder)
        self._kill(slot.actor)
        reason = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        if items and was_ready:
            head = items[0]
            head.attempts += 1
            if head.attempts > MAX_RETRIES:
                items = items[1:]
                self.stats.lost += 1
                self.job.failed(
                    self.sink,
                    head,
                    "worker_lost",
                    f"its Ray worker died {head.attempts} times while working on it ({reason})",
                )
            else:
                self.stats.retried += 1
                self.sink.note(
                    f"Ray worker {slot.index} died on {head.instance_id} ({reason}); "
                    f"given out again (retry {head.attempts} of {MAX_RETRIES})"
                )
        self.scheduler.give_back(slot.index, items)
        slot.start_failures += 0 if was_ready else 1
        if slot.start_failures >= MAX_START_FAILURES:
            self._retire(
                slot,
                f"its workers died {slot.start_failures} times before they were ready ({reason})",
            )
        else:
            self._start(slot)

    def _harvest(self, slot: Slot) -> None:
        """Settles the outcomes a dead worker finished before it died and the driver had not yet
        taken, so that the first instance left in its queue is the one it died on (a worker
        runs its instances in order) and no finished outcome is thrown away."""
        refs = [ref for ref, _ in slot.inflight]
        if not refs:
            return
        done, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        exceptions = self.ray.exceptions
        for ref in done:
            try:
                value = self.ray.get(ref)
            except exceptions.RayTaskError as err:  # the method raised: that instance failed
                self.live.pop(ref, None)
                self._raised(slot, ref, err)
                continue
            except exceptions.RayError:  # died on it: the instance it was on
                continue
            self._pop(slot, ref)
            self.live.pop(ref, None)
            self.sink.record(value)

    def _retire(self, slot: Slot, why: str) -> None:
        slot.retired = True
        self.scheduler.give_back(slot.index, [item for _, item in slot.inflight])
        for ref, _ in slot.inflight:
            self.live.pop(ref, None)
        slot.inflight.clear()
        self._kill(slot.actor)
        self.sink.note(f"Ray worker slot {slot.index} given up: {why}")
