"""Which worker gets which instance: instances grouped by repository, a group taken whole by
one worker (so its instances share that worker's loaded model, its node's embedding cache and
the page cache of the repository's files), the largest groups first; a worker with no group
left takes the back half of the largest group another worker still holds, so the run does not
end waiting on one worker. Plain Python, no Ray: the driver asks and tells, this decides."""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

#: A SWE-bench id is `owner__name-number`: its repository is the part before the number.
_NUMBERED_ID = re.compile(r"^(?P<repo>.+)-\d+$")


def repository_of(instance: dict[str, object]) -> str:
    """The repository an instance belongs to: its `repo` field, else its id without the
    trailing `-number` (SWE-bench ids), else its id's first path component (nested ids)."""
    repo = instance.get("repo")
    if isinstance(repo, str) and repo:
        return repo
    iid = str(instance.get("instance_id", ""))
    match = _NUMBERED_ID.match(iid)
    if match:
        return match.group("repo")
    return iid.split("/", 1)[0]


@dataclass
class Item:
    """One instance to do: its payload (the job's item as JSON, for the worker and for a
    failure recorded in its place), and how often a worker died on it."""

    instance_id: str
    repository: str
    payload: str
    attempts: int = 0


@dataclass
class Group:
    """The instances of one repository not yet given out, in dataset order."""

    repository: str
    items: deque[Item] = field(default_factory=deque)


class Scheduler:
    """Hands out items to workers by repository (see the module documentation)."""

    def __init__(self, items: list[Item]) -> None:
        groups: dict[str, Group] = {}
        for item in items:
            groups.setdefault(item.repository, Group(item.repository)).items.append(item)
        # Largest first, ties in dataset order: the long groups start early.
        self._pending: list[Group] = sorted(groups.values(), key=lambda g: -len(g.items))
        self._held: dict[int, Group] = {}

    def remaining(self) -> int:
        """Items not given out yet."""
        return sum(len(g.items) for g in self._pending) + sum(
            len(g.items) for g in self._held.values()
        )

    def next_for(self, worker: int) -> Item | None:
        """The next item for `worker`: from its group, else a new group, else half of the
        largest group another worker holds; None when nothing is left."""
        group = self._held.get(worker)
        if group is None or not group.items:
            group = self._take_group(worker)
            if group is None:
                return None
        return group.items.popleft()

    def _take_group(self, worker: int) -> Group | None:
        self._held.pop(worker, None)
        if self._pending:
            group = self._pending.pop(0)
        else:
            donor = max(self._held.values(), key=lambda g: len(g.items), default=None)
            if donor is None or len(donor.items) < 2:
                return None
            half = len(donor.items) // 2
            stolen = [donor.items.pop() for _ in range(half)]
            group = Group(donor.repository, deque(reversed(stolen)))
        self._held[worker] = group
        return group

    def give_back(self, worker: int, items: list[Item]) -> None:
        """Returns items a worker could not finish (it died), first in line again: they go back
        to the front of that worker's group, which is released for the next worker to take."""
        group = self._held.pop(worker, None)
        if not items and group is None:
            return
        if group is None:
            group = Group(items[0].repository)
        for item in reversed(items):
            group.items.appendleft(item)
        if group.items:
            self._pending.insert(0, group)
