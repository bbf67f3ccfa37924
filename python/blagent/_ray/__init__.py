"""`blagent batch --ray` and `blagent eval --ray`: the instances of a run localized by workers on
a Ray cluster, their outcomes written here by the same core code as a local run (the core's
`JobSink`, fed by `JobWorker`s on the workers), so the output
is the local run's. Ray is an optional extra: `pip install 'blagent[ray]'`.

Every machine of the cluster needs this version of blagent installed and the run's trees (and
model, cache and cassette folders) at the paths given here, made absolute before they are
sent (a shared file system, or the same layout on each machine).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import sys
import time
from typing import Any

from .. import _core
from .._llm_flags import with_environment
from .cluster import cluster_cpus, connected, largest_node_cpus
from .slots import Job

__all__ = ["RayOptions", "run_batch", "run_eval"]


@dataclasses.dataclass(frozen=True)
class RayOptions:
    """Where and how wide to run.

    Args:
        address: an existing cluster (`host:port`, `auto`, `ray://...`), or None for a new
            local one on 127.0.0.1 without a dashboard.
        workers: worker slots (default: the cluster's CPUs divided by `cpus_per_worker`).
        cpus_per_worker: CPUs each worker reserves (and its threads for parallel work).
    """

    address: str | None = None
    workers: int | None = None
    cpus_per_worker: int = 1


def _absolute(path: Any) -> Any:
    """`path` made absolute as the system resolves it here: joined to this folder, `..` and
    links left for the system (`abspath` would drop `link/..` before following the link), and
    `~` a name like any other, as it is to a local run."""
    return os.path.join(os.getcwd(), path) if isinstance(path, str) and path else path


def _worker_jsons(
    config: dict[str, Any], llm_options: dict[str, Any], llm_config: dict[str, Any]
) -> tuple[str, str | None, str]:
    """The configuration, LLM options and LLM configuration as JSON for the workers, with the
    paths they read made absolute (a worker's folder is not the driver's)."""
    config, llm_options, llm_config = copy.deepcopy((config, llm_options, llm_config))
    for key in ("dataset", "repos", "out", "failures_out", "signals_out", "queries"):
        if key in config:
            config[key] = _absolute(config[key])
    dense = (config.get("options") or {}).get("dense")
    if dense:
        for key in ("model_dir", "cache_dir"):
            dense[key] = _absolute(dense.get(key))
    for key in ("prompts_dir", "profile"):
        if key in llm_options:
            llm_options[key] = _absolute(llm_options[key])
    path_keys = {f["key"] for f in json.loads(_core.LLM_CONFIG_FLAGS) if f["kind"] == "path"}
    for key in path_keys & set(llm_config):
        llm_config[key] = _absolute(llm_config[key])
    options_json = json.dumps(llm_options) if llm_options else None
    return json.dumps(config), options_json, json.dumps(llm_config)


def _run(
    kind: str,
    config: dict[str, Any],
    llm_options_json: str | None,
    llm_config_json: str | None,
    ray_options: RayOptions,
) -> dict[str, Any]:
    llm_options = json.loads(llm_options_json) if llm_options_json else {}
    # The workers get the configuration this process would use, its environment included:
    # theirs is not read (see `actors.Worker`).
    llm_config = with_environment(json.loads(llm_config_json) if llm_config_json else {})
    if llm_config.get("record"):
        raise _core.InputError(
            "--llm-record cannot be used with --ray (workers on several machines would append to "
            "one cassette): record with a local run, replay with --ray"
        )
    client = _core.LlmClient(json.dumps(llm_config))
    job = Job(
        kind=kind,
        config_json=json.dumps(config),
        llm_options_json=json.dumps(llm_options) if llm_options else None,
        llm_config_json=json.dumps(llm_config),
        uses_llm=config.get("pipeline", "fused") != "fused" and client.enabled,
        permits=int(json.loads(client.config_json())["max_concurrency"]),
        worker_jsons=_worker_jsons(config, llm_options, llm_config),
    )
    started = time.monotonic()
    with connected(ray_options.address) as ray:
        from .driver import Driver  # imports the actors, which need Ray

        connect_seconds = time.monotonic() - started
        cpus, per_worker = cluster_cpus(ray), ray_options.cpus_per_worker
        largest = largest_node_cpus(ray)
        # A cluster with no CPU node yet (a head of 0 CPUs, workers autoscaled) is waited for.
        if 0 < largest < per_worker:
            raise _core.InputError(
                f"--ray-cpus-per-worker {per_worker}: no node of the cluster has that many CPUs "
                f"(the largest has {largest}), so no worker could start"
            )
        workers = ray_options.workers or max(1, cpus // per_worker)
        if workers * per_worker > cpus:
            print(
                f"blagent: warning: {workers} workers of {per_worker} CPU(s) need more than the "
                f"cluster's {cpus} CPUs now; the others start when CPUs free up or nodes join",
                file=sys.stderr,
            )
        report, stats = Driver(ray, job, workers, ray_options.cpus_per_worker).run()
        stats.connect_seconds = connect_seconds
    report["seconds"] = time.monotonic() - started
    report["ray"] = {"address": ray_options.address or "local", **dataclasses.asdict(stats)}
    return report


def run_batch(
    config: dict[str, Any],
    llm_options_json: str | None = None,
    llm_config_json: str | None = None,
    ray_options: RayOptions = RayOptions(),
) -> dict[str, Any]:
    """`_core.batch` on a Ray cluster: the same `loc_outputs.jsonl`, failures file and report,
    plus `ray` (address, workers, worker deaths, retried and lost instances, LLM permits).

    Args:
        config: the `BatchConfig` object, as for `_core.batch`.
        llm_options_json: LLM pipeline options as JSON.
        llm_config_json: the LLM endpoint configuration as JSON.
        ray_options: the cluster and its workers.

    Raises:
        InputError: bad input, Ray not installed, or `--llm-record` asked for.
        BlagentIOError: the cluster cannot be reached, or no worker can run.
    """
    return _run("batch", dict(config), llm_options_json, llm_config_json, ray_options)


def run_eval(
    config: dict[str, Any],
    llm_options_json: str | None = None,
    llm_config_json: str | None = None,
    ray_options: RayOptions = RayOptions(),
) -> dict[str, Any]:
    """`_core.evaluate` on a Ray cluster: the same report and predictions, plus `ray`.

    Args and Raises: as for `run_batch`, with an `EvalConfig`.
    """
    return _run("eval", dict(config), llm_options_json, llm_config_json, ray_options)
