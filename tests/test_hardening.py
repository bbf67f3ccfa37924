"""What a hostile probe broke (issue 18), through the command line and the Python API: special
and oversized inputs, deep JSON, bad timeouts, Ctrl-C, control characters, bad options."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
from test_cli import run
from test_localizer import ISSUE

from blagent import Hints, InputError, LocalizeRequest, Localizer


def assert_clean_failure(proc: subprocess.CompletedProcess[str], code: int = 1) -> None:
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "panic" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("blagent: error:"), proc.stderr


@pytest.fixture
def hanging_url() -> Iterator[str]:
    """An endpoint that accepts connections, reads the request and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            held.append(conn)

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    listener.close()
    for conn in held:
        conn.close()


@pytest.mark.parametrize("name,git", [(".gitignore", False), (".gitignore", True), (".ignore", False)])
def test_a_fifo_ignore_file_does_not_hang_the_walk(repo: Path, name: str, git: bool) -> None:
    if git:
        (repo / ".git").mkdir()
    os.mkfifo(repo / name)
    os.mkfifo(repo / "shop" / name)
    proc = run("localize", "--repo", str(repo), "--issue-text", ISSUE, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"][0]["path"] == "shop/pricing.py"


def test_the_filesystem_root_is_refused(tmp_path: Path) -> None:
    request = {"instance_id": "x", "repo_path": "/", "issue": "anything"}
    path = tmp_path / "req.json"
    path.write_text(json.dumps(request))
    assert_clean_failure(run("localize", "--request-json", str(path)))


def test_an_ignore_file_linked_outside_is_not_honoured(repo: Path, tmp_path: Path) -> None:
    (tmp_path / "rules").write_text("*.py\n")
    (repo / ".gitignore").symlink_to(tmp_path / "rules")
    (repo / "shop" / ".ignore").symlink_to("/dev/zero")
    proc = run("localize", "--repo", str(repo), "--issue-text", ISSUE, "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"], "the files are still indexed"


def test_special_files_and_endless_streams_are_refused(repo: Path, tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"instance_id": "a", "problem_statement": ISSUE}) + "\n")
    trees = tmp_path / "trees"
    trees.mkdir()
    started = time.monotonic()
    cases = [
        ("batch", "--dataset", str(data), "--repos", str(trees), "--out", "/dev/full"),
        ("batch", "--dataset", "/dev/zero", "--repos", str(trees), "--out", str(tmp_path / "o.jsonl")),
        ("eval", "--dataset", "/dev/zero", "--repos", str(trees)),
        ("batch", "--dataset", str(data), "--repos", str(trees), "--out", str(tmp_path / "o.jsonl"), "--ids-file", "/dev/zero"),
        ("localize", "--repo", str(repo), "--issue", "/dev/zero"),
        ("localize", "--request-json", "/dev/zero"),
    ]
    for args in cases:
        proc = run(*args)
        assert_clean_failure(proc)
        assert "not a regular file" in proc.stderr, proc.stderr
    for args in (("localize", "--repo", str(repo)), ("localize", "--request-json", "-")):
        with open("/dev/zero", "rb") as zero:
            proc = subprocess.run([sys.executable, "-m", "blagent", *args], stdin=zero, capture_output=True, text=True, timeout=60)
        assert_clean_failure(proc)
        assert "larger than 16 MiB" in proc.stderr, proc.stderr
    assert time.monotonic() - started < 60


def test_a_deeply_nested_request_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert_clean_failure(run("localize", "--request-json", str(path)))
    path.write_text('{"instance_id": "x", "repo_path": ".", "issue": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert_clean_failure(run("localize", "--request-json", str(path)))


def test_a_lone_surrogate_in_a_request_says_so(repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "req.json"
    path.write_text('{"instance_id": "x", "repo_path": "%s", "issue": "bad \\ud800 text"}' % repo)
    proc = run("localize", "--request-json", str(path))
    assert_clean_failure(proc)
    assert "lone surrogate" in proc.stderr, proc.stderr


@pytest.mark.parametrize("value", ["1e20", "nan", "-1", "inf", "0"])
def test_an_impossible_llm_timeout_is_bad_input(repo: Path, value: str) -> None:
    proc = run("localize", "--repo", str(repo), "--issue-text", ISSUE, "--llm-base-url", "http://127.0.0.1:9", "--llm-model", "m", "--llm-timeout", value)
    assert_clean_failure(proc)


def test_unknown_rrl_groups_are_refused_with_the_valid_ones(repo: Path) -> None:
    proc = run("localize", "--repo", str(repo), "--issue-text", ISSUE, "--pipeline", "rrl", "--llm-option", 'rrl_groups=["bogus"]')
    assert_clean_failure(proc)
    assert "bogus" in proc.stderr and "identifiers_snippets" in proc.stderr, proc.stderr


def test_text_output_escapes_control_characters_in_file_names(repo: Path) -> None:
    (repo / "shop" / "evil\x1b[2J\x07.py").write_text("def apply_discount():\n    pass\n")
    proc = run("localize", "--repo", str(repo), "--issue-text", ISSUE, "--format", "text", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "evil\\x1b[2J\\x07.py" in proc.stdout


def test_hint_files_must_be_a_list() -> None:
    with pytest.raises(InputError, match="list of path strings"):
        Hints(files="a.py")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        Hints.from_dict({"files": "a.py"})
    assert Hints(files=["a.py"]).files == ["a.py"]


def _interrupt(args: list[str], wait_s: float = 1.5) -> tuple[subprocess.CompletedProcess[str], float]:
    """Runs the CLI, sends SIGINT after `wait_s`, and returns the process and how long it took
    to end after the signal."""
    proc = subprocess.Popen([sys.executable, "-m", "blagent", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(wait_s)
    assert proc.poll() is None, proc.communicate()
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(args, proc.returncode, out, err), time.monotonic() - sent


def _llm_flags(url: str) -> list[str]:
    return ["--pipeline", "blagent", "--llm-base-url", url, "--llm-model", "m", "--llm-timeout", "120", "--quiet"]


def test_ctrl_c_stops_localize_with_exit_130(repo: Path, hanging_url: str) -> None:
    proc, took = _interrupt(["localize", "--repo", str(repo), "--issue-text", ISSUE, *_llm_flags(hanging_url)])
    assert proc.returncode == 130, proc.stderr
    assert took < 3, took
    assert "Traceback" not in proc.stderr and "interrupted" in proc.stderr, proc.stderr


def test_ctrl_c_stops_batch_and_eval_and_the_output_resumes(repo: Path, tmp_path: Path, hanging_url: str) -> None:
    trees = tmp_path / "trees"
    trees.mkdir()
    rows = []
    for iid in ("shop-1", "shop-2"):
        (trees / iid).symlink_to(repo, target_is_directory=True)
        rows.append(json.dumps({"instance_id": iid, "repo": "acme/shop", "problem_statement": ISSUE, "patch": ""}))
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "loc.jsonl"
    common = ["--dataset", str(data), "--repos", str(trees)]
    first = run("batch", *common, "--out", str(out), "--ids", "shop-1", "--quiet")
    assert first.returncode == 0, first.stderr
    proc, took = _interrupt(["batch", *common, "--out", str(out), *_llm_flags(hanging_url)])
    assert proc.returncode == 130, proc.stderr
    assert took < 3, took
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = out.read_text().splitlines()
    assert [json.loads(line)["instance_id"] for line in lines] == ["shop-1"], "intact, nothing half-written"
    resumed = run("batch", *common, "--out", str(out), "--quiet")
    assert resumed.returncode == 0, resumed.stderr
    assert [json.loads(line)["instance_id"] for line in out.read_text().splitlines()] == ["shop-1", "shop-2"]

    proc, took = _interrupt(["eval", *common, *_llm_flags(hanging_url)])
    assert proc.returncode == 130, proc.stderr
    assert took < 3, took
    assert "Traceback" not in proc.stderr, proc.stderr


def test_a_password_in_the_base_url_is_redacted(repo: Path) -> None:
    proc = run("llm-check", "--llm-base-url", "http://alice:hunter2@127.0.0.1:9", "--llm-model", "m", "--llm-max-retries", "0")
    assert proc.returncode == 3
    assert "hunter2" not in proc.stderr and "<redacted>" in proc.stderr, proc.stderr
    proc = run("localize", "--repo", str(repo), "--issue-text", ISSUE, *_llm_flags("http://alice:hunter2@127.0.0.1:9"))
    assert proc.returncode == 0, proc.stderr
    assert "hunter2" not in proc.stdout + proc.stderr


def test_a_lone_surrogate_in_the_python_api_is_an_input_error(repo: Path) -> None:
    request = LocalizeRequest("x", str(repo), "bad \ud800 text")
    with pytest.raises(InputError, match="surrogate"):
        Localizer().localize_request(request)


def test_analyze_failures_does_not_read_trees_outside_repos(tmp_path: Path) -> None:
    from test_analysis import DISCOUNT_FIX, FILES, patch, write_jsonl

    outside = tmp_path / "outside"
    for rel, text in FILES.items():
        (outside / rel).parent.mkdir(parents=True, exist_ok=True)
        (outside / rel).write_text(text)
    (tmp_path / "trees").mkdir()
    iid = "../outside"
    gold = patch(DISCOUNT_FIX)
    dataset = write_jsonl(tmp_path / "data.jsonl", [{"instance_id": iid, "repo": "acme/shop", "patch": gold}])
    locs = write_jsonl(tmp_path / "locs.jsonl", [{"instance_id": iid, "found_files": ["shop/pricing.py"]}])
    preds = write_jsonl(tmp_path / "preds.jsonl", [{"instance_id": iid, "model_patch": gold.replace("clamped", "capped")}])
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"resolved": [], "unresolved": [iid]}))
    proc = run(
        "analyze-failures", "--dataset", str(dataset), "--locs", str(locs), "--predictions", str(preds),
        "--report", str(report), "--repos", str(tmp_path / "trees"),
    )
    assert proc.returncode == 0, proc.stderr
    warnings = json.loads(proc.stdout)["warnings"]
    assert any("inside the trees folder" in w for w in warnings), warnings
