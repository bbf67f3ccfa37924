"""What a hostile probe broke (issue 18), through the command line and the Python API: special
and oversized inputs, deep JSON, bad timeouts, Ctrl-C, control characters, bad options."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from blagent import Hints, InputError, Localizer, LocalizeRequest, ModelError, _core
from blagent.models import default_model_dir
from test_cli import run
from test_localizer import ISSUE


def assert_clean_failure(
    proc: subprocess.CompletedProcess[str], code: int = 1, because: str = ""
) -> None:
    """A one-line `blagent: error:` with exit `code`, saying `because` when given."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "panic" not in proc.stderr, proc.stderr
    assert proc.stderr.startswith("blagent: error:"), proc.stderr
    assert because in proc.stderr, proc.stderr


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


@pytest.mark.parametrize(
    "name,git", [(".gitignore", False), (".gitignore", True), (".ignore", False)]
)
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


def _feed(args: tuple[str, ...], size: int) -> subprocess.CompletedProcess[str]:
    """Runs the CLI with `size` zero bytes written to its standard input (an endless stream, as
    far as a 16 MiB bound can tell), ignoring the pipe closing once the CLI stops reading."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "blagent", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    outputs: dict[str, bytes] = {}
    readers = [
        threading.Thread(
            target=lambda name=name, stream=stream: outputs.__setitem__(name, stream.read()),
            daemon=True,
        )
        for name, stream in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for reader in readers:
        reader.start()
    try:
        for _ in range(size >> 20):
            proc.stdin.write(bytes(1 << 20))
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass
    proc.wait(timeout=60)
    for reader in readers:
        reader.join(timeout=10)
    return subprocess.CompletedProcess(
        args, proc.returncode, outputs["out"].decode(), outputs["err"].decode()
    )


def test_special_files_and_endless_streams_are_refused(repo: Path, tmp_path: Path) -> None:
    """A FIFO made here stands for every special file (no device such as /dev/zero is needed)."""
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"instance_id": "a", "problem_statement": ISSUE}) + "\n")
    trees = tmp_path / "trees"
    trees.mkdir()
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    started = time.monotonic()
    cases = [
        ("batch", "--dataset", str(data), "--repos", str(trees), "--out", fifo),
        ("batch", "--dataset", fifo, "--repos", str(trees), "--out", str(tmp_path / "o.jsonl")),
        ("eval", "--dataset", fifo, "--repos", str(trees)),
        (
            "batch",
            "--dataset",
            str(data),
            "--repos",
            str(trees),
            "--out",
            str(tmp_path / "o.jsonl"),
            "--ids-file",
            fifo,
        ),
        ("localize", "--repo", str(repo), "--issue", fifo),
        ("localize", "--request-json", fifo),
    ]
    for args in cases:
        proc = run(*args)
        assert_clean_failure(proc)
        assert "not a regular file" in proc.stderr or "regular files" in proc.stderr, proc.stderr
    for args in (("localize", "--repo", str(repo)), ("localize", "--request-json", "-")):
        proc = _feed(args, 17 << 20)
        assert_clean_failure(proc, because="larger than 16 MiB")
    assert time.monotonic() - started < 60


def test_files_the_command_line_names_are_read_by_the_core(repo: Path, tmp_path: Path) -> None:
    """`--issue`, `--request-json` and `--ids-file` are read by the core's bounded read
    (`_core.read_user_file`), in its words: a missing or oversized file is bad input naming it,
    one that cannot be read an I/O failure."""
    missing = tmp_path / "absent.txt"
    for args in (
        ("localize", "--repo", str(repo), "--issue", str(missing)),
        ("localize", "--request-json", str(missing)),
    ):
        assert_clean_failure(run(*args), because=f"{missing} does not exist")
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * ((16 << 20) + 1))
    proc = run("localize", "--repo", str(repo), "--issue", str(big))
    assert_clean_failure(proc, because=f"issue file {big} is larger than 16 MiB")
    unreadable = tmp_path / "issue.txt"
    unreadable.write_text(ISSUE)
    unreadable.chmod(0)
    try:
        if not os.access(unreadable, os.R_OK):  # not root
            proc = run("localize", "--repo", str(repo), "--issue", str(unreadable))
            assert_clean_failure(proc, code=3, because="Permission denied")
    finally:
        unreadable.chmod(0o644)


def test_a_deeply_nested_request_is_bad_input(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert_clean_failure(run("localize", "--request-json", str(path)))
    path.write_text(
        '{"instance_id": "x", "repo_path": ".", "issue": ' + "[" * 100_000 + "]" * 100_000 + "}"
    )
    assert_clean_failure(run("localize", "--request-json", str(path)))


def test_a_lone_surrogate_in_a_request_says_so(repo: Path, tmp_path: Path) -> None:
    path = tmp_path / "req.json"
    path.write_text(f'{{"instance_id": "x", "repo_path": "{repo}", "issue": "bad \\ud800 text"}}')
    proc = run("localize", "--request-json", str(path))
    assert_clean_failure(proc, because="lone surrogate")


def test_a_bad_request_is_placed_in_the_users_text(repo: Path, tmp_path: Path) -> None:
    """Found by a review: the line and column of a bad request were those of Python's
    rewriting of it (all on line 1), not of the file the user wrote."""
    path = tmp_path / "req.json"
    good = f'{{\n  "instance_id": "x",\n  "repo_path": {json.dumps(str(repo))},\n  "issue": "t"'
    for tail, place in [
        (',\n  "top_k": NaN\n}\n', "line 5 column 12"),
        (',\n  "top_k": 18446744073709551616\n}\n', "line 5 column"),
        (',\n  "repo": "x"\n}\n', "unknown field `repo`"),
    ]:
        path.write_text(good + tail)
        proc = run("localize", "--request-json", str(path), "--granularity", "function")
        assert_clean_failure(proc, because=place)
        assert "line 1 column" not in proc.stderr, proc.stderr
        if "unknown" in place:
            assert "line 5 column" in proc.stderr, proc.stderr


@pytest.mark.parametrize("value", ["1e20", "nan", "-1", "inf", "0"])
def test_an_impossible_llm_timeout_is_bad_input(repo: Path, value: str) -> None:
    proc = run(
        "localize",
        "--repo",
        str(repo),
        "--issue-text",
        ISSUE,
        "--llm-base-url",
        "http://127.0.0.1:9",
        "--llm-model",
        "m",
        "--llm-timeout",
        value,
    )
    # Not a number of seconds above 0 and up to a day: a usage error naming the flag.
    assert proc.returncode == 2 and "argument --llm-timeout" in proc.stderr, proc.stderr


def test_unknown_rrl_groups_are_refused_with_the_valid_ones(repo: Path) -> None:
    proc = run(
        "localize",
        "--repo",
        str(repo),
        "--issue-text",
        ISSUE,
        "--pipeline",
        "rrl",
        "--llm-option",
        'rrl_groups=["bogus"]',
    )
    assert_clean_failure(proc)
    assert "bogus" in proc.stderr and "identifiers_snippets" in proc.stderr, proc.stderr


def test_text_output_escapes_control_characters_in_file_names(repo: Path) -> None:
    (repo / "shop" / "evil\x1b[2J\x07.py").write_text("def apply_discount():\n    pass\n")
    proc = run(
        "localize", "--repo", str(repo), "--issue-text", ISSUE, "--format", "text", "--quiet"
    )
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "\x07" not in proc.stdout
    assert "evil\\x1b[2J\\x07.py" in proc.stdout


def test_eval_tables_and_batch_lines_escape_control_characters_from_the_dataset(
    repo: Path, tmp_path: Path
) -> None:
    trees = tmp_path / "trees"
    trees.mkdir()
    iid = "evil\x1b]0;pwned\x07"
    (trees / iid).symlink_to(repo, target_is_directory=True)
    row = {
        "instance_id": iid,
        "repo": "x\x1b[2Jevil",
        "problem_statement": ISSUE,
        "gold_files": ["shop/pricing.py"],
    }
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps(row) + "\n")
    common = ("--dataset", str(data), "--repos", str(trees))
    table = run("eval", *common, "--format", "text", "--quiet")
    assert table.returncode == 0, table.stderr
    assert "\x1b" not in table.stdout and "x\\x1b[2Jevil" in table.stdout, table.stdout
    lines = run("batch", *common, "--out", str(tmp_path / "loc.jsonl"))
    assert lines.returncode == 0, lines.stderr
    assert "\x1b" not in lines.stderr and "\x07" not in lines.stderr, lines.stderr
    # eval's and calibrate's progress is batch's: a line per instance off a terminal, escaped.
    progress = run("eval", *common)
    assert progress.returncode == 0, progress.stderr
    assert "\x1b" not in progress.stderr and "\x07" not in progress.stderr, progress.stderr
    assert "[1/1] evil\\u{1b}]0;pwned\\u{7}: " in progress.stderr, progress.stderr


def test_hint_files_must_be_a_list() -> None:
    with pytest.raises(InputError, match="list of path strings"):
        Hints(files="a.py")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        Hints.from_dict({"files": "a.py"})
    assert Hints(files=["a.py"]).files == ["a.py"]


def _interrupt(
    args: list[str], wait_s: float = 1.5
) -> tuple[subprocess.CompletedProcess[str], float]:
    """Runs the CLI, sends SIGINT after `wait_s`, and returns the process and how long it took
    to end after the signal."""
    # Started under nohup or in the background, this process ignores SIGINT and so would the
    # child: the child gets the default back, as a terminal would give it.
    proc = subprocess.Popen(
        [sys.executable, "-m", "blagent", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(wait_s)
    assert proc.poll() is None, proc.communicate()
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    return subprocess.CompletedProcess(args, proc.returncode, out, err), time.monotonic() - sent


# Sends this process a SIGINT as it begins to import blagent's native core, so that the
# Ctrl-C lands while the command is still starting, every time.
INTERRUPT_ON_CORE_IMPORT = """
import os, signal, sys

class InterruptOnCore:
    def find_spec(self, name, path=None, target=None):
        if name == "blagent._core":
            sys.meta_path.remove(self)
            os.kill(os.getpid(), signal.SIGINT)
        return None

sys.meta_path.insert(0, InterruptOnCore())
"""


@pytest.mark.parametrize("how", ["script", "module", "import"])
def test_ctrl_c_while_the_command_starts_exits_130_without_a_traceback(
    tmp_path: Path, how: str
) -> None:
    """A Ctrl-C in the first tenth of a second (Python importing blagent) printed Python's
    traceback; a program importing blagent still gets its KeyboardInterrupt."""
    if how == "module" and not hasattr(sys, "orig_argv"):
        pytest.skip("Python before 3.10 does not say it was started with -m")
    (tmp_path / "sitecustomize.py").write_text(INTERRUPT_ON_CORE_IMPORT)
    script = Path(sys.executable).parent / "blagent"
    command = {
        "script": [sys.executable, str(script), "--help"],
        "module": [sys.executable, "-m", "blagent", "--help"],
        "import": [sys.executable, "-c", "import blagent"],
    }[how]
    proc = subprocess.run(
        command,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        timeout=60,
    )
    if how == "import":
        assert "KeyboardInterrupt" in proc.stderr, proc.stderr
        assert proc.returncode != 0
    else:
        assert (proc.returncode, proc.stderr) == (130, "blagent: interrupted\n")
        assert proc.stdout == ""


def _llm_flags(url: str) -> list[str]:
    return [
        "--pipeline",
        "blagent",
        "--llm-base-url",
        url,
        "--llm-model",
        "m",
        "--llm-timeout",
        "120",
        "--quiet",
    ]


def test_ctrl_c_stops_localize_with_exit_130(repo: Path, hanging_url: str) -> None:
    proc, took = _interrupt(
        ["localize", "--repo", str(repo), "--issue-text", ISSUE, *_llm_flags(hanging_url)]
    )
    assert proc.returncode == 130, proc.stderr
    assert took < 3, took
    assert "Traceback" not in proc.stderr and "interrupted" in proc.stderr, proc.stderr


def test_ctrl_c_stops_batch_and_eval_and_the_output_resumes(
    repo: Path, tmp_path: Path, hanging_url: str
) -> None:
    trees = tmp_path / "trees"
    trees.mkdir()
    rows = []
    for iid in ("shop-1", "shop-2"):
        (trees / iid).symlink_to(repo, target_is_directory=True)
        rows.append(
            json.dumps(
                {"instance_id": iid, "repo": "acme/shop", "problem_statement": ISSUE, "patch": ""}
            )
        )
    data = tmp_path / "data.jsonl"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "loc.jsonl"
    common = ["--dataset", str(data), "--repos", str(trees)]
    # Every run in the blagent pipeline with model `m` (a resumed output takes only lines of
    # its own pipeline and model): with no server at the endpoint it ranks by retrieval alone.
    pipeline = ["--pipeline", "blagent", "--llm-base-url", "http://127.0.0.1:9"]
    pipeline += ["--llm-model", "m", "--llm-max-retries", "0"]
    first = run("batch", *common, "--out", str(out), "--ids", "shop-1", "--quiet", *pipeline)
    assert first.returncode == 0, first.stderr
    proc, took = _interrupt(["batch", *common, "--out", str(out), *_llm_flags(hanging_url)])
    assert proc.returncode == 130, proc.stderr
    assert took < 3, took
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = out.read_text().splitlines()
    assert [json.loads(line)["instance_id"] for line in lines] == ["shop-1"], (
        "intact, nothing half-written"
    )
    resumed = run("batch", *common, "--out", str(out), "--quiet", *pipeline)
    assert resumed.returncode == 0, resumed.stderr
    assert [json.loads(line)["instance_id"] for line in out.read_text().splitlines()] == [
        "shop-1",
        "shop-2",
    ]

    proc, took = _interrupt(["eval", *common, *_llm_flags(hanging_url)])
    assert proc.returncode == 130, proc.stderr
    assert took < 3, took
    assert "Traceback" not in proc.stderr, proc.stderr


def test_a_password_in_the_base_url_is_redacted(repo: Path) -> None:
    proc = run(
        "llm-check",
        "--llm-base-url",
        "http://alice:hunter2@127.0.0.1:9",
        "--llm-model",
        "m",
        "--llm-max-retries",
        "0",
    )
    assert proc.returncode == 3
    assert "hunter2" not in proc.stderr and "<redacted>" in proc.stderr, proc.stderr
    proc = run(
        "localize",
        "--repo",
        str(repo),
        "--issue-text",
        ISSUE,
        *_llm_flags("http://alice:hunter2@127.0.0.1:9"),
    )
    assert proc.returncode == 0, proc.stderr
    assert "hunter2" not in proc.stdout + proc.stderr


def test_a_lone_surrogate_in_the_python_api_is_an_input_error(repo: Path) -> None:
    request = LocalizeRequest("x", str(repo), "bad \ud800 text")
    with pytest.raises(InputError, match="surrogate"):
        Localizer().localize_request(request)
    # Found by a later review: in the Localizer's options, a bare UnicodeEncodeError.
    for options in (
        {"weights": {"\ud800": 1}},
        {"languages": ["\ud800"]},
        {"llm_options": {"\ud800": 1}},
    ):
        with pytest.raises(InputError, match="surrogate"):
            Localizer(**options)  # type: ignore[arg-type]
    # And, from a review of the Python API, in a path to index, a path in `reads` and the
    # LLM configuration's JSON.
    with pytest.raises(InputError, match="surrogate"):
        Localizer().index("/tmp/\ud800")
    with pytest.raises(InputError, match="surrogate"):
        Localizer(reads=["/tmp/\ud800"])
    with pytest.raises(InputError, match="surrogate"):
        Localizer(llm_config_json='{"model": "\ud800"}')
    # A path of bytes is read as UTF-8 (a review: a TypeError from the core's conversion).
    assert Localizer().index(os.fsencode(repo)).num_files > 0
    with pytest.raises(InputError, match="is not UTF-8"):
        Localizer().index(b"/tmp/\xff")
    # And in the module's own functions and classes (reviews: parse_source, LlmClient and
    # most other entry points of _core raised UnicodeEncodeError).
    from blagent import LlmClient

    chat = '[{"role": "user", "content": "x"}]'
    for call in (
        lambda: _core.parse_source("a.py", "def f():\n    return '\ud800'\n"),
        lambda: _core.parse_source("\udc80.py", "x = 1\n"),
        lambda: _core.check_request('{"issue": "\ud800"}'),
        lambda: LlmClient('{"model": "\ud800"}'),
        lambda: LlmClient().chat(chat.replace("x", "\ud800"), "t0"),
        lambda: LlmClient().chat(chat, "\ud800"),
        lambda: _core.Localizer().localize('{"repo_path": "/tmp", "issue": "\ud800"}'),
        lambda: _core.compare('{"runs": ["\ud800"]}'),
    ):
        with pytest.raises(InputError, match="a text argument holds a lone surrogate"):
            call()


def _analysis_inputs(tmp_path: Path, iid: str, checkout: Path) -> list[str]:
    """The minishop files written to `checkout`, an empty trees folder, and analyze-failures'
    dataset, locs, predictions (a changed fix) and report for `iid`, as command-line flags."""
    from test_analysis import DISCOUNT_FIX, FILES, patch, write_jsonl

    for rel, text in FILES.items():
        (checkout / rel).parent.mkdir(parents=True, exist_ok=True)
        (checkout / rel).write_text(text)
    (tmp_path / "trees").mkdir()
    gold = patch(DISCOUNT_FIX)
    dataset = write_jsonl(
        tmp_path / "data.jsonl", [{"instance_id": iid, "repo": "acme/shop", "patch": gold}]
    )
    locs = write_jsonl(
        tmp_path / "locs.jsonl", [{"instance_id": iid, "found_files": ["shop/pricing.py"]}]
    )
    preds = write_jsonl(
        tmp_path / "preds.jsonl",
        [{"instance_id": iid, "model_patch": gold.replace("clamped", "capped")}],
    )
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"resolved": [], "unresolved": [iid]}))
    return [
        "--dataset",
        str(dataset),
        "--locs",
        str(locs),
        "--predictions",
        str(preds),
        "--report",
        str(report),
        "--repos",
        str(tmp_path / "trees"),
    ]


def test_analyze_failures_does_not_read_trees_outside_repos(tmp_path: Path) -> None:
    proc = run("analyze-failures", *_analysis_inputs(tmp_path, "../outside", tmp_path / "outside"))
    assert proc.returncode == 0, proc.stderr
    warnings = json.loads(proc.stdout)["warnings"]
    assert any("inside the trees folder" in w for w in warnings), warnings


def test_analyze_failures_writes_nothing_into_a_tree_reached_through_a_link(
    tmp_path: Path,
) -> None:
    checkout = tmp_path / "checkout"
    flags = _analysis_inputs(tmp_path, "a", checkout)
    (tmp_path / "trees" / "a").symlink_to(checkout, target_is_directory=True)
    before = sorted(p.relative_to(checkout) for p in checkout.rglob("*"))
    proc = run("analyze-failures", *flags, "--out-dir", str(checkout / "analysis"))
    assert_clean_failure(proc, because="which this run reads")
    assert sorted(p.relative_to(checkout) for p in checkout.rglob("*")) == before


def test_an_interrupted_analysis_leaves_the_last_one_as_it_was(tmp_path: Path) -> None:
    """Found by a review: Ctrl-C during `analyze-failures` cut its parses short, read those
    files as holding no function, and wrote that analysis over the last one before exiting
    130. Now the run stops between instances and writes nothing."""
    flags = _analysis_inputs(tmp_path, "a", tmp_path / "checkout")
    (tmp_path / "trees" / "a").symlink_to(tmp_path / "checkout", target_is_directory=True)
    out = tmp_path / "analysis"
    first = run("analyze-failures", *flags, "--out-dir", str(out))
    assert first.returncode == 0, first.stderr
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    # Twelve instances of a large file, each patched in 800 places: seconds of parsing each.
    big = tmp_path / "big"
    body = "".join(f"def f{i}(x):\n    y = x + {i}\n    return y\n\n\n" for i in range(20_000))
    (big / "pkg").mkdir(parents=True)
    (big / "pkg" / "m.py").write_text(body)
    hunks = "".join(
        f"@@ -{5 * i + 2} +{5 * i + 2} @@\n-    y = x + {i}\n+    y = x - {i}\n"
        for i in range(0, 20_000, 25)
    )
    gold = f"diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n{hunks}"
    ids = [f"b{i}" for i in range(12)]
    for iid in ids:
        (tmp_path / "trees" / iid).symlink_to(big, target_is_directory=True)
    rows = [{"instance_id": i, "repo": "acme/big", "patch": gold} for i in ids]
    (tmp_path / "data.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    locs = [{"instance_id": i, "found_files": ["pkg/m.py"]} for i in ids]
    (tmp_path / "locs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in locs))
    preds = [{"instance_id": i, "model_patch": gold} for i in ids]
    (tmp_path / "preds.jsonl").write_text("".join(json.dumps(r) + "\n" for r in preds))
    (tmp_path / "report.json").write_text(json.dumps({"resolved": [], "unresolved": ids}))
    proc, took = _interrupt(["analyze-failures", *flags, "--out-dir", str(out)], wait_s=1.0)
    assert proc.returncode == 130, proc.stderr
    assert took < 5, took
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_a_cassette_is_not_recorded_inside_the_trees(repo: Path, tmp_path: Path) -> None:
    trees = tmp_path / "trees"
    trees.mkdir()
    (trees / "a").symlink_to(repo, target_is_directory=True)
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"instance_id": "a", "problem_statement": ISSUE}) + "\n")
    cassette = trees / "cassette.jsonl"
    proc = run(
        "batch",
        "--dataset",
        str(data),
        "--repos",
        str(trees),
        "--out",
        str(tmp_path / "loc.jsonl"),
        "--pipeline",
        "blagent",
        "--llm-base-url",
        "http://127.0.0.1:9",
        "--llm-model",
        "m",
        "--llm-record",
        str(cassette),
    )
    assert_clean_failure(proc, because="which this run reads")
    assert not cassette.exists() and not (tmp_path / "loc.jsonl").exists()


# Issue 27: the third round of hostile inputs.

NESTED = {
    "gen.py": "x = " + "(" * 20_000 + "1" + ")" * 20_000 + "\n\ndef after_the_data():\n    pass\n",
    "Gen.java": "class Gen { void f() { "
    + "{" * 20_000
    + "g();"
    + "}" * 20_000
    + " }\n void afterTheData() {} }\n",
    "Gen.kt": "fun f() = " + "(" * 20_000 + "1" + ")" * 20_000 + "\nfun afterTheData() {}\n",
    "deep.py": "".join("    " * i + f"class C{i}:\n" for i in range(150)) + "    " * 150 + "pass\n",
}


def test_deeply_nested_code_is_indexed_by_the_cli_batch_and_python_api(
    repo: Path, tmp_path: Path
) -> None:
    """Each file once killed the process (SIGSEGV, nothing on stderr); the deep part of
    `deep.py` is listed, the rest of every file indexed."""
    for name, text in NESTED.items():
        (repo / "shop" / name).write_text(text)
    proc = run(
        "localize",
        "--repo",
        str(repo),
        "--issue-text",
        "after_the_data afterTheData crashes",
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    deep = [s for s in result["skipped"] if s["reason"] == "nested_too_deep"]
    # Classes past 100 levels, and blocks past 100 levels that are kept whole as one chunk.
    assert {s["path"] for s in deep} == {"shop/deep.py", "shop/Gen.java"}, result["skipped"]
    assert [(s["start_line"], s["end_line"]) for s in deep if s["path"] == "shop/deep.py"] == [
        (100, 151)
    ], deep
    paths = [f["path"] for f in result["files"]]
    assert "shop/gen.py" in paths and "shop/Gen.kt" in paths, paths

    code = (
        "import sys\nfrom blagent import Localizer\n"
        "r = Localizer(progress=False).localize(sys.argv[1], 'afterTheData is wrong')\n"
        "print(len(r.files))\n"
    )
    api = subprocess.run(
        [sys.executable, "-c", code, str(repo)], capture_output=True, text=True, timeout=120
    )
    assert api.returncode == 0 and int(api.stdout) > 0, api.stderr

    trees = tmp_path / "trees"
    trees.mkdir()
    (trees / "a").symlink_to(repo, target_is_directory=True)
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"instance_id": "a", "problem_statement": "afterTheData"}) + "\n")
    out = tmp_path / "loc.jsonl"
    batch = run(
        "batch", "--dataset", str(data), "--repos", str(trees), "--out", str(out), "--quiet"
    )
    assert batch.returncode == 0, batch.stderr
    assert json.loads(out.read_text())["instance_id"] == "a"


def test_a_megabyte_of_dotted_text_is_localized_within_the_bound(
    repo: Path, tmp_path: Path
) -> None:
    """`'a.' * 500_000` once took over 100 s (quadratic); 120 s is the hang guard here, the
    measured time is in bench/hostile_issue_bench.py."""
    issue = tmp_path / "issue.md"
    issue.write_text("a." * 500_000)
    proc = run("localize", "--repo", str(repo), "--issue", str(issue), "--quiet")
    assert proc.returncode == 0, proc.stderr


def test_python_api_arguments_of_the_wrong_type_say_so(repo: Path) -> None:
    with pytest.raises(TypeError, match="hints must be a Hints"):
        Localizer(progress=False).localize(repo, ISSUE, hints="a.py")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="missing repo_path, issue"):
        LocalizeRequest.from_dict({})
    with pytest.raises(InputError, match="must be a str"):
        LocalizeRequest.from_dict({"instance_id": 1, "repo_path": str(repo), "issue": ISSUE})
    with pytest.raises(InputError, match="JSON object"):
        LocalizeRequest.from_dict([])  # type: ignore[arg-type]
    # Found by a review: `dense="no"` turned dense retrieval on, and a NaN weight or option
    # was a syntax error placed in text the caller never saw.
    with pytest.raises(InputError, match="dense is True or False, not 'no'"):
        Localizer(dense="no")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="progress is True or False, not 1"):
        Localizer(progress=1)  # type: ignore[arg-type]
    # Found by a later review: dense settings were checked only with `dense=True`, while the
    # command line refuses them at once.
    with pytest.raises(InputError, match="index_kind is 'exact' or 'hnsw', not 'bogus'"):
        Localizer(index_kind="bogus")
    for bad in (-5, 2**40, True, 1.5):
        with pytest.raises(InputError, match="dense_max_tokens is a whole number"):
            Localizer(dense_max_tokens=bad)  # type: ignore[arg-type]
    Localizer(index_kind="hnsw", dense_max_tokens=0)
    looped: dict[str, object] = {"repo_path": str(repo), "issue": ISSUE}
    looped["extra"] = looped
    with pytest.raises(InputError, match="Circular reference"):
        Localizer().localize_request(looped)
    with pytest.raises(InputError, match=r"weights\.definition is nan, not a finite number"):
        Localizer(weights={"definition": float("nan")})
    with pytest.raises(InputError, match="max_steps is inf, not a finite number"):
        Localizer(llm_options={"max_steps": float("inf")})


def test_a_non_finite_llm_option_is_named(repo: Path) -> None:
    """Found by a review: `--llm-option model_weight=1e400` was "expected value at line 1
    column 18"."""
    proc = run(
        "localize", "--repo", str(repo), "--issue-text", ISSUE, "--pipeline", "blagent",
        "--llm-base-url", "http://127.0.0.1:9", "--llm-model", "m",
        "--llm-option", "model_weight=1e400",
    )  # fmt: skip
    assert_clean_failure(proc, because="model_weight is inf, not a finite number")


@pytest.mark.parametrize(
    "weights,message",
    [
        ("[1]", "JSON object"),
        ('{"definition": -1}', "at least 0"),
        # A review: -1e308 was refused as "at most 3.4e38".
        ('{"definition": -1e308}', "at least 0, not -1e+308"),
        ('{"nope": 1}', "unknown field `nope`"),
    ],
)
def test_fusion_weights_are_an_object_of_non_negative_numbers(
    repo: Path, tmp_path: Path, weights: str, message: str
) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(
        json.dumps(
            {"instance_id": "a", "problem_statement": ISSUE, "gold_files": ["shop/pricing.py"]}
        )
        + "\n"
    )
    proc = run(
        "eval", "--dataset", str(data), "--repos", str(tmp_path), "--weights", weights, "--quiet"
    )
    assert_clean_failure(proc)
    assert message in proc.stderr, proc.stderr


def test_compare_bounds_its_resamples(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(
        json.dumps({"instance_id": "a", "problem_statement": ISSUE, "gold_files": ["a.py"]}) + "\n"
    )
    runs = []
    for name in ("x", "y"):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(json.dumps({"instance_id": "a", "found_files": ["a.py"]}) + "\n")
        runs.append(str(path))
    # Found by a review: 0 was argparse's "from 1 to 4294967295" (exit 2), 10000000 the
    # core's "between 1 and 1000000" (exit 1); one flag has one range.
    for value in ("0", "10000000"):
        proc = run("compare", *runs, "--dataset", str(data), "--resamples", value)
        assert proc.returncode == 2 and "must be from 1 to 1000000" in proc.stderr, proc.stderr


def test_a_missing_input_file_is_bad_input(repo: Path, tmp_path: Path) -> None:
    missing = str(tmp_path / "missing.jsonl")
    for args in (
        ("eval", "--dataset", missing, "--repos", str(tmp_path)),
        (
            "batch",
            "--dataset",
            missing,
            "--repos",
            str(tmp_path),
            "--out",
            str(tmp_path / "o.jsonl"),
        ),
        ("compare", missing, missing, "--dataset", missing),
    ):
        proc = run(*args)
        assert_clean_failure(proc, because="does not exist")


def test_a_cassette_is_not_recorded_inside_the_repository(repo: Path, tmp_path: Path) -> None:
    cassette = repo / "rec.jsonl"
    llm = ("--llm-base-url", "http://127.0.0.1:9", "--llm-model", "m")
    proc = run(
        "localize", "--repo", str(repo), "--issue-text", ISSUE, *llm, "--llm-record", str(cassette)
    )
    assert_clean_failure(proc, because="which this run reads")
    assert not cassette.exists()
    request = tmp_path / "req.json"
    request.write_text(json.dumps({"repo_path": str(repo), "issue": ISSUE}))
    proc = run("localize", "--request-json", str(request), *llm, "--llm-record", str(cassette))
    assert_clean_failure(proc)
    assert not cassette.exists()
    # Through the Python API, with the repository named only when it is indexed.
    outside = tmp_path / "rec.jsonl"
    config = {"base_url": "http://127.0.0.1:9", "model": "m", "record": str(cassette)}
    localizer = Localizer(llm_config_json=json.dumps(config))
    with pytest.raises(InputError, match="which this run reads"):
        localizer.localize(repo, ISSUE)
    config["record"] = str(outside)
    assert Localizer(llm_config_json=json.dumps(config)).localize(repo, ISSUE).files


def test_ctrl_c_stops_a_long_compare(tmp_path: Path) -> None:
    ids = [f"i{n}" for n in range(3000)]
    data = tmp_path / "data.jsonl"
    data.write_text(
        "".join(json.dumps({"instance_id": i, "gold_files": ["a.py"]}) + "\n" for i in ids)
    )
    runs = []
    for name, found in (("x", ["a.py"]), ("y", ["b.py", "a.py"])):
        path = tmp_path / f"{name}.jsonl"
        path.write_text(
            "".join(json.dumps({"instance_id": i, "found_files": found}) + "\n" for i in ids)
        )
        runs.append(str(path))
    proc, took = _interrupt(["compare", *runs, "--dataset", str(data), "--resamples", "1000000"])
    assert proc.returncode == 130, proc.stderr
    assert took < 3, took


def test_standard_output_that_fails_or_closes_gives_one_line(repo: Path) -> None:
    """A reader that goes away, a full disk, a closed stream: a one-line error (exit 3), or
    the run as usual when standard output was closed before it started, never a traceback."""
    args = [sys.executable, "-m", "blagent", "localize", "--repo", str(repo), "--issue-text", ISSUE]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the result is written: the write meets a broken pipe
    err = proc.stderr.read()
    assert proc.wait(timeout=120) == 3, err
    assert err.startswith("blagent: error:") and "Traceback" not in err, err
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            failed = subprocess.run(
                args, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120
            )
        assert_clean_failure(failed, 3)
        assert "No space left" in failed.stderr, failed.stderr
    closed = subprocess.run(
        args, stderr=subprocess.PIPE, text=True, timeout=120, preexec_fn=lambda: os.close(1)
    )
    assert closed.returncode == 0, closed.stderr
    assert "Traceback" not in closed.stderr, closed.stderr


def test_arguments_that_are_not_utf8_are_named(repo: Path, tmp_path: Path) -> None:
    out = os.fsdecode(os.fsencode(str(tmp_path)) + b"/o\xff.jsonl")
    proc = run("eval", "--dataset", str(tmp_path / "d.jsonl"), "--repos", str(repo), "--out", out)
    assert_clean_failure(proc)
    assert "--out" in proc.stderr and "not UTF-8 (byte 0xff)" in proc.stderr, proc.stderr


def test_a_write_that_fails_part_way_leaves_only_whole_lines(repo: Path, tmp_path: Path) -> None:
    """Found by a review: a batch output that reached a file size limit (as a full disk would)
    ended in half a line, which Agentless chokes on. The failed line is taken back; the run
    fails with the I/O error and a rerun resumes after the last whole line."""
    import resource

    trees = tmp_path / "trees"
    trees.mkdir()
    rows = []
    for i in range(3):
        (trees / f"shop-{i}").symlink_to(repo, target_is_directory=True)
        rows.append({"instance_id": f"shop-{i}", "problem_statement": ISSUE})
    data = tmp_path / "d.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "o.jsonl"
    args = ["batch", "--dataset", str(data), "--repos", str(trees), "--out", str(out), "--quiet"]
    limit = 10_000  # bytes: a line is about 7 KB, so the second crosses it part way

    def cap() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    failed = run(*args, preexec_fn=cap)
    assert_clean_failure(failed, 3, "File too large")
    written = out.read_bytes()
    assert 0 < len(written) < limit and written.endswith(b"\n"), len(written)
    ids = [json.loads(line)["instance_id"] for line in written.decode().splitlines()]
    assert ids == [f"shop-{i}" for i in range(len(ids))] and len(ids) < 3, ids
    resumed = run(*args)
    assert resumed.returncode == 0, resumed.stderr
    done = [json.loads(line)["instance_id"] for line in out.read_text().splitlines()]
    assert done == ["shop-0", "shop-1", "shop-2"], done


def test_empty_arguments_are_refused_by_name(repo: Path, tmp_path: Path) -> None:
    """Found by a review: `--ids ""` selected every instance, `--out-dir ""` wrote the analysis
    into the current folder and `--cache-dir ""` the caches, `--failures-out ""` was as if not
    given. Each is bad input naming its flag, before anything runs."""
    data = tmp_path / "d.jsonl"
    row = {"instance_id": "shop-1", "problem_statement": ISSUE, "gold_files": ["shop/pricing.py"]}
    data.write_text(json.dumps(row) + "\n")
    common = ["--dataset", str(data), "--repos", str(tmp_path)]
    out = str(tmp_path / "o.jsonl")
    cases = [
        (["eval", *common, "--ids", ""], "--ids"),
        (["eval", *common, "--ids-file", ""], "--ids-file"),
        (["batch", *common, "--out", out, "--failures-out", ""], "--failures-out"),
        (["localize", "--repo", str(repo), "--issue-text", "x", "--cache-dir", ""], "--cache-dir"),
        (["compare", out, "", "--dataset", str(data)], "runs"),
    ]
    for args, flag in cases:
        proc = run(*args)
        assert_clean_failure(proc)
        assert f"{flag} is empty" in proc.stderr, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["d.jsonl", "repo"], "nothing written"
    here = tmp_path / "here"
    here.mkdir()
    analyze = ["analyze-failures", "--dataset", str(data), "--locs", str(data)]
    proc = run(*analyze, "--predictions", str(data), "--out-dir", "", cwd=here)
    assert_clean_failure(proc)
    assert "--out-dir is empty" in proc.stderr and list(here.iterdir()) == [], proc.stderr


def test_eval_refuses_ids_its_dataset_lacks(repo: Path, tmp_path: Path) -> None:
    trees = tmp_path / "trees"
    trees.mkdir()
    (trees / "shop-1").symlink_to(repo, target_is_directory=True)
    data = tmp_path / "data.jsonl"
    row = {"instance_id": "shop-1", "problem_statement": ISSUE, "gold_files": ["shop/pricing.py"]}
    data.write_text(json.dumps(row) + "\n")
    common = ["--dataset", str(data), "--repos", str(trees), "--quiet"]
    proc = run("eval", *common, "--ids", "shop-1,typo")
    assert_clean_failure(proc)
    assert "1 selected id(s) not in" in proc.stderr and "typo" in proc.stderr, proc.stderr
    assert run("eval", *common, "--ids", "shop-1").returncode == 0
    for weights, why in [
        ("[]", "JSON object"),
        ('{"definition": 1e999}', "finite number"),
        ('{"definition": 1e308}', "at most 3.4028235e38"),  # finite, but past an f32
        ('{"definition": 1, "definition": 0}', "duplicate key `definition`"),
    ]:
        proc = run("eval", *common, "--weights", weights)
        assert_clean_failure(proc)
        assert why in proc.stderr, proc.stderr


def test_an_interrupt_stops_the_call_in_progress_not_later_ones_in_other_threads(
    repo: Path, tmp_path: Path
) -> None:
    """A KeyboardInterrupt handled in one thread used to fail every later call of the others
    (the stop flag stayed up while any call was open)."""
    big = tmp_path / "big"
    for i in range(600):  # slow enough to index that the interrupt finds it in progress
        module = big / f"pkg{i % 20}" / f"mod{i}.py"
        module.parent.mkdir(parents=True, exist_ok=True)
        module.write_text("".join(f"def f{i}_{j}(x):\n    return x + {j}\n\n" for j in range(60)))
    localizer = Localizer(top_k=3)
    stop = threading.Event()
    outcomes: list[tuple[float, str]] = []

    def worker() -> None:
        while not stop.is_set():
            started = time.monotonic()
            try:
                localizer.localize(repo, ISSUE)
                outcomes.append((started, "ok"))
            except BaseException as err:  # the outcome is what is measured
                outcomes.append((started, type(err).__name__))

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.2)
        with pytest.raises(KeyboardInterrupt):
            localizer.localize(big, "f3_7 returns the wrong value")
        handled = time.monotonic()
        time.sleep(2.0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        stop.set()
        for thread in threads:
            thread.join(timeout=60)
    later = [outcome for started, outcome in outcomes if started >= handled + 0.5]
    assert later and set(later) == {"ok"}, later


# A pre-tokenizer regex that backtracks past Oniguruma's retry limit on a run of letters: the
# tokenizer panics inside the search.
BACKTRACKING_SPLIT = {
    "type": "Split",
    "pattern": {"Regex": r"(\w|\w\w)*\W(?<=q)"},
    "behavior": "Isolated",
    "invert": False,
}


def test_a_tokenizer_that_gives_up_on_a_text_is_a_model_error(tmp_path: Path) -> None:
    """It was an internal error (a panic in the tokenizer's regex search)."""
    folder = tmp_path / "model"
    shutil.copytree(default_model_dir(), folder)
    tokenizer = json.loads((folder / "tokenizer.json").read_text())
    tokenizer["pre_tokenizer"] = BACKTRACKING_SPLIT
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer))
    encoder = _core.Encoder(str(folder))
    assert len(encoder.embed(["short words"])) == 1
    with pytest.raises(ModelError, match=r"the tokenizer of .* failed on a text .*retry-limit"):
        encoder.embed(["a" * 60])


@pytest.mark.parametrize(
    ("field", "value", "why"),
    [
        ("num_attention_heads", 0, "num_attention_heads must be from 1"),
        ("num_attention_heads", 7, "does not split over 7 attention heads"),
        ("max_position_embeddings", 100_000_000, "max_position_embeddings must be from 1"),
    ],
)
def test_a_model_folder_whose_sizes_no_model_has_is_a_clear_error(
    tmp_path: Path, field: str, value: int, why: str
) -> None:
    """A head count of 0 divided by zero (a panic through the Python API); sizes that build
    tables before any weight is read asked for unbounded memory."""
    folder = tmp_path / "model"
    shutil.copytree(default_model_dir(), folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, field: value}))
    with pytest.raises(ModelError, match=why):
        _core.Encoder(str(folder))
    with pytest.raises(ModelError, match=why):
        Localizer(dense=True, model_dir=folder)


def test_numbers_json_cannot_carry_and_newlines_in_errors_get_one_clean_line(
    repo: Path, tmp_path: Path
) -> None:
    """Found by a review: an integer of more digits than Python converts (4,300) in a request,
    `--weights` or an LLM option gave a traceback, weights whose sum an f32 cannot hold gave
    `null` scores, and a newline in a path printed a second, forged `blagent:` line."""
    huge = "9" * 5000
    request = tmp_path / "request.json"
    request.write_text(f'{{"repo_path": "{repo}", "issue": "x", "top_k": {huge}}}')
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    data = tmp_path / "data.jsonl"
    row = {"instance_id": "a", "problem_statement": ISSUE, "gold_files": ["shop/pricing.py"]}
    data.write_text(json.dumps(row) + "\n")
    trees = tmp_path / "trees"
    trees.mkdir()
    (trees / "a").symlink_to(repo, target_is_directory=True)
    on_data = ("eval", "--dataset", str(data), "--repos", str(trees), "--quiet")
    cases = [
        (("localize", "--request-json", str(request)), "number out of range at line 1 column"),
        ((*on_data, "--weights", f'{{"definition": {huge}}}'), "is not JSON blagent can read"),
        ((*on_data, "--weights", '{"bm25_file": 2e38, "bm25_chunk": 2e38}'), "add up to"),
        (("localize", "--repo", str(repo), "--issue", str(issue), "--llm-option",
          f"max_steps={huge}", "--pipeline", "rrl", "--llm-base-url", "http://127.0.0.1:9",
          "--llm-model", "m"), "invalid LLM options"),
        (("localize", "--repo", f"{tmp_path}/no\nblagent: forged", "--issue", str(issue)),
         "\\x0ablagent: forged"),
    ]  # fmt: skip
    for args, because in cases:
        proc = run(*args)
        assert_clean_failure(proc, because=because)
        assert proc.stderr.count("\n") == 1, proc.stderr
    for weights in ({"definition": 10**5000}, {"bm25_file": 2e38, "bm25_chunk": 2e38}):
        with pytest.raises(InputError):
            Localizer(weights=weights)
    for top_k in ("3", 2.0, True, 0):
        with pytest.raises(InputError, match="top_k must be a whole number"):
            Localizer(top_k=top_k)  # type: ignore[arg-type]


def test_an_error_quoting_a_huge_value_is_cut(tmp_path: Path) -> None:
    """Found by a review: a 200 KB `gold_files` string came back as a 200 KB error line."""
    data = tmp_path / "data.jsonl"
    row = {"instance_id": "a", "repo": "o/r", "problem_statement": "x", "gold_files": "p" * 200_000}
    data.write_text(json.dumps(row) + "\n")
    (tmp_path / "trees").mkdir()
    proc = run("eval", "--dataset", str(data), "--repos", str(tmp_path / "trees"), "--quiet")
    assert_clean_failure(proc)
    assert len(proc.stderr) < 2_200 and "more characters" in proc.stderr, len(proc.stderr)


def test_a_generated_patch_that_is_not_a_string_is_bad_input(tmp_path: Path) -> None:
    """Found by a review: `"model_patch": 5` was read as an empty patch, without a warning."""
    flags = _analysis_inputs(tmp_path, "acme__shop-1", tmp_path / "checkout")
    preds = Path(flags[flags.index("--predictions") + 1])
    preds.write_text(json.dumps({"instance_id": "acme__shop-1", "model_patch": 5}) + "\n")
    proc = run("analyze-failures", *flags)
    assert_clean_failure(proc, because="model_patch of acme__shop-1 is a number")


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_process_forked_after_a_call_is_refused_not_hung(repo: Path) -> None:
    """Found by a review: after a call in the parent, a forked child's call waited forever
    (and through Ctrl-C) on worker threads that a fork does not copy."""
    code = f"""
import os, sys
from blagent import InputError, Localizer
localizer = Localizer()
localizer.localize({str(repo)!r}, "apply_discount fails")
pid = os.fork()
if pid == 0:
    try:
        localizer.localize({str(repo)!r}, "apply_discount fails")
        os._exit(3)
    except InputError as err:
        os._exit(0 if "forked" in str(err) else 4)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_lexical_query_in_an_index_built_before_a_fork_runs_in_the_child(repo: Path) -> None:
    """Queries in an index built once in a parent and then forked run on the calling thread:
    the fork refusal leaves them alone (found by a review of that refusal)."""
    code = f"""
import os, sys
from blagent import Localizer
localizer = Localizer()
index = localizer.index({str(repo)!r})
localizer.localize(index, "apply_discount fails")
pid = os.fork()
if pid == 0:
    result = localizer.localize(index, "apply_discount fails")
    os._exit(0 if result.files else 5)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")
def test_a_child_forked_while_another_thread_is_in_a_call_refuses_every_call(repo: Path) -> None:
    """Found by a review: a lexical query in the child, otherwise allowed, hung for good on a
    one-time initialisation that the parent's thread was in when it forked. Here the parent's
    thread waits on a slow LLM server, so the fork lands in its call."""
    code = f"""
import http.server, json, os, sys, threading, time
from blagent import InputError, LlmClient, Localizer

class Slow(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        time.sleep(3)
        body = json.dumps({{"choices": [{{"message": {{"content": "ok"}}, "finish_reason": "stop"}}]}})
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())
    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Slow)
threading.Thread(target=server.serve_forever, daemon=True).start()
url = f"http://127.0.0.1:{{server.server_address[1]}}/v1"
localizer = Localizer()
index = localizer.index({str(repo)!r})
client = LlmClient(json.dumps({{"base_url": url, "model": "m"}}))
messages = json.dumps([{{"role": "user", "content": "hi"}}])
waiting = threading.Thread(target=client.chat, args=(messages, "t0"))
waiting.start()
time.sleep(1)
pid = os.fork()
if pid == 0:
    try:
        localizer.localize(index, "apply_discount fails")
        os._exit(3)
    except InputError as err:
        os._exit(0 if "forked while another thread" in str(err) else 4)
_, status = os.waitpid(pid, 0)
waiting.join()
# The parent goes on, and a child forked with no call running queries as before.
localizer.localize(index, "apply_discount fails")
pid = os.fork()
if pid == 0:
    os._exit(0 if localizer.localize(index, "apply_discount fails").files else 5)
_, again = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status) or os.waitstatus_to_exitcode(again))
"""
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0, (proc.returncode, proc.stderr)


def test_a_file_whose_lines_end_in_a_lone_cr_gets_its_functions_and_lines(repo: Path) -> None:
    """Classic Mac OS line ends: Python counts a lone CR as a line end, and so does blagent."""
    localizer = Localizer(top_k=3)
    unix = {e.id: e.lines for e in localizer.localize(repo, ISSUE, granularity="function").entities}
    for name in ("pricing.py", "cart.py"):
        path = repo / "shop" / name
        path.write_bytes(path.read_bytes().replace(b"\n", b"\r"))
    mac = {e.id: e.lines for e in localizer.localize(repo, ISSUE, granularity="function").entities}
    assert mac["shop/pricing.py::apply_discount"] == unix["shop/pricing.py::apply_discount"]
    assert mac["shop/cart.py::Cart.total"] == unix["shop/cart.py::Cart.total"]
    assert mac == unix


def test_a_dataset_line_that_repeats_a_key_is_refused(repo: Path, tmp_path: Path) -> None:
    trees = tmp_path / "trees"
    trees.mkdir()
    (trees / "shop-1").symlink_to(repo, target_is_directory=True)
    data = tmp_path / "data.jsonl"
    row = json.dumps({"instance_id": "shop-1", "problem_statement": ISSUE})
    # Two gold lists: serde_json alone would keep the second without a word.
    data.write_text(row[:-1] + ', "gold_files": ["shop/cart.py"], "gold_files": ["x.py"]}\n')
    proc = run("eval", "--dataset", str(data), "--repos", str(trees), "--quiet")
    assert_clean_failure(proc)
    assert "data.jsonl:1" in proc.stderr and "duplicate key `gold_files`" in proc.stderr, (
        proc.stderr
    )


def test_a_request_that_repeats_a_key_is_refused(repo: Path, tmp_path: Path) -> None:
    # Found by a review: Python's json.loads keeps the last of a repeated key.
    request = tmp_path / "request.json"
    body = json.dumps({"repo_path": str(repo), "issue": ISSUE})
    request.write_text(body[:-1] + ', "hints": {"files": ["x.py"], "files": ["shop/cart.py"]}}')
    proc = run("localize", "--request-json", str(request), "--quiet")
    assert_clean_failure(proc, because="duplicate field `files` at line 1 column")
    request.write_text(body)
    assert run("localize", "--request-json", str(request), "--quiet").returncode == 0
