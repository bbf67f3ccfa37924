"""`blagent batch --ray` and `blagent eval --ray` on a real local Ray cluster started here
(127.0.0.1, no dashboard, 2 CPUs): the same lines and rankings as a local run, a worker
killed mid-instance (its instance retried, every instance written once), a bounded number of
retries, a Ctrl-C'd driver resumed without a duplicate or a loss, LLM requests limited across
the cluster. (The scheduler and the error without Ray: test_ray_schedule.py.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from ray_support import (
    CLI,
    INSTANCES,
    SLOW,
    SlowServer,
    address,
    batch_args,
    by_id,
    cli,
    kill_on,
    lines,
    write_dataset,
)

# Ray binds to 127.0.0.1 only in its non-cluster mode, read when it is first imported.
os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The dataset (see `ray_support.write_dataset`) and its trees."""
    return write_dataset(tmp_path_factory.mktemp("ray-data"))


@pytest.fixture(scope="module")
def ray() -> Any:
    """Ray, or the module's tests skipped."""
    return pytest.importorskip(
        "ray", reason="Ray is not installed (pip install 'blagent[ray]'; make test installs it)"
    )


@pytest.fixture(scope="module")
def cluster(ray: Any) -> Iterator[Any]:
    """A local Ray cluster for the module (127.0.0.1, no dashboard, 2 CPUs); this process is
    connected to it as well, to find and kill workers."""
    ray.init(
        address="local",
        num_cpus=2,
        include_dashboard=False,
        namespace="blagent-tests",
        log_to_driver=False,
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def local_lines(
    dataset: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    out = tmp_path_factory.mktemp("local") / "loc_outputs.jsonl"
    proc = cli(*batch_args(dataset, out, "--quiet"))
    assert proc.returncode == 0, proc.stderr
    lines = by_id(out)
    assert len(lines) == INSTANCES and lines["big__tree-1"]["found_files"][0] == "pkg3/mod4.py"
    return lines


def test_batch_on_ray_writes_the_local_lines_once_each_after_a_worker_is_killed(
    cluster: Any, dataset: tuple[Path, Path], local_lines: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    out = tmp_path / "loc_outputs.jsonl"
    proc = subprocess.Popen(
        [*CLI, *batch_args(dataset, out, "--ray", address(cluster), "--ray-workers", "2")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    killed = kill_on(cluster, proc, SLOW, times=1)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr
    assert len(killed) == 1, stderr
    report = json.loads(stdout)
    assert (report["selected"], report["written"], report["failures"]) == (INSTANCES, INSTANCES, [])
    assert (
        report["ray"]["workers"] == 2
        and report["ray"]["worker_deaths"] == 1
        and report["ray"]["retried"] == 1
    ), report["ray"]
    assert "given out again (retry 1 of 2)" in stderr
    assert by_id(out) == local_lines  # every instance once, each line the local batch's
    assert out.with_name("loc_outputs.failures.jsonl").read_text() == ""


def test_an_output_among_the_llm_inputs_is_refused_on_ray_as_it_is_locally(
    cluster: Any, dataset: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a review: on Ray the driver opened its outputs without the LLM side's inputs,
    so `--out` inside `--prompts-dir` was written there (a prompt file emptied, every later
    run failing on it) where a local run refuses it."""
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    on_ray = ("--ray", address(cluster), "--ray-workers", "1")
    for where in ((), on_ray):
        for out in (prompts / "b.jsonl", prompts / "self_check.md"):
            proc = cli(*batch_args(dataset, out, "--quiet", "--prompts-dir", str(prompts), *where))
            assert proc.returncode == 1, proc.stderr
            error = proc.stderr.splitlines()[-1]  # Ray may warn first
            assert error.startswith("blagent: error:") and "inside" in error, proc.stderr
        data, trees = dataset
        evaluation = ("eval", "--dataset", str(data), "--repos", str(trees), "--quiet")
        inside = ("--prompts-dir", str(prompts), "--out", str(prompts / "p.jsonl"))
        proc = cli(*evaluation, *inside, *where)
        assert proc.returncode == 1 and "inside" in proc.stderr, proc.stderr
        assert list(prompts.iterdir()) == [], where


def test_an_instance_whose_worker_keeps_dying_is_a_failure_after_two_retries(
    cluster: Any, dataset: tuple[Path, Path], local_lines: dict[str, dict[str, Any]], tmp_path: Path
) -> None:
    out = tmp_path / "loc_outputs.jsonl"
    args = batch_args(
        dataset,
        out,
        "--ray",
        address(cluster),
        "--ray-workers",
        "2",
        "--ids",
        "big__tree-1,shop__repo-1,inventory__repo-1",
    )
    proc = subprocess.Popen(
        [*CLI, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    killed = kill_on(cluster, proc, ("big__tree-1",), times=3)
    stdout, stderr = proc.communicate(timeout=300)
    assert len(killed) == 3, stderr
    assert proc.returncode == 3, stderr
    report = json.loads(stdout)
    assert [(f["instance_id"], f["kind"]) for f in report["failures"]] == [
        ("big__tree-1", "worker_lost")
    ]
    assert "died 3 times" in report["failures"][0]["error"]
    written = by_id(out)
    assert sorted(written) == ["inventory__repo-1", "shop__repo-1"]
    assert all(written[i] == local_lines[i] for i in written)
    failures = lines(out.with_name("loc_outputs.failures.jsonl"))
    assert [f["instance_id"] for f in failures] == ["big__tree-1"]


def _as_started(stop: int) -> None:
    """The signals of a driver started from a terminal (this process may run under nohup or
    in the background, where SIGINT is ignored), but for SIGHUP ignored when SIGTERM stops it,
    as under nohup."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGHUP, signal.SIG_IGN if stop == signal.SIGTERM else signal.SIG_DFL)


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_ray_batch_resumes_without_duplicates_or_losses(
    cluster: Any,
    dataset: tuple[Path, Path],
    local_lines: dict[str, dict[str, Any]],
    tmp_path: Path,
    stop: int,
) -> None:
    """SIGTERM, found by a review: Ray's own handler (from `ray.init`) ended the driver with
    status 1 or 15 after a stack dump; now it stops as Ctrl-C does, then by the signal, as a
    local run does (killed by it: the shell's 143), and a SIGHUP ignored stays ignored."""
    out = tmp_path / "loc_outputs.jsonl"
    args = batch_args(dataset, out, "--ray", address(cluster), "--ray-workers", "1")
    proc = subprocess.Popen(
        [*CLI, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: _as_started(stop),
    )
    deadline = time.monotonic() + 120
    while (
        time.monotonic() < deadline
        and proc.poll() is None
        and not (out.exists() and out.read_text().count("\n") >= 1)
    ):
        time.sleep(0.02)
    if stop == signal.SIGTERM:
        proc.send_signal(signal.SIGHUP)  # ignored
    proc.send_signal(stop)
    interrupted = time.monotonic()
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == (130 if stop == signal.SIGINT else -stop), stderr
    assert time.monotonic() - interrupted < 10, "the driver did not stop promptly"
    assert "blagent: interrupted" in stderr and "received" not in stderr, stderr
    first = by_id(out)  # complete lines only, none twice
    assert 1 <= len(first) < INSTANCES
    second = cli(*args)
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert (report["resumed"], report["written"]) == (len(first), INSTANCES - len(first))
    assert by_id(out) == local_lines


def test_eval_on_a_local_cluster_of_its_own_reports_what_the_local_eval_does(
    ray: Any, dataset: tuple[Path, Path], tmp_path: Path
) -> None:
    """`--ray` without an address: the command starts (and stops) a local cluster itself,
    with a token of its own (a review: Ray wrote one to ~/.ray/auth_token, readable by every
    user, left after the run and reused by the next)."""
    base = [
        "eval",
        "--dataset",
        str(dataset[0]),
        "--repos",
        str(dataset[1]),
        "--format",
        "json",
        "--quiet",
    ]
    local = cli(*base, "--out", str(tmp_path / "local.jsonl"))
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH_")}
    env["HOME"] = str(home)
    remote = cli(
        *base, "--out", str(tmp_path / "ray.jsonl"), "--ray", "--ray-workers", "2", env=env
    )
    assert not (home / ".ray" / "auth_token").exists()
    assert local.returncode == 0 and remote.returncode == 0, local.stderr + remote.stderr
    local_report, ray_report = json.loads(local.stdout), json.loads(remote.stdout)
    assert (
        ray_report["overall"] == local_report["overall"]
        and ray_report["overall"]["instances"] == INSTANCES
    )
    assert ray_report["per_repo"] == local_report["per_repo"]
    assert (ray_report["ray"]["address"], ray_report["ray"]["workers"]) == ("local", 2)
    ranked = [(p["instance_id"], p["found_files"]) for p in lines(tmp_path / "local.jsonl")]
    assert [(p["instance_id"], p["found_files"]) for p in lines(tmp_path / "ray.jsonl")] == ranked


@pytest.mark.parametrize("permits", [1, 2])
def test_llm_requests_are_limited_across_the_cluster(
    cluster: Any, dataset: tuple[Path, Path], tmp_path: Path, permits: int
) -> None:
    # The server holds the first requests until `permits` are in flight at once: with 2
    # permits the two workers overlap however late the second starts; with 1 they never do.
    server = SlowServer(hold_until=permits)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        ids = "shop__repo-1,shop__repo-2,inventory__repo-1,inventory__repo-2"
        llm = [
            "--pipeline",
            "blagent",
            "--llm-base-url",
            url,
            "--llm-model",
            "slow",
            "--llm-concurrency",
            str(permits),
        ]
        options = [
            "--llm-option",
            "max_steps=1",
            "--llm-option",
            "max_retries=0",
            "--llm-option",
            "permutation_check=false",
        ]
        proc = cli(
            *batch_args(
                dataset,
                tmp_path / "out.jsonl",
                "--ids",
                ids,
                "--ray",
                address(cluster),
                "--ray-workers",
                "2",
                *llm,
                *options,
            )
        )
    finally:
        server.shutdown()
        server.server_close()
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["written"] == 4 and server.requests >= 4
    assert report["ray"]["llm_permits"] == {"permits": permits, "granted": 4, "peak": permits}
    assert server.peak == permits  # 2 workers: at once only when the permits allow it


def test_the_llm_endpoint_of_the_drivers_environment_is_the_workers(
    cluster: Any, dataset: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a review: an endpoint set by BLAGENT_LLM_* variables was dropped on Ray (each
    worker read its own environment), so every instance fell back to "no LLM configured". The
    driver now sends the configuration it resolved, and a cluster's variables (here the job's
    runtime environment, as `ray job submit` or the nodes' environment would give them) do not
    add an endpoint to a driver that has none."""
    server = SlowServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    secret = "sk-driver-secret-0123456789"

    def run(out: str, driver: dict[str, str], cluster_env: dict[str, str]) -> Any:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BLAGENT_LLM_")}
        job = {"runtime_env": {"env_vars": cluster_env}}
        env.update(driver, RAY_JOB_CONFIG_JSON_ENV_VAR=json.dumps(job))
        args = batch_args(dataset, tmp_path / out, "--ids", "shop__repo-1,inventory__repo-1")
        llm = ["--pipeline", "blagent", "--llm-option", "max_steps=1", "--llm-option"]
        extra = [*llm, "permutation_check=false", "--ray", address(cluster), "--ray-workers", "2"]
        proc = subprocess.run(
            [*CLI, *args, *extra], capture_output=True, text=True, timeout=300, env=env
        )
        assert proc.returncode == 0, proc.stderr
        assert secret not in proc.stdout + proc.stderr + (tmp_path / out).read_text()
        return json.loads(proc.stdout)

    elsewhere = {"BLAGENT_LLM_BASE_URL": "http://127.0.0.1:9/v1", "BLAGENT_LLM_MODEL": "other"}
    try:
        driver = {"BLAGENT_LLM_BASE_URL": url, "BLAGENT_LLM_MODEL": "slow"}
        report = run("env.jsonl", {**driver, "BLAGENT_LLM_API_KEY": secret}, elsewhere)
        asked = server.requests
        cluster_only = run("none.jsonl", {}, {**driver, "BLAGENT_LLM_API_KEY": secret})
    finally:
        server.shutdown()
        server.server_close()
    assert report["ray"]["llm_permits"]["granted"] == 2 and asked >= 2
    modes = {line["blagent"]["localizer"]["mode"] for line in lines(tmp_path / "env.jsonl")}
    assert modes == {"llm:blagent:http:slow"}, modes
    assert cluster_only["ray"]["llm_permits"] is None and server.requests == asked
    modes = {line["blagent"]["localizer"]["mode"] for line in lines(tmp_path / "none.jsonl")}
    assert modes == {"llm:blagent:none"}, modes


def test_paths_on_ray_name_what_they_name_locally_and_the_report_is_the_local_one(
    cluster: Any, dataset: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a review: the driver made paths absolute with `abspath`, which drops `link/..`
    before the link is followed, so `--dataset link/../ds.jsonl` read and `--out
    link/../out.jsonl` wrote other files than a local run; the report named the outputs by
    their absolute paths, and the failures in the order they came."""
    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real / "sub", target_is_directory=True)
    (real / "trees").mkdir()
    (real / "trees" / "shop__repo-1").symlink_to(dataset[1] / "shop__repo-1")
    rows = [json.loads(line) for line in dataset[0].read_text().splitlines()][:1]
    # One worker takes the largest group first: the aa failures come before zz's.
    rows += [
        {"instance_id": i, "problem_statement": "x"} for i in ("zz__a-1", "aa__b-1", "aa__b-2")
    ]
    (real / "ds.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "ds.jsonl").write_text(json.dumps(rows[0]) + "\n")  # where abspath led

    def run(out: str, *extra: str) -> dict[str, Any]:
        given = ["--dataset", "link/../ds.jsonl", "--repos", "link/../trees", "--out", out]
        proc = subprocess.run(
            [*CLI, "batch", *given, "--quiet", *extra],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert proc.returncode == 3, proc.stderr  # 3 of 4 instances fail
        report: dict[str, Any] = json.loads(proc.stdout)
        del report["seconds"]
        report.pop("ray", None)
        return report

    local = run("link/../local.jsonl")
    remote = run("link/../ray.jsonl", "--ray", address(cluster), "--ray-workers", "1")
    assert not (tmp_path / "ray.jsonl").exists()
    assert by_id(real / "ray.jsonl") == by_id(real / "local.jsonl")
    assert (remote["out"], remote["failures_out"]) == (
        "link/../ray.jsonl",
        "link/../ray.failures.jsonl",
    )
    assert [f["instance_id"] for f in remote["failures"]] == ["zz__a-1", "aa__b-1", "aa__b-2"]
    for report in (local, remote):
        del report["out"], report["failures_out"]
        for failure in report["failures"]:
            del failure["error"]  # the workers name the trees by their absolute path
    assert remote == local


def test_more_cpus_per_worker_than_any_node_has_is_refused_at_once(
    cluster: Any, dataset: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a review: the driver waited forever for a worker no node could start."""
    out = tmp_path / "out.jsonl"
    started = time.monotonic()
    proc = cli(*batch_args(dataset, out, "--ray", address(cluster), "--ray-cpus-per-worker", "3"))
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr.splitlines()[-1] == (
        "blagent: error: --ray-cpus-per-worker 3: no node of the cluster has that many CPUs "
        "(the largest has 2), so no worker could start"
    )
    assert time.monotonic() - started < 60 and not out.exists()


class _RayError(Exception):
    """Stands for `ray.exceptions.RayError` (a worker died)."""


class _RayTaskError(_RayError):
    """Stands for `ray.exceptions.RayTaskError` (the worker's method raised)."""


class _Results:
    """Ray's `wait`/`get`/`kill` over outcomes fixed in advance: a value, or an exception."""

    class exceptions:
        RayError = _RayError
        RayTaskError = _RayTaskError

    def __init__(self, results: dict[str, Any]) -> None:
        self.results = results

    def wait(
        self, refs: list[str], num_returns: int, timeout: float
    ) -> tuple[list[str], list[str]]:
        done = [r for r in refs if r in self.results][:num_returns]
        return done, [r for r in refs if r not in done]

    def get(self, ref: str) -> Any:
        value = self.results[ref]
        if isinstance(value, BaseException):
            raise value
        return value

    def kill(self, actor: Any, no_restart: bool) -> None:
        pass


class _Sink:
    def __init__(self) -> None:
        self.recorded: list[str] = []
        self.notes: list[str] = []

    def record(self, outcome: str) -> None:
        self.recorded.append(outcome)

    def note(self, message: str) -> None:
        self.notes.append(message)

    def started(self, instance_id: str) -> None:
        pass


def test_a_worker_that_dies_after_finishing_an_instance_is_charged_for_the_next() -> None:
    """The driver learns of the death before it has taken the outcome the worker finished
    first: that outcome is kept, and the attempt counts against the instance it died on."""
    from blagent._ray.driver import Driver
    from blagent._ray.schedule import Item, Scheduler
    from blagent._ray.slots import Job, Slot, Stats

    done = Item("small-1", "small", "{}")
    dying = Item("big-1", "big", "{}")
    ray = _Results({"ref-small": '{"instance_id": "small-1"}', "ref-big": _RayError("actor died")})
    driver = Driver.__new__(Driver)
    driver.ray, driver.permits, driver.stats = ray, None, Stats(workers=1)
    driver.job = Job("batch", "{}", None, None, False, 1)
    driver.sink, driver.scheduler = _Sink(), Scheduler([])
    slot = Slot(0, actor="worker-0", inflight=[("ref-small", done), ("ref-big", dying)])
    driver.slots, driver.live = [slot], {"ref-small": slot}
    restarted: list[int] = []
    driver._start = lambda s: restarted.append(s.index)  # type: ignore[method-assign]

    driver._settle(slot, "ref-big")  # its error came first out of ray.wait

    assert driver.sink.recorded == ['{"instance_id": "small-1"}']
    assert (done.attempts, dying.attempts) == (0, 1)
    assert driver.sink.notes and "died on big-1" in driver.sink.notes[0]
    assert driver.live == {} and slot.inflight == [] and restarted == [0]
    assert driver.scheduler.next_for(0) is dying and driver.scheduler.next_for(0) is None


def test_a_driver_waiting_for_its_first_worker_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found by a review: with the cluster's CPUs taken, the driver waited without a word."""
    from blagent._ray import driver as driver_module
    from blagent._ray.driver import Driver
    from blagent._ray.slots import Slot

    class Busy(_Results):
        """No worker ready for the first two looks."""

        looks = 0

        def wait(
            self, refs: list[str], num_returns: int, timeout: float
        ) -> tuple[list[str], list[str]]:
            self.looks += 1
            return ([], refs) if self.looks <= 2 else super().wait(refs, num_returns, timeout)

        def available_resources(self) -> dict[str, float]:
            return {"CPU": 0.0}

    monkeypatch.setattr(driver_module, "WAIT_NOTE_S", 0.0)
    driver = Driver.__new__(Driver)
    driver.ray, driver.cpus = Busy({"probe": None}), 2
    slot = Slot(0, probe="probe")
    driver.slots, driver.live = [slot], {"probe": slot}

    driver._await_first()

    notes = capsys.readouterr().err.splitlines()
    assert len(notes) == 2 and slot.probe is None, notes
    assert notes[0].startswith("blagent: waiting for a Ray worker to start (0 s so far)")
    assert notes[0].endswith("each reserves 2 CPU(s), the cluster has 0 free; Ctrl-C stops")
