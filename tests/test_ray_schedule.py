"""What `--ray` does before any cluster: which worker gets which instance (by repository,
largest groups first, the tail shared), and the error when Ray is not installed. Runs without
Ray."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from blagent._ray.schedule import Item, Scheduler, repository_of


def test_ray_needs_ray_installed_and_says_how(tmp_path: Path) -> None:
    """A `ray` that cannot be imported (as when the extra is not installed) is bad input, with
    the command that installs it, before anything is written."""
    fake = tmp_path / "no-ray" / "ray" / "__init__.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("raise ImportError('ray is not here')\n")
    tree = tmp_path / "trees" / "a__b-1"
    tree.mkdir(parents=True)
    (tree / "a.py").write_text("def f():\n    return 1\n")
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(
        json.dumps({"instance_id": "a__b-1", "problem_statement": "f is wrong"}) + "\n"
    )
    out = tmp_path / "out.jsonl"
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(fake.parent.parent), os.environ.get("PYTHONPATH", "")]),
    }
    args = [
        "batch",
        "--dataset",
        str(dataset),
        "--repos",
        str(tmp_path / "trees"),
        "--out",
        str(out),
        "--ray",
    ]
    proc = subprocess.run(
        [sys.executable, "-m", "blagent", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert proc.returncode == 1, proc.stderr
    assert "pip install 'blagent[ray]'" in proc.stderr
    assert not out.exists()
    record = [*args, "--llm-base-url", "http://127.0.0.1:9", "--llm-model", "m", "--llm-record"]
    refused = subprocess.run(
        [sys.executable, "-m", "blagent", *record, str(tmp_path / "c.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert refused.returncode == 1 and "--llm-record cannot be used with --ray" in refused.stderr
    local = subprocess.run(
        [sys.executable, "-m", "blagent", *args[:-1]],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert local.returncode == 0, local.stderr  # without --ray, Ray is never imported


def _items(spec: list[tuple[str, int]]) -> list[Item]:
    return [Item(f"{repo}-{i}", repo, "{}") for repo, n in spec for i in range(n)]


def test_scheduler_keeps_a_repository_on_one_worker_largest_first_and_shares_the_tail() -> None:
    scheduler = Scheduler(_items([("small", 1), ("big", 6), ("mid", 3)]))
    take: Callable[[int], Item | None] = scheduler.next_for
    assert [take(0).repository for _ in range(2)] == ["big", "big"]  # type: ignore[union-attr]
    assert take(1).repository == "mid"  # type: ignore[union-attr]
    assert [take(1).instance_id for _ in range(2)] == ["mid-1", "mid-2"]  # type: ignore[union-attr]
    assert take(1).repository == "small"  # type: ignore[union-attr]
    # Nothing pending: worker 1 takes the back half of worker 0's group (big-2..big-5).
    assert [take(1).instance_id for _ in range(2)] == ["big-4", "big-5"]  # type: ignore[union-attr]
    scheduler.give_back(1, [Item("big-5", "big", "{}")])
    assert [take(2).instance_id for _ in range(1)] == ["big-5"]  # type: ignore[union-attr]
    assert [take(0).instance_id for _ in range(2)] == ["big-2", "big-3"]  # type: ignore[union-attr]
    assert take(0) is None and take(1) is None and scheduler.remaining() == 0


def test_repository_of_reads_the_repo_field_or_the_swe_bench_id() -> None:
    assert (
        repository_of({"instance_id": "django__django-11099", "repo": "django/django"})
        == "django/django"
    )
    assert repository_of({"instance_id": "django__django-11099"}) == "django__django"
    assert repository_of({"instance_id": "square/okhttp/6452/6460"}) == "square"


class _FakeRay:
    """A `ray` module whose `init` does what a test says (a signal, an error) and records
    whether the cluster was shut down."""

    def __init__(self, during_init: Callable[[], None]) -> None:
        self.during_init, self.shut = during_init, False
        # As Ray's `ray.init` does first: SIGTERM made to call `sys.exit`.
        import signal
        import types

        def set_sigterm_handler(handler: Callable[[int], None]) -> None:
            signal.signal(signal.SIGTERM, lambda _signum, _frame: handler(0))

        utils = types.SimpleNamespace(set_sigterm_handler=set_sigterm_handler)
        self._private = types.SimpleNamespace(utils=utils)

    def is_initialized(self) -> bool:
        return False

    def init(self, **_options: object) -> None:
        self._private.utils.set_sigterm_handler(sys.exit)
        self.during_init()

    def shutdown(self) -> None:
        self.shut = True


def test_a_stop_while_the_local_cluster_starts_waits_for_it_and_stops_it() -> None:
    """Found by a review: a Ctrl-C that landed in `ray.init` ended the driver by SIGSEGV and
    left the cluster's agents running. Now the stop is held until the cluster has started,
    which is then shut down, and the run ends as interrupted."""
    import signal

    import pytest
    from blagent._ray import cluster

    for signum, stopped_by in ((signal.SIGINT, None), (signal.SIGTERM, signal.SIGTERM)):
        fake = _FakeRay(lambda signum=signum: os.kill(os.getpid(), signum))
        # The handlers of a run started at a terminal: started under nohup or in the
        # background, pytest inherits SIGINT ignored, which the code rightly leaves alone.
        interactive = signal.default_int_handler if signum == signal.SIGINT else signal.SIG_DFL
        saved = signal.signal(signum, interactive)
        try:
            with (
                pytest.raises(KeyboardInterrupt) as stopped,
                contextlib.contextmanager(cluster._connected)(fake, None),
            ):
                raise AssertionError("the run goes on after a stop")
            after = signal.getsignal(signum)
        finally:
            signal.signal(signum, saved)
        assert fake.shut and getattr(stopped.value, "signum", None) == stopped_by
        assert after == interactive


def test_a_cluster_address_where_nothing_listens_or_ray_cannot_read_is_refused() -> None:
    """Found by a review: `--ray 127.0.0.1:1` waited without end (Ray retries for minutes),
    and an address Ray cannot read was an I/O error, not bad input."""
    import socket

    import pytest
    from blagent import BlagentIOError, InputError
    from blagent._ray import cluster

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]  # bound, not listening: the connection is refused
        fake = _FakeRay(lambda: None)
        with (
            pytest.raises(BlagentIOError, match="cannot reach"),
            contextlib.contextmanager(cluster._connected)(fake, f"127.0.0.1:{port}"),
        ):
            pass

    def unreadable() -> None:
        raise ValueError("not an address")

    with (
        pytest.raises(InputError, match="not an address"),
        contextlib.contextmanager(cluster._connected)(_FakeRay(unreadable), "not an address"),
    ):
        pass


def test_a_local_cluster_gets_a_token_of_its_own_and_leaves_the_environment_as_it_was(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found by reviews: Ray wrote a token to ~/.ray/auth_token (readable by every user, kept
    and reused), and `ray.init`'s own `RAY_AUTH_MODE=token` stayed in the environment, which
    the next run took for the user's setting."""
    from blagent._ray import cluster

    seen: list[str | None] = []

    def during_init() -> None:
        seen.append(os.environ.get("RAY_AUTH_TOKEN"))
        os.environ.setdefault("RAY_AUTH_MODE", "token")  # as Ray 2.60's ray.init does

    for name in cluster.RAY_AUTH_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(cluster, "import_ray", lambda local: _FakeRay(during_init))
    for _ in range(2):
        with cluster.connected(None):
            pass
        assert not [name for name in cluster.RAY_AUTH_VARIABLES if name in os.environ]
    assert len(seen) == 2 and all(t and len(t) == 64 for t in seen) and seen[0] != seen[1]
    # The user's settings are Ray's to read: nothing added, nothing taken away.
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    with cluster.connected(None):
        pass
    assert seen[-1] is None and os.environ["RAY_AUTH_MODE"] == "disabled"
