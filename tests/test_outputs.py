"""An output never deletes, truncates or overwrites an input or a file blagent did not write
(issue 27): batch, eval, calibrate, analyze-failures and the cassette, through the CLI."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_cli import run
from test_hardening import _analysis_inputs, assert_clean_failure
from test_localizer import ISSUE


@pytest.fixture
def run_inputs(repo: Path, tmp_path: Path) -> tuple[Path, Path]:
    """A two-instance dataset whose trees are the shop repository."""
    trees = tmp_path / "trees"
    trees.mkdir()
    rows = []
    for iid in ("shop-1", "shop-2"):
        (trees / iid).symlink_to(repo, target_is_directory=True)
        rows.append(
            {
                "instance_id": iid,
                "repo": "acme/shop",
                "problem_statement": ISSUE,
                "gold_files": ["shop/pricing.py"],
            }
        )
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data, trees


def test_no_command_writes_over_its_dataset(run_inputs: tuple[Path, Path]) -> None:
    data, trees = run_inputs
    before = data.read_bytes()
    common = ["--dataset", str(data), "--repos", str(trees), "--quiet"]
    cases = [
        ("eval", *common, "--out", str(data)),
        ("eval", *common, "--signals-out", str(data)),
        ("batch", *common, "--out", str(data)),
        ("batch", *common, "--out", str(data.parent / "o.jsonl"), "--failures-out", str(data)),
        (
            "calibrate",
            *common,
            "--llm-base-url",
            "http://127.0.0.1:9",
            "--llm-model",
            "m",
            "--out",
            str(data),
        ),
    ]
    for args in cases:
        proc = run(*args)
        assert_clean_failure(proc, because="input of this run")
        assert data.read_bytes() == before, args


def test_outputs_inside_the_trees_folder_are_refused(run_inputs: tuple[Path, Path]) -> None:
    data, trees = run_inputs
    inside = trees / "shop-1" / "shop" / "preds.jsonl"
    proc = run(
        "eval", "--dataset", str(data), "--repos", str(trees), "--out", str(inside), "--quiet"
    )
    assert_clean_failure(proc, because="which this run reads")
    assert not inside.exists()


def test_outputs_beside_the_trees_through_dot_dot_are_written(
    run_inputs: tuple[Path, Path],
) -> None:
    data, trees = run_inputs
    beside = trees / ".." / "preds.jsonl"
    proc = run(
        "eval", "--dataset", str(data), "--repos", str(trees), "--out", str(beside), "--quiet"
    )
    assert proc.returncode == 0, proc.stderr
    assert (trees.parent / "preds.jsonl").is_file()


def test_an_output_with_another_name_in_a_tree_is_refused(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """A hard link gives one file two names: the output's other name may be a tree's source,
    which the run reads and must not change, however much the content looks like ours."""
    data, trees = run_inputs
    preds = tmp_path / "preds.jsonl"
    common = ["--dataset", str(data), "--repos", str(trees), "--quiet"]
    assert run("eval", *common, "--out", str(preds)).returncode == 0
    source = trees / "shop-1" / "shop" / "evil.py"
    os.link(preds, source)
    before = source.read_bytes()
    for command in ("eval", "batch"):
        proc = run(command, *common, "--out", str(preds))
        assert_clean_failure(proc, because="hard links")
        assert source.read_bytes() == before


def test_an_output_that_is_standard_output_is_refused(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """`--out f > f`: the report written to standard output would land in the predictions."""
    data, trees = run_inputs
    out = tmp_path / "same.jsonl"
    with out.open("w") as stdout:
        common = ["--dataset", str(data), "--repos", str(trees), "--quiet"]
        proc = run("eval", *common, "--out", str(out), stdout=stdout)
    assert_clean_failure(proc, because="standard output")
    assert out.read_bytes() == b""


def test_a_cassette_may_not_be_the_issue_file(repo: Path, tmp_path: Path) -> None:
    issue = tmp_path / "issue.md"
    issue.write_text(ISSUE)
    proc = run(
        "localize", "--repo", str(repo), "--issue", str(issue), "--pipeline", "rrl",
        "--llm-base-url", "http://127.0.0.1:9", "--llm-model", "m", "--llm-record", str(issue),
    )  # fmt: skip
    assert_clean_failure(proc, because="an input of this run")
    assert issue.read_text() == ISSUE


def test_the_failures_file_is_never_deleted_and_a_foreign_one_is_refused(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    data, trees = run_inputs
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    out = tmp_path / "loc.jsonl"
    proc = run(
        "batch",
        "--dataset",
        str(data),
        "--repos",
        str(trees),
        "--out",
        str(out),
        "--failures-out",
        str(notes),
        "--quiet",
    )
    assert_clean_failure(proc, because="refusing to overwrite")
    assert notes.read_text() == "my notes\n"
    # The last run's own failures file is replaced by this run's (empty: nothing failed).
    failures = tmp_path / "failures.jsonl"
    failures.write_text(json.dumps({"instance_id": "old", "kind": "io", "error": "x"}) + "\n")
    proc = run(
        "batch",
        "--dataset",
        str(data),
        "--repos",
        str(trees),
        "--out",
        str(out),
        "--failures-out",
        str(failures),
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    assert failures.read_text() == ""


def test_special_files_are_refused_as_outputs(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """A FIFO stands for every special file (a device, `/dev/null`, `/dev/stderr`): refused
    before anything blocks on it or replaces it."""
    data, trees = run_inputs
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    common = ["--dataset", str(data), "--repos", str(trees), "--quiet"]
    for args in (
        ("batch", *common, "--out", str(fifo)),
        ("batch", *common, "--out", str(tmp_path / "o.jsonl"), "--failures-out", str(fifo)),
        ("eval", *common, "--out", str(fifo)),
        (
            "localize",
            "--repo",
            str(trees / "shop-1"),
            "--issue-text",
            ISSUE,
            "--pipeline",
            "blagent",
            "--llm-base-url",
            "http://127.0.0.1:9",
            "--llm-model",
            "m",
            "--llm-record",
            str(fifo),
        ),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "blagent", *args], capture_output=True, text=True, timeout=60
        )
        assert_clean_failure(proc, because="FIFO")
        assert fifo.exists() and not fifo.is_file()


def test_a_second_batch_on_the_same_output_is_refused(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    data, trees = run_inputs
    out = tmp_path / "loc.jsonl"
    lock_code = (
        "import fcntl, sys, time\n"
        "f = open(sys.argv[1], 'a')\n"
        "fcntl.flock(f, fcntl.LOCK_EX)\n"
        "print('locked', flush=True)\n"
        "time.sleep(60)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", lock_code, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        proc = run(
            "batch", "--dataset", str(data), "--repos", str(trees), "--out", str(out), "--quiet"
        )
        assert_clean_failure(proc, because="another blagent run is writing it")
    finally:
        holder.kill()
        holder.wait()
    proc = run("batch", "--dataset", str(data), "--repos", str(trees), "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["instance_id"] for line in out.read_text().splitlines()] == [
        "shop-1",
        "shop-2",
    ]


def _limit_file_size() -> None:
    # Writes past 64 bytes fail with EFBIG (Python ignores SIGXFSZ, so the process lives on).
    resource.setrlimit(resource.RLIMIT_FSIZE, (64, 64))


def test_a_failed_write_is_an_io_error_with_exit_3(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    data, trees = run_inputs
    out = tmp_path / "preds.jsonl"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "blagent",
            "eval",
            "--dataset",
            str(data),
            "--repos",
            str(trees),
            "--out",
            str(out),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limit_file_size,
    )
    assert_clean_failure(proc, code=3)
    assert str(out) in proc.stderr, proc.stderr


# Outputs recognise their own files by the fields blagent writes, not by an `instance_id`.


def test_outputs_over_files_blagent_did_not_write_are_refused_and_left_intact(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    data, trees = run_inputs
    common = ("--dataset", str(data), "--repos", str(trees), "--quiet")
    other_dataset = tmp_path / "verified.jsonl"
    agentless = tmp_path / "loc_outputs.jsonl"
    report = tmp_path / "report.json"
    other_dataset.write_text('{"instance_id":"b","repo":"x/y","patch":""}\n')
    agentless.write_text('{"instance_id":"b","found_files":["y.py"],"file_traj":{}}\n')
    report.write_text('{"resolved": ["b"], "unresolved": []}')
    cases = [
        ("eval", "--out", other_dataset),
        ("eval", "--signals-out", other_dataset),
        ("batch", "--out", agentless),
        ("batch", "--out", str(tmp_path / "new.jsonl"), "--failures-out", other_dataset),
    ]
    for command, *flags, target in cases:
        before = Path(target).read_bytes()
        proc = run(command, *common, *map(str, flags), str(target))
        assert_clean_failure(proc, because="does not hold blagent's")
        assert Path(target).read_bytes() == before
    assert not (tmp_path / "new.jsonl").exists(), "nothing is created before every check"
    llm = ("--pipeline", "blagent", "--llm-base-url", "http://127.0.0.1:9", "--llm-model", "m")
    proc = run("calibrate", *common, *llm, "--out", str(report))
    assert_clean_failure(proc, because="does not hold a blagent profile")
    assert json.loads(report.read_text()) == {"resolved": ["b"], "unresolved": []}

    twice = tmp_path / "twice.jsonl"
    for flag in ("--signals-out", "--llm-record"):
        extra = llm if flag == "--llm-record" else ()
        proc = run("eval", *common, *extra, "--out", str(twice), flag, str(twice))
        assert_clean_failure(proc, because="give each output its own file")
        assert not twice.exists()
    ours = tmp_path / "preds.jsonl"
    for _ in range(2):
        proc = run("eval", *common, "--out", str(ours))
        assert proc.returncode == 0, proc.stderr


def test_a_one_line_file_json_cannot_read_is_not_taken_for_a_line_cut_short(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a review: a user's file whose only line, without its newline, holds what
    Python's `json.dumps` writes and JSON does not read (`NaN`) passed for blagent's own line
    cut short by an interrupted write, so `eval --out` replaced it and `batch --out` cut it off."""
    data, trees = run_inputs
    common = ("--dataset", str(data), "--repos", str(trees), "--quiet")
    notes = tmp_path / "notes.jsonl"
    text = json.dumps({"instance_id": "x", "note": "mine", "score": float("nan")})
    for command, flag in (("eval", "--out"), ("eval", "--signals-out"), ("batch", "--out")):
        notes.write_text(text)
        proc = run(command, *common, flag, str(notes))
        assert_clean_failure(proc, because="does not hold blagent's")
        assert notes.read_text() == text
    cut = tmp_path / "cut.jsonl"
    cut.write_text('{"instance_id": "shop-1", "found_files": ["shop/pri')
    proc = run("batch", *common, "--out", str(cut))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in cut.read_text().splitlines()]
    assert [line["instance_id"] for line in lines] == ["shop-1", "shop-2"]


def test_analyze_failures_replaces_only_its_own_files(tmp_path: Path) -> None:
    flags = _analysis_inputs(tmp_path, "a", tmp_path / "checkout")
    out = tmp_path / "analysis"
    for _ in range(2):  # its own files are replaced
        proc = run("analyze-failures", *flags, "--out-dir", str(out))
        assert proc.returncode == 0, proc.stderr
    assert (out / "chart.png").read_bytes().startswith(b"\x89PNG")
    for name, foreign in [
        ("chart.png", b"\x89PNG\r\n\x1a\nmy holiday photo"),
        ("chart.svg", b"<svg><!-- my drawing --></svg>"),
        ("summary.md", b"# My notes\n"),
        ("summary.json", b'{"resolved": ["a"]}'),
    ]:
        mine = tmp_path / f"mine-{name}"
        mine.mkdir()
        (mine / name).write_bytes(foreign)
        proc = run("analyze-failures", *flags, "--out-dir", str(mine))
        assert_clean_failure(proc, because="does not hold what blagent analyze-failures writes")
        assert [p.name for p in mine.iterdir()] == [name], "nothing else was written"
        assert (mine / name).read_bytes() == foreign


def test_a_run_refused_for_a_bad_input_empties_no_output(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a review: `eval` emptied --out and --signals-out before it read --queries,
    and a batch emptied the last run's failures file before it refused its output's lines."""
    data, trees = run_inputs
    common = ["--dataset", str(data), "--repos", str(trees), "--quiet", "--history-commits", "0"]
    out, signals = tmp_path / "preds.jsonl", tmp_path / "signals.jsonl"
    assert run("eval", *common, "--out", str(out), "--signals-out", str(signals)).returncode == 0
    kept = out.read_bytes(), signals.read_bytes()
    assert kept[0] and kept[1]
    proc = run(
        "eval", *common, "--out", str(out), "--signals-out", str(signals),
        "--dense", "--queries", str(tmp_path / "missing.jsonl"),
    )  # fmt: skip
    assert_clean_failure(proc, because="missing.jsonl")
    assert (out.read_bytes(), signals.read_bytes()) == kept
    # A batch whose output holds a line it cannot resume from.
    loc, failures = tmp_path / "loc.jsonl", tmp_path / "loc.failures.jsonl"
    assert run("batch", *common, "--out", str(loc), "--ids", "shop-1").returncode == 0
    failures.write_text(json.dumps({"instance_id": "old", "kind": "io", "error": "x"}) + "\n")
    with loc.open("a") as f:
        f.write(json.dumps({"instance_id": 7, "found_files": [], "blagent": {}}) + "\n")
    before = loc.read_bytes(), failures.read_bytes()
    proc = run("batch", *common, "--out", str(loc))
    assert_clean_failure(proc, because="refusing")
    assert (loc.read_bytes(), failures.read_bytes()) == before


def test_a_batch_resumes_only_with_the_settings_its_lines_were_written_with(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a review: a resume with --related-locs appended function-level lines to an
    output of file-level ones, and Agentless's next stage got nothing for the first."""
    data, trees = run_inputs
    common = ["--dataset", str(data), "--repos", str(trees), "--quiet", "--history-commits", "0"]
    loc = tmp_path / "loc.jsonl"
    assert run("batch", *common, "--out", str(loc), "--ids", "shop-1").returncode == 0
    before = loc.read_bytes()
    proc = run("batch", *common, "--out", str(loc), "--related-locs")
    assert_clean_failure(proc, because="written with other settings: granularity file")
    assert loc.read_bytes() == before
    proc = run("batch", *common, "--out", str(loc))
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["instance_id"] for line in loc.read_text().splitlines()] == [
        "shop-1",
        "shop-2",
    ]


def test_eval_leaves_out_instances_without_gold_files_as_compare_does(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a review: `eval` scored an instance with an empty patch as a miss, while
    `compare` left it out, so the two gave one run different figures."""
    data, trees = run_inputs
    rows = [json.loads(line) for line in data.read_text().splitlines()]
    rows[1]["gold_files"], rows[1]["patch"] = [], ""
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    preds = tmp_path / "preds.jsonl"
    common = ["--dataset", str(data), "--repos", str(trees), "--history-commits", "0"]
    proc = run("eval", *common, "--out", str(preds), "--quiet", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["overall"]["instances"] == 1
    assert report["no_gold_files"] == ["shop-2"]
    proc = run("compare", str(preds), str(preds), "--dataset", str(data), "--format", "json")
    compared = json.loads(proc.stdout)
    assert compared["instances"] == 1
    assert compared["runs"][0]["overall"]["mrr"] == report["overall"]["mrr"]
    # Every instance without gold: an error that says so, not "no tree".
    rows[0]["gold_files"], rows[0]["patch"] = [], ""
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    proc = run("eval", *common, "--quiet")
    assert_clean_failure(proc, because="2 have no gold file")


def test_every_output_flag_ending_in_a_slash_is_refused_and_nothing_is_written(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a review: `batch --out newdir/` wrote a file named `newdir` (the CLI turned
    the flag into a `Path`, which drops the trailing slash, before the core could see it)."""
    data, trees = run_inputs
    common = ("--dataset", str(data), "--repos", str(trees), "--quiet")
    llm = ("--pipeline", "blagent", "--llm-base-url", "http://127.0.0.1:9", "--llm-model", "m")
    file = str(tmp_path / "o.jsonl")
    cases = [
        ("batch", "--out"),
        ("batch", "--out", file, "--failures-out"),
        ("batch", "--out", file, *llm, "--llm-record"),
        ("eval", "--out"),
        ("eval", "--signals-out"),
        ("calibrate", *llm, "--out"),
    ]
    for command, *flags in cases:
        folder = tmp_path / "newdir"
        proc = run(command, *common, *flags, f"{folder}/")
        assert_clean_failure(proc, because="names a folder; give a file name")
        assert not folder.exists() and not Path(file).exists(), (command, flags)
        assert not (tmp_path / "newdir.failures.jsonl").exists()


def test_a_refused_or_interrupted_eval_leaves_its_last_outputs_as_they_were(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a hostile review: `eval` emptied --out and --signals-out when it opened them,
    so a run that then scored nothing (no tree under --repos, exit 1) or was stopped left
    neither the last outputs nor whole new ones. They are replaced only when the run ends."""
    from test_hardening import _interrupt

    data, trees = run_inputs
    common = ["--dataset", str(data), "--quiet", "--history-commits", "0"]
    out, signals = tmp_path / "preds.jsonl", tmp_path / "signals.jsonl"
    outputs = ["--out", str(out), "--signals-out", str(signals)]
    assert run("eval", *common, "--repos", str(trees), *outputs).returncode == 0
    kept = out.read_bytes(), signals.read_bytes()
    assert kept[0] and kept[1]
    empty = tmp_path / "no_trees"
    empty.mkdir()
    proc = run("eval", *common, "--repos", str(empty), *outputs)
    assert_clean_failure(proc, because="has a tree under")
    assert (out.read_bytes(), signals.read_bytes()) == kept
    # Twelve trees of a large file: seconds of indexing, stopped after one.
    big = tmp_path / "big"
    (big / "pkg").mkdir(parents=True)
    body = "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(40_000))
    (big / "pkg" / "m.py").write_text(body)
    many = tmp_path / "many"
    many.mkdir()
    rows = []
    for i in range(12):
        (many / f"b{i}").symlink_to(big, target_is_directory=True)
        rows.append({"instance_id": f"b{i}", "problem_statement": ISSUE, "gold_files": ["x.py"]})
    (tmp_path / "many.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["eval", "--dataset", str(tmp_path / "many.jsonl"), "--repos", str(many)]
    proc, _ = _interrupt([*args, "--history-commits", "0", *outputs], wait_s=2.0)
    assert proc.returncode == 130, proc.stderr
    assert (out.read_bytes(), signals.read_bytes()) == kept
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []
    # SIGTERM stops it the same way (found by the review of this change: it left the new
    # files behind), then ends it by the signal.
    term = subprocess.Popen(
        [sys.executable, "-m", "blagent", *args, "--history-commits", "0", *outputs],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL),
    )
    time.sleep(2.0)
    term.send_signal(signal.SIGTERM)
    _, err = term.communicate(timeout=30)
    assert term.returncode == -signal.SIGTERM, err
    assert "blagent: interrupted (SIGTERM)" in err, err
    assert (out.read_bytes(), signals.read_bytes()) == kept
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_an_analysis_replaces_the_last_one_whole(tmp_path: Path) -> None:
    """Found by a hostile review: a rerun on fewer instances left the first run's instance
    files beside a summary of the second."""
    flags = _analysis_inputs(tmp_path, "a", tmp_path / "checkout")
    out = tmp_path / "analysis"
    assert run("analyze-failures", *flags, "--out-dir", str(out)).returncode == 0
    instances = out / "instances"
    stale = instances / "gone.json"
    stale.write_bytes((instances / "a.json").read_bytes().replace(b'"a"', b'"gone"'))
    theirs = instances / "notes.json"
    theirs.write_text('{"mine": true}')
    copy = instances / "my-copy-of-gone.json"
    copy.write_bytes(stale.read_bytes())
    assert run("analyze-failures", *flags, "--out-dir", str(out)).returncode == 0
    assert sorted(p.name for p in instances.iterdir()) == [
        "a.json",
        "my-copy-of-gone.json",
        "notes.json",
    ]
    assert theirs.read_text() == '{"mine": true}'
    # An `instances` folder that is a link to another analysis's is not cleaned.
    other = tmp_path / "other"
    assert run("analyze-failures", *flags, "--out-dir", str(other)).returncode == 0
    (other / "instances" / "gone.json").write_bytes(copy.read_bytes())
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "instances").symlink_to(other / "instances", target_is_directory=True)
    run("analyze-failures", *flags, "--out-dir", str(linked))
    assert (other / "instances" / "gone.json").exists()


def test_an_output_in_the_trees_under_another_mount_is_refused(
    run_inputs: tuple[Path, Path], tmp_path: Path
) -> None:
    """Found by a hostile review: `--out` through a bind mount of the trees folder passed the
    check on paths and wrote over a tree's empty file. Folders are compared by device and
    inode too. Runs in a user and mount namespace of its own (`unshare`)."""
    import shutil

    data, trees = run_inputs
    real = tmp_path / "real"
    shutil.copytree(trees / "shop-1", real / "shop-1", symlinks=False)
    shutil.copytree(trees / "shop-2", real / "shop-2", symlinks=False)
    empty = real / "shop-1" / "shop" / "__init__.py"
    empty.parent.mkdir(parents=True, exist_ok=True)
    empty.write_text("")
    alias = tmp_path / "alias"
    alias.mkdir()
    target = alias / "shop-1" / "shop" / "__init__.py"
    script = (
        f"mount --bind {real} {alias} && exec {sys.executable} -m blagent eval "
        f"--dataset {data} --repos {real} --quiet --history-commits 0 --out {target}"
    )
    try:
        proc = subprocess.run(
            ["unshare", "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120
        )
    except FileNotFoundError:
        pytest.skip("unshare is not installed")
    if "mount" in proc.stderr and proc.returncode != 1:
        pytest.skip(f"no mount namespace here: {proc.stderr.strip()[:200]}")
    assert_clean_failure(proc, because="under another name")
    assert empty.read_bytes() == b""
