"""The `blagent` command line, run as a subprocess: JSON on stdout, exit codes 0/1/2/3."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO

import blagent
import pytest
from conftest import schema_validator
from test_localizer import ISSUE, _git


def run(
    *args: str,
    stdin: str | None = None,
    stdout: IO[str] | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """`blagent ARGS`, its output captured (standard output to `stdout` when given), with
    `env` added to the environment, in `cwd`, after `preexec_fn` in the child."""
    return subprocess.run(
        [sys.executable, "-m", "blagent", *args],
        input=stdin,
        stdout=stdout or subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        timeout=120,
        env={**os.environ, **env} if env else None,
        cwd=cwd,
        preexec_fn=preexec_fn,
    )


def test_localize_prints_json_with_evidence(repo: Path) -> None:
    proc = run("localize", "--repo", str(repo), "--issue-text", ISSUE, "--top-k", "2")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert [f["rank"] for f in result["files"]] == [1, 2]
    assert result["files"][0]["path"] == "shop/pricing.py"
    assert result["files"][0]["evidence"]
    for f in result["files"]:
        assert f["contributions"], f
        assert set(f["contributions"]) <= set(f["signals"])
        assert sum(f["contributions"].values()) == pytest.approx(f["score"], abs=1e-5)
        assert blagent.FileHit.from_dict(f).to_dict() == f


def test_localize_reads_the_issue_from_a_file_or_stdin(repo: Path, tmp_path: Path) -> None:
    issue_file = tmp_path / "issue.md"
    issue_file.write_text(ISSUE)
    from_file = run("localize", "--repo", str(repo), "--issue", str(issue_file))
    from_stdin = run("localize", "--repo", str(repo), stdin=ISSUE)
    assert from_file.returncode == from_stdin.returncode == 0
    paths = lambda out: [f["path"] for f in json.loads(out)["files"]]  # noqa: E731
    assert paths(from_file.stdout) == paths(from_stdin.stdout)


def test_text_format_lists_ranks_and_evidence(repo: Path) -> None:
    proc = run(
        "localize", "--repo", str(repo), "--issue-text", ISSUE, "--format", "text", "--top-k", "1"
    )
    assert proc.returncode == 0
    assert proc.stdout.startswith("  1. shop/pricing.py")
    assert "stack_frame" in proc.stdout
    # The bracket says what each signal added to the score, largest first.
    parts = proc.stdout.split("[", 1)[1].split("]", 1)[0].split(", ")
    added = [float(p.rsplit(" +", 1)[1]) for p in parts]
    assert added == sorted(added, reverse=True)
    score = float(proc.stdout.split("score=", 1)[1].split()[0])
    assert sum(added) == pytest.approx(score, abs=0.01 * len(added))


def test_localize_ranks_functions_with_what_their_evidence_added(repo: Path) -> None:
    proc = run("localize", "--repo", str(repo), "--issue-text", ISSUE, "--granularity", "function")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["granularity"] == "function"
    entities = result["entities"]
    # The innermost frame's function, named in backticks, leads, and says so.
    assert entities[0]["id"] == "shop/pricing.py::apply_discount"
    assert {"frame", "name"} <= set(entities[0]["contributions"])
    for e in entities:
        assert sum(e["contributions"].values()) == pytest.approx(e["score"], abs=1e-5)
        assert blagent.Entity.from_dict(e).to_dict() == e
    text = run(
        "localize", "--repo", str(repo), "--issue-text", ISSUE, "--granularity", "function",
        "--format", "text",
    )  # fmt: skip
    assert text.returncode == 0, text.stderr
    listed = text.stdout.split("functions (", 1)[1].splitlines()[1:]
    assert listed[0].startswith("  1. shop/pricing.py::apply_discount  lines ")
    assert "frame +" in listed[0]
    assert len(listed) == min(len(entities), 10)
    # A file-level run lists no functions.
    plain = run("localize", "--repo", str(repo), "--issue-text", ISSUE, "--format", "text")
    assert "functions (" not in plain.stdout


def test_bad_input_exits_1_with_a_message(repo: Path, tmp_path: Path) -> None:
    missing = run("localize", "--repo", str(tmp_path / "nope"), "--issue-text", ISSUE)
    assert missing.returncode == 1
    assert "repository not found" in missing.stderr
    assert missing.stdout == ""
    empty = run("localize", "--repo", str(repo), "--issue-text", "  ")
    assert empty.returncode == 1
    assert "empty" in empty.stderr
    no_file = run("localize", "--repo", str(repo), "--issue", str(tmp_path / "none.md"))
    assert no_file.returncode == 1


def test_usage_errors_exit_2(repo: Path) -> None:
    assert run("localize").returncode == 2
    assert run("localize", "--repo", str(repo), "--top-k", "many").returncode == 2
    # Out of range: named by argparse, not passed on for the core to reject in its own words.
    for flag, value in [
        ("--top-k", "1" + "0" * 20),
        ("--llm-timeout", "nan"),
        # Found by a review: 0 and a day and a second reached the core (exit 1).
        ("--llm-timeout", "0"),
        ("--llm-timeout", "86401"),
        ("--llm-seed", "-1"),
    ]:
        proc = run("localize", "--repo", str(repo), "--issue-text", ISSUE, flag, value)
        assert proc.returncode == 2 and f"argument {flag}: must be" in proc.stderr, proc.stderr
    assert run("frobnicate").returncode == 2


def test_help_on_every_command() -> None:
    from blagent.cli import build_parser

    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert set(commands) >= {"localize", "batch", "eval", "llm-check", "analyze-failures"}
    for command in ([], *([c] for c in commands)):
        proc = run(*command, "--help")
        assert proc.returncode == 0, command
        assert f"usage: blagent {' '.join(command)}".rstrip() in proc.stdout, command


def _dataset(tmp_path: Path, repo: Path) -> Path:
    trees = tmp_path / "trees"
    trees.mkdir()
    (trees / "shop-1").symlink_to(repo, target_is_directory=True)
    patch = "diff --git a/shop/inventory.py b/shop/inventory.py\n--- a/shop/inventory.py\n+++ b/shop/inventory.py\n"
    rows = [
        {
            "instance_id": "shop-1",
            "repo": "acme/shop",
            "problem_statement": ISSUE,
            "gold_files": ["shop/pricing.py"],
        },
        {
            "instance_id": "shop-1b",
            "repo": "acme/shop",
            "problem_statement": "Inventory.reserve ignores stock",
            "patch": patch,
        },
        {
            "instance_id": "absent",
            "repo": "acme/shop",
            "problem_statement": ISSUE,
            "gold_files": ["x.py"],
        },
    ]
    (trees / "shop-1b").symlink_to(repo, target_is_directory=True)
    dataset = tmp_path / "data.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dataset


def test_eval_prints_metrics_and_writes_predictions(repo: Path, tmp_path: Path) -> None:
    dataset = _dataset(tmp_path, repo)
    out = tmp_path / "preds.jsonl"
    proc = run(
        "eval",
        "--dataset",
        str(dataset),
        "--repos",
        str(tmp_path / "trees"),
        "--out",
        str(out),
        "--format",
        "json",
        "--top-k",
        "3",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["overall"]["instances"] == 2
    assert report["overall"]["mrr"] == 1.0
    assert report["overall"]["acc"] == [1.0, 1.0, 1.0, 1.0]
    assert report["missing_trees"] == ["absent"]
    assert set(report["per_repo"]) == {"acme/shop"}
    preds = [json.loads(line) for line in out.read_text().splitlines()]
    for pred in preds:
        schema_validator("eval-line").validate(pred)
    assert [p["instance_id"] for p in preds] == ["shop-1", "shop-1b"]
    assert preds[0]["found_files"][0] == "shop/pricing.py"
    assert len(preds[0]["found_files"]) <= 3
    assert preds[1]["gold_rank"] == 1


def test_eval_at_function_level_scores_the_ranked_functions(repo: Path, tmp_path: Path) -> None:
    import difflib

    old = (repo / "shop/pricing.py").read_text()
    new = old.replace("return total - total * percent", "return total - total * percent / 100")
    diff = "".join(
        difflib.unified_diff(
            old.splitlines(True), new.splitlines(True), "a/shop/pricing.py", "b/shop/pricing.py"
        )
    )
    patch = "diff --git a/shop/pricing.py b/shop/pricing.py\n" + diff
    (tmp_path / "trees").mkdir()
    (tmp_path / "trees" / "shop-2").symlink_to(repo, target_is_directory=True)
    row = {"instance_id": "shop-2", "repo": "acme/shop", "problem_statement": ISSUE, "patch": patch}
    dataset = tmp_path / "fn.jsonl"
    dataset.write_text(json.dumps(row) + "\n")
    out = tmp_path / "preds.jsonl"
    args = ["--dataset", str(dataset), "--repos", str(tmp_path / "trees"), "--out", str(out)]
    proc = run("eval", *args, "--granularity", "function", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    functions = json.loads(proc.stdout)["functions"]
    pred = json.loads(out.read_text())
    schema_validator("eval-line").validate(pred)
    assert pred["gold_functions"] == ["shop/pricing.py::apply_discount"]
    rank = pred["found_functions"].index("shop/pricing.py::apply_discount") + 1
    assert functions["overall"]["instances"] == 1 and functions["no_gold_functions"] == []
    assert functions["overall"]["mrr"] == pytest.approx(1 / rank)
    text = run("eval", *args, "--granularity", "function")
    assert "function level" in text.stdout and "LocAgent's reading" in text.stdout
    assert "functions" not in json.loads(run("eval", *args, "--format", "json").stdout)
    # Found by a review: a patched file parsed past its time budget was counted as touching
    # no function; it is named for what it is.
    slow = tmp_path / "slow"
    shutil.copytree(repo, slow)
    (slow / "shop/pricing.py").write_text(old + "}{)(][><\n" * 20_000)
    (tmp_path / "trees" / "shop-2").unlink()
    (tmp_path / "trees" / "shop-2").symlink_to(slow, target_is_directory=True)
    out.unlink()
    proc = run("eval", *args, "--granularity", "function", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    functions = json.loads(proc.stdout)["functions"]
    assert functions["functions_not_known"] == ["shop-2"] and functions["no_gold_functions"] == []
    assert json.loads(out.read_text()).get("gold_functions") is None
    out.unlink()
    text = run("eval", *args, "--granularity", "function").stdout
    assert (
        "1 whose gold patch does not parse or whose patched file took too long to parse" in text
    ), text


def test_eval_selects_ids_and_prints_a_table(repo: Path, tmp_path: Path) -> None:
    dataset = _dataset(tmp_path, repo)
    ids = tmp_path / "ids.txt"
    ids.write_text("shop-1b\n")
    proc = run(
        "eval",
        "--dataset",
        str(dataset),
        "--repos",
        str(tmp_path / "trees"),
        "--ids-file",
        str(ids),
    )
    assert proc.returncode == 0, proc.stderr
    overall = next(line for line in proc.stdout.splitlines() if line.startswith("overall"))
    assert overall.split()[1] == "1"
    assert "MRR" in proc.stdout


def test_an_empty_selection_is_an_error_not_every_instance(repo: Path, tmp_path: Path) -> None:
    dataset = _dataset(tmp_path, repo)
    ids = tmp_path / "ids.txt"
    ids.write_text("\n  \n")
    for selection in (["--ids-file", str(ids)], ["--ids", ","]):
        proc = run(
            "eval", "--dataset", str(dataset), "--repos", str(tmp_path / "trees"), *selection
        )
        assert proc.returncode == 1, proc.stdout
        assert "names no instance id" in proc.stderr
        assert "MRR" not in proc.stdout


def test_eval_rejects_a_malformed_dataset(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"instance_id": "a", "problem_statement": "x"}\n{not json\n')
    proc = run("eval", "--dataset", str(bad), "--repos", str(tmp_path))
    assert proc.returncode == 1
    assert "bad.jsonl:2" in proc.stderr


def _mixed_repo(root: Path) -> Path:
    files = {
        "core/src/main/java/com/acme/Pricing.java": "package com.acme;\n\npublic class Pricing {\n"
        "    public int discount(int cents) { return cents; }\n}\n",
        "app/src/main/kotlin/com/acme/Checkout.kt": "package com.acme\n\nfun checkout(p: Pricing) = p.discount(1)\n",
        "scripts/discount.py": "def discount(cents):\n    return cents\n",
    }
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_languages_flag_chooses_what_is_indexed(tmp_path: Path) -> None:
    repo = _mixed_repo(tmp_path / "mixed")
    issue = "The discount is wrong: discount(100) returns 100"
    every = run("localize", "--repo", str(repo), "--issue-text", issue, "--top-k", "5")
    assert every.returncode == 0, every.stderr
    assert {f["path"] for f in json.loads(every.stdout)["files"]} == {
        "core/src/main/java/com/acme/Pricing.java",
        "app/src/main/kotlin/com/acme/Checkout.kt",
        "scripts/discount.py",
    }
    jvm = run("localize", "--repo", str(repo), "--issue-text", issue, "--languages", "java,kotlin")
    assert jvm.returncode == 0, jvm.stderr
    assert all(not f["path"].endswith(".py") for f in json.loads(jvm.stdout)["files"])
    unknown = run("localize", "--repo", str(repo), "--issue-text", issue, "--languages", "cobol")
    assert unknown.returncode == 2
    assert "unknown language 'cobol'" in unknown.stderr and "java" in unknown.stderr


def test_history_commits_flag_reads_or_skips_the_repositorys_commits(tmp_path: Path) -> None:
    repo = _mixed_repo(tmp_path / "mixed")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Checkout rounds the total down")
    issue = "Checkout rounds the total down"
    signals = {}
    for flags in ([], ["--history-commits", "0"]):
        out = run("localize", "--repo", str(repo), "--issue-text", issue, *flags)
        assert out.returncode == 0, out.stderr
        files = json.loads(out.stdout)["files"]
        signals[len(flags)] = {e["signal"] for f in files for e in f["evidence"]}
    assert "history_title" in signals[0] and "history_title" not in signals[2]
    bad = run("localize", "--repo", str(repo), "--issue-text", issue, "--history-commits", "-1")
    assert bad.returncode == 2 and "--history-commits" in bad.stderr


def test_history_is_read_from_the_repository_inside_another_repositorys_git_hook(
    tmp_path: Path,
) -> None:
    # A git hook of another repository (or `git rebase --exec`) sets these for its own.
    repo = _mixed_repo(tmp_path / "mixed")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Checkout rounds the total down")
    other = tmp_path / "other"
    other.mkdir()
    _git(other, "init", "-q")
    (other / "notes.txt").write_text("unrelated\n")
    _git(other, "add", "-A")
    _git(other, "commit", "-q", "-m", "Unrelated")
    hook_env = {
        "GIT_DIR": str(other / ".git"),
        "GIT_OBJECT_DIRECTORY": str(other / ".git" / "objects"),
        "GIT_INDEX_FILE": str(other / ".git" / "index"),
        "GIT_COMMON_DIR": str(other / ".git"),
        "GIT_PREFIX": "",
    }
    out = run(
        "localize",
        "--repo",
        str(repo),
        "--issue-text",
        "Checkout rounds the total down",
        env=hook_env,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert not result.get("warnings"), result.get("warnings")
    signals = {e["signal"] for f in result["files"] for e in f["evidence"]}
    assert "history_title" in signals


def test_eval_reports_per_language(tmp_path: Path) -> None:
    repo = _mixed_repo(tmp_path / "trees" / "acme" / "1")
    dataset = tmp_path / "lca.jsonl"
    row = {
        "instance_id": "acme/1",
        "repo": "acme/shop",
        "language": "java",
        "problem_statement": "Pricing.discount ignores the percentage",
        "gold_files": ["core/src/main/java/com/acme/Pricing.java"],
    }
    dataset.write_text(json.dumps(row) + "\n")
    assert repo.is_dir()
    proc = run(
        "eval",
        "--dataset",
        str(dataset),
        "--repos",
        str(tmp_path / "trees"),
        "--format",
        "json",
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["per_language"]["java"]["instances"] == 1
    assert report["per_language"]["java"]["mrr"] == 1.0

    # At function level too: the patch's method is the gold, grouped under the task's language.
    row["patch"] = (
        "--- a/core/src/main/java/com/acme/Pricing.java\n"
        "+++ b/core/src/main/java/com/acme/Pricing.java\n"
        "@@ -3,3 +3,3 @@ public class Pricing {\n"
        " public class Pricing {\n"
        "-    public int discount(int cents) { return cents; }\n"
        "+    public int discount(int cents) { return cents * 9 / 10; }\n"
        " }\n"
    )
    dataset.write_text(json.dumps(row) + "\n")
    args = ["--dataset", str(dataset), "--repos", str(tmp_path / "trees"), "--quiet"]
    proc = run("eval", *args, "--granularity", "function", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    functions = json.loads(proc.stdout)["functions"]
    assert functions["per_language"]["java"]["instances"] == 1
    assert functions["per_language"]["java"]["mrr"] == 1.0
    text = run("eval", *args, "--granularity", "function").stdout
    assert "  language java" in text.split("function level")[1]


def test_each_error_kind_exits_with_the_core_s_code(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI's exit codes are the core's (`ErrorKind::exit_code`, exported as EXIT_CODES):
    each error kind's exception class (`ERROR_CLASSES`, the table the core raises from), and
    Ctrl-C, exit with their kind's code."""
    from blagent import _core, cli

    assert sorted(_core.ERROR_CLASSES) == sorted(_core.EXIT_CODES), "one table of kinds"
    assert _core.ERROR_CLASSES == {
        "input": _core.InputError,
        "io": _core.BlagentIOError,
        "model": _core.ModelError,
        "llm": _core.LlmError,
        "interrupted": KeyboardInterrupt,
        "internal": _core.InternalError,
    }
    for kind, cls in _core.ERROR_CLASSES.items():

        def fail(_args: object, cls: type[BaseException] = cls) -> int:
            raise cls("boom")

        monkeypatch.setattr(cli, "cmd_llm_check", fail)
        assert cli.main(["llm-check"]) == _core.EXIT_CODES[kind], kind
    # A core error leaves through the same table: a missing file is bad input.
    with pytest.raises(_core.ERROR_CLASSES["input"]):
        _core.read_user_file("/nonexistent/blagent-test", 10, "issue file")
    assert _core.EXIT_CODES == {
        "input": 1,
        "io": 3,
        "model": 3,
        "llm": 3,
        "interrupted": 130,
        "internal": 3,
    }
    capsys.readouterr()


def test_a_run_config_loads_no_model_and_keeps_the_localizer_options(tmp_path: Path) -> None:
    from blagent import _core, cli
    from blagent.localizer import Localizer

    missing = tmp_path / "no-model"
    run_args = ["eval", "--dataset", "d.jsonl", "--repos", "trees"]
    args = cli.build_parser().parse_args([*run_args, "--dense", "--model-dir", str(missing)])
    # A Localizer would load the encoder and fail on the missing folder; the run's config
    # only names it (the run loads the model once).
    with pytest.raises(_core.BlagentError):
        cli._localizer(args)
    config = json.loads(cli._run_config(args, top_k=3))
    assert config["options"]["dense"]["model_dir"] == str(missing)
    # The options are those a Localizer of the same flags is made with.
    plain = cli.build_parser().parse_args([*run_args, "--include-tests"])
    options = json.loads(cli._run_config(plain))["options"]
    in_force = json.loads(_core.Localizer(json.dumps(options)).options_json())
    assert in_force == Localizer(include_tests=True).options
