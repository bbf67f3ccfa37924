"""The two halves of a batch and an evaluation as the Ray driver uses them from Python
(`_core.JobWorker` / `JobSink`, one pair for both jobs): outcomes recorded out of order
write what `batch` and `evaluate` write, a lost instance is a failure, and what a sink cannot
take is an `InputError`. No Ray needed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from blagent import InputError, _core


@pytest.fixture
def run_dir(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    trees = tmp_path / "trees"
    trees.mkdir()
    rows = []
    for i, issue in enumerate(["apply_discount fails", "Cart.total is wrong", "Inventory.reserve"]):
        (trees / f"shop-{i}").symlink_to(repo, target_is_directory=True)
        row = {"instance_id": f"shop-{i}", "repo": "acme/shop", "problem_statement": issue}
        rows.append({**row, "gold_files": ["shop/pricing.py"]})
    dataset = tmp_path / "data.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dataset, trees


def _batch_config(run_dir: tuple[Path, Path], out: Path) -> str:
    dataset, trees = run_dir
    failures = out.with_suffix(".failures.jsonl")
    config = {"dataset": str(dataset), "repos": str(trees), "out": str(out)}
    return json.dumps({**config, "failures_out": str(failures), "top_k": 3})


def _without_timings(path: Path) -> dict[str, object]:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line["blagent"]["timings"] = None
    return {line["instance_id"]: line for line in lines}


def test_batch_halves_write_the_batch_lines_and_a_lost_instance(
    run_dir: tuple[Path, Path], tmp_path: Path
) -> None:
    local = tmp_path / "local.jsonl"
    assert json.loads(_core.batch(_batch_config(run_dir, local)))["written"] == 3
    out = tmp_path / "split.jsonl"
    config = _batch_config(run_dir, out)
    worker, sink = _core.JobWorker("batch", config), _core.JobSink("batch", config)
    todo = json.loads(sink.todo_json())
    assert [entry["instance"]["instance_id"] for entry in todo] == ["shop-0", "shop-1", "shop-2"]
    assert all(entry["item"] == entry["instance"] for entry in todo)
    outcomes = [worker.run(json.dumps(entry["item"])) for entry in todo[:2]]
    for outcome in reversed(outcomes):
        sink.record(outcome)
    with pytest.raises(InputError, match="not pending"):
        sink.record(outcomes[0])
    with pytest.raises(InputError, match="invalid batch outcome"):
        sink.record("{}")
    sink.record_failure(json.dumps(todo[2]["item"]), "worker_lost", "its Ray worker died 3 times")
    report = json.loads(sink.finish())
    assert (report["written"], [f["kind"] for f in report["failures"]]) == (2, ["worker_lost"])
    expected = _without_timings(local)
    assert _without_timings(out) == {k: v for k, v in expected.items() if k != "shop-2"}
    with pytest.raises(InputError, match="finished"):
        sink.todo_json()


def test_eval_halves_add_up_in_order_whatever_order_outcomes_come(
    run_dir: tuple[Path, Path], tmp_path: Path
) -> None:
    dataset, trees = run_dir
    config = {"dataset": str(dataset), "repos": str(trees), "top_k": 3}
    local = json.loads(_core.evaluate(json.dumps({**config, "out": str(tmp_path / "local.jsonl")})))
    split = json.dumps({**config, "out": str(tmp_path / "split.jsonl")})
    worker, sink = _core.JobWorker("eval", split), _core.JobSink("eval", split)
    items = [entry["item"] for entry in json.loads(sink.todo_json())]
    assert [item["position"] for item in items] == [0, 1, 2]
    for item in reversed(items):
        sink.record(worker.run(json.dumps(item)))
    report = json.loads(sink.finish())
    assert report["overall"] == local["overall"] and report["overall"]["instances"] == 3
    ids = [
        json.loads(line)["instance_id"]
        for line in (tmp_path / "split.jsonl").read_text().splitlines()
    ]
    assert ids == ["shop-0", "shop-1", "shop-2"]

    lost = _core.JobSink("eval", split)
    lost.record_failure(json.dumps(items[1]), "worker_lost", "its Ray worker died 3 times")
    wrong = {**items[0], "instance": {**items[0]["instance"], "instance_id": "shop-0x"}}
    with pytest.raises(InputError, match="is not shop-0x"):
        lost.record_failure(json.dumps(wrong), "worker_lost", "wrong id")
    with pytest.raises(InputError, match="have no outcome"):
        lost.finish()


def test_an_unknown_job_kind_is_an_input_error(run_dir: tuple[Path, Path], tmp_path: Path) -> None:
    assert _core.JOB_KINDS == ["batch", "eval"]
    config = _batch_config(run_dir, tmp_path / "out.jsonl")
    for make in (lambda: _core.JobWorker("calibrate", config), lambda: _core.JobSink("x", config)):
        with pytest.raises(InputError, match="unknown job"):
            make()


def test_two_threads_on_one_sink_do_not_deadlock(repo: Path, tmp_path: Path) -> None:
    """Found by a review: a thread holding the GIL waited for the sink's lock while the other
    held the lock and waited for the GIL, and the interpreter hung (Ctrl-C unheard)."""
    import subprocess
    import sys
    import textwrap

    trees = tmp_path / "trees"
    trees.mkdir()
    rows = []
    for i in range(2000):
        (trees / f"shop-{i}").symlink_to(repo, target_is_directory=True)
        rows.append({"instance_id": f"shop-{i}", "problem_statement": "Cart.total is wrong"})
    dataset = tmp_path / "data.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = {"dataset": str(dataset), "repos": str(trees), "out": str(tmp_path / "out.jsonl")}
    child = textwrap.dedent(f"""
        import json, threading, time
        from blagent import _core
        sink = _core.JobSink("batch", {json.dumps(json.dumps(config))})
        end = time.monotonic() + 3
        def loop():
            while time.monotonic() < end:
                sink.todo_json()
        threads = [threading.Thread(target=loop) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        print("done")
    """)
    done = subprocess.run(
        [sys.executable, "-c", child], capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout.strip() == "done", done.stderr
