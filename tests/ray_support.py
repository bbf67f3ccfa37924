"""Helpers of tests/test_ray.py: a dataset of three repositories written by the tests (one
with a tree big enough to take most of a second to index), the command line, the workers' status and
killing one, and a slow OpenAI-compatible endpoint that counts the requests in flight."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from conftest import SOURCES

CLI = [sys.executable, "-m", "blagent"]
#: The instances in the big tree.
SLOW = ("big__tree-1", "big__tree-2")
#: Instances in the dataset.
INSTANCES = 9


def _write(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def _big_tree(root: Path) -> Path:
    """About 3,200 modules: most of a second to index even on a fast machine, time for the
    tests to see which worker holds it and kill that worker."""
    body = "def f_{d}_{m}_{k}(value, other=None):\n    return value * {k} + len(str(other))\n\n\n"
    files = {
        f"pkg{d}/mod{m}.py": "".join(body.format(d=d, m=m, k=k) for k in range(10))
        for d in range(64)
        for m in range(50)
    }
    return _write(root, files)


def write_dataset(base: Path) -> tuple[Path, Path]:
    """Three repositories, `INSTANCES` instances; two in a big tree."""
    shop = _write(base / "src" / "shop", SOURCES)
    inventory = _write(
        base / "src" / "inventory",
        {
            "stock/levels.py": "class Levels:\n    def reserve(self, sku, n):\n        return n\n",
            "stock/report.py": "def summary(levels):\n    return str(levels)\n",
        },
    )
    big = _big_tree(base / "src" / "big")
    issues = {
        "shop": [
            "apply_discount raises DiscountError for 10 percent",
            "Cart.total ignores the discount",
            "shop/inventory.py: Inventory.reserve returns the wrong quantity",
            "broken.py fails to import",
        ],
        "inventory": [
            "Levels.reserve does not lower the stock",
            "summary prints nothing for empty levels",
            "stock/report.py summary is slow",
        ],
        "big": ["f_3_4_5 returns the wrong total", "f_30_2_9 ignores other"],
    }
    trees, rows = base / "trees", []
    trees.mkdir()
    for name, tree in (("shop", shop), ("inventory", inventory), ("big", big)):
        for i, issue in enumerate(issues[name], 1):
            iid = f"{name}__{'tree' if name == 'big' else 'repo'}-{i}"
            (trees / iid).symlink_to(tree, target_is_directory=True)
            gold = {
                "shop": "shop/pricing.py",
                "inventory": "stock/levels.py",
                "big": "pkg3/mod4.py",
            }[name]
            rows.append(
                {
                    "instance_id": iid,
                    "repo": f"acme/{name}",
                    "problem_statement": issue,
                    "gold_files": [gold],
                }
            )
    path = base / "data.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path, trees


def address(ray: Any) -> str:
    return str(ray.get_runtime_context().gcs_address)


def cli(
    *args: str, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, env=env)


def batch_args(dataset: tuple[Path, Path], out: Path, *extra: str) -> list[str]:
    return [
        "batch",
        "--dataset",
        str(dataset[0]),
        "--repos",
        str(dataset[1]),
        "--out",
        str(out),
        "--top-k",
        "5",
        *extra,
    ]


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def by_id(path: Path) -> dict[str, dict[str, Any]]:
    """The lines of a batch output by instance (each must be there once), timings left out."""
    found = lines(path)
    ids = [line["instance_id"] for line in found]
    assert len(ids) == len(set(ids)), f"an instance written twice: {sorted(ids)}"
    for line in found:
        line["blagent"]["timings"] = None  # the only field that differs between runs
    return {line["instance_id"]: line for line in found}


def worker_status(ray: Any) -> list[dict[str, Any]]:
    """Status of every live blagent worker actor on the cluster. The actors are asked at once
    and their answers awaited together for at most half a second, so a worker that was just
    killed (still listed, never answering) does not hide a live one's short instance."""
    asked = []
    for entry in ray.util.list_named_actors(all_namespaces=True):
        if entry["namespace"] == "blagent" and "-worker-" in entry["name"]:
            try:
                asked.append(ray.get_actor(entry["name"], namespace="blagent").status.remote())
            except Exception:
                continue
    answered, _ = ray.wait(asked, num_returns=len(asked), timeout=0.5) if asked else ([], [])
    found = []
    for ref in answered:
        try:
            found.append(ray.get(ref))
        except Exception:
            continue
    return found


def kill_on(
    ray: Any, proc: subprocess.Popen[str], instances: tuple[str, ...], times: int
) -> list[str]:
    """Kills (SIGKILL) the worker working on one of `instances`, `times` times; the kills."""
    killed: list[str] = []
    deadline = time.monotonic() + 120
    while len(killed) < times and proc.poll() is None and time.monotonic() < deadline:
        for status in worker_status(ray):
            if status["instance_id"] in instances and status["holder"] not in killed:
                os.kill(status["pid"], signal.SIGKILL)
                killed.append(status["holder"])
                break
        time.sleep(0.05)
    return killed


class SlowServer(ThreadingHTTPServer):
    """An OpenAI-compatible endpoint that takes a while per answer and counts requests in flight.

    Until `hold_until` requests have been in flight at once, each request waits for the others
    (at most `hold_s`), so a test that allows that many at once sees them at once however
    late a worker starts on a loaded machine; after that every answer takes 0.15 s."""

    daemon_threads = True

    def __init__(self, hold_until: int = 1, hold_s: float = 20.0) -> None:
        super().__init__(("127.0.0.1", 0), SlowHandler)
        self.lock = threading.Condition()
        self.in_flight = self.peak = self.requests = 0
        self.hold_until, self.hold_s = hold_until, hold_s


class SlowHandler(BaseHTTPRequestHandler):
    server: SlowServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        server = self.server
        with server.lock:
            server.in_flight += 1
            server.requests += 1
            server.peak = max(server.peak, server.in_flight)
            server.lock.notify_all()
            server.lock.wait_for(lambda: server.peak >= server.hold_until, timeout=server.hold_s)
        time.sleep(0.15)
        with self.server.lock:
            self.server.in_flight -= 1
        body = {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "{}"},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 1},
        }
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
