"""What `--ray` does before any cluster: which worker gets which instance (by repository,
largest groups first, the tail shared), and the error when Ray is not installed. Runs without
Ray."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

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
