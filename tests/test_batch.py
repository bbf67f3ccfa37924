"""`blagent batch`: Agentless lines checked against the format contract and its schema,
resumption, recorded failures with the exit code that says so, progress on stderr."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from conftest import schema_validator
from test_cli import run
from test_localizer import ISSUE

from agentless_adapter.loc_format import contract_problems


def _setup(tmp_path: Path, repo: Path) -> tuple[Path, Path]:
    trees = tmp_path / "trees"
    trees.mkdir()
    for iid in ("shop-1", "shop-3"):
        (trees / iid).symlink_to(repo, target_is_directory=True)
    rows = [
        {"instance_id": "shop-1", "repo": "acme/shop", "problem_statement": ISSUE},
        {"instance_id": "shop-2", "repo": "acme/shop", "problem_statement": ISSUE},
        {
            "instance_id": "shop-3",
            "repo": "acme/shop",
            "problem_statement": "Inventory.reserve ignores the stock",
        },
    ]
    dataset = tmp_path / "lite.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dataset, trees


def _batch(dataset: Path, trees: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return run("batch", "--dataset", str(dataset), "--repos", str(trees), "--out", str(out), *extra)


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_batch_writes_agentless_lines_records_failures_and_resumes(
    repo: Path, tmp_path: Path
) -> None:
    dataset, trees = _setup(tmp_path, repo)
    out = tmp_path / "fl" / "loc_outputs.jsonl"
    first = _batch(dataset, trees, out, "--top-k", "3")
    assert first.returncode == 3, first.stderr
    report = json.loads(first.stdout)
    assert (report["selected"], report["written"], report["resumed"]) == (3, 2, 0)
    assert [(f["instance_id"], f["kind"]) for f in report["failures"]] == [
        ("shop-2", "missing_tree")
    ]
    failures = out.with_name("loc_outputs.failures.jsonl")
    assert [json.loads(line)["instance_id"] for line in failures.read_text().splitlines()] == [
        "shop-2"
    ]
    assert "[3/3] shop-3: " in first.stderr, (
        first.stderr
    )  # line progress when stderr is not a terminal
    assert "1 failed" in first.stderr

    lines = _lines(out)
    validator = schema_validator("agentless-loc-line")
    for line in lines:
        validator.validate(line)
        assert contract_problems(line) == []
        assert line["additional_artifact_loc_file"] == {} and line["file_traj"] == {}
        assert len(line["found_files"]) <= 3
        assert line["found_files"] == [f["path"] for f in line["blagent"]["files"]]
    assert [line["instance_id"] for line in lines] == ["shop-1", "shop-3"]
    assert lines[0]["found_files"][0] == "shop/pricing.py"
    assert lines[1]["found_files"][0] == "shop/inventory.py"

    (trees / "shop-2").symlink_to(repo, target_is_directory=True)
    second = _batch(dataset, trees, out, "--top-k", "3")
    assert second.returncode == 0, second.stderr
    report = json.loads(second.stdout)
    assert (report["written"], report["resumed"], report["failures"]) == (1, 2, [])
    assert "resuming: 2 of 3" in second.stderr
    assert failures.read_text() == "", "a clean run empties the last run's failures"
    assert [line["instance_id"] for line in _lines(out)] == ["shop-1", "shop-3", "shop-2"]


def test_batch_recovers_from_an_interrupted_write(repo: Path, tmp_path: Path) -> None:
    dataset, trees = _setup(tmp_path, repo)
    out = tmp_path / "loc_outputs.jsonl"
    out.write_text(
        '{"instance_id": "shop-1", "found_files": ["shop/pricing.py"], "additional_artifact_loc_file": {}, "file_traj": {}, "blagent": {}}\n{"instance_id": "shop-3", "found'
    )
    proc = _batch(dataset, trees, out, "--ids", "shop-1,shop-3", "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert [line["instance_id"] for line in _lines(out)] == ["shop-1", "shop-3"]


def test_batch_function_granularity_carries_entities(repo: Path, tmp_path: Path) -> None:
    dataset, trees = _setup(tmp_path, repo)
    out = tmp_path / "loc_outputs.jsonl"
    proc = _batch(dataset, trees, out, "--ids", "shop-1", "--granularity", "function")
    assert proc.returncode == 0, proc.stderr
    (line,) = _lines(out)
    schema_validator("agentless-loc-line").validate(line)
    assert line["blagent"]["entities"][0]["id"] == "shop/pricing.py::apply_discount"  # type: ignore[index]


def test_batch_related_locs_hand_blagents_functions_to_agentless_edit_location(
    repo: Path, tmp_path: Path
) -> None:
    dataset, trees = _setup(tmp_path, repo)
    out = tmp_path / "loc_outputs.jsonl"
    proc = _batch(dataset, trees, out, "--ids", "shop-1", "--related-locs")
    assert proc.returncode == 0, proc.stderr
    (line,) = _lines(out)
    schema_validator("agentless-loc-line").validate(line)
    assert contract_problems(line) == []
    related = line["found_related_locs"]
    assert isinstance(related, dict)
    assert list(related) == line["found_files"][:3]  # type: ignore[index]
    assert related["shop/pricing.py"][0].splitlines()[0] == "function: apply_discount"
    assert line["additional_artifact_loc_related"] == [] and line["related_loc_traj"] == []
    outside = dict(line, found_related_locs={"elsewhere.py": ["function: f"]})
    assert any("not in `found_files`" in p for p in contract_problems(outside))


def test_related_locs_write_lines_where_agentless_would_find_other_code(tmp_path: Path) -> None:
    """Found by a review with Agentless's own parser: a module-level `validate` after a class
    with a method `validate` is left out of its function list, so `function: validate` showed
    the method. Such an entity is written as its lines; a method found by its name keeps it."""
    tree = tmp_path / "trees" / "v-1"
    tree.mkdir(parents=True)
    (tree / "v.py").write_text(
        "class Validator:\n"
        "    def validate(self, x):\n"
        "        return x > 0\n"
        "\n"
        "\n"
        "def validate(value):\n"
        "    return value is not None\n"
    )
    issue = "validate(value) in v.py accepts None; Validator.validate is fine"
    dataset = tmp_path / "d.jsonl"
    dataset.write_text(json.dumps({"instance_id": "v-1", "problem_statement": issue}) + "\n")
    out = tmp_path / "loc_outputs.jsonl"
    proc = _batch(dataset, tmp_path / "trees", out, "--related-locs")
    assert proc.returncode == 0, proc.stderr
    (line,) = _lines(out)
    names = [e["name"] for e in line["blagent"]["entities"]]  # type: ignore[index]
    assert {"validate", "Validator.validate"} <= set(names), names
    text = line["found_related_locs"]["v.py"][0]  # type: ignore[index]
    assert "function: Validator.validate" in text.splitlines()
    assert "function: validate" not in text.splitlines()
    assert "line: 6\nline: 7" in text
    assert contract_problems(line) == []


def test_batch_bad_input_exits_1(repo: Path, tmp_path: Path) -> None:
    dataset, trees = _setup(tmp_path, repo)
    out = tmp_path / "loc_outputs.jsonl"
    unknown = _batch(dataset, trees, out, "--ids", "nope")
    assert unknown.returncode == 1 and "nope" in unknown.stderr
    out.write_text("this is not a loc_outputs file\n")
    foreign = _batch(dataset, trees, out)
    assert foreign.returncode == 1 and "refusing to append" in foreign.stderr
    assert run("batch", "--dataset", str(dataset)).returncode == 2


def test_a_batch_whose_model_never_answered_says_so(repo: Path, tmp_path: Path) -> None:
    """Found by a hostile review: a batch where every LLM call failed (a cassette of another
    model) exited 0 with nothing on stderr; the fallbacks were only inside each line."""
    dataset, trees = _setup(tmp_path, repo)
    cassette = tmp_path / "empty.cassette.jsonl"
    cassette.write_text("")
    out = tmp_path / "loc.jsonl"
    proc = _batch(
        dataset, trees, out, "--ids", "shop-1,shop-3", "--pipeline", "rrl",
        "--llm-model", "m", "--llm-replay", str(cassette), "--quiet",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["llm_fell_back"] == 2
    assert report["llm_first_fallback"].startswith("shop-1: ")
    assert "in 2 of 2 new lines a stage of the LLM pipeline fell back" in proc.stderr
    plain = _batch(dataset, trees, tmp_path / "plain.jsonl", "--ids", "shop-1", "--quiet")
    assert json.loads(plain.stdout)["llm_fell_back"] == 0
    assert "fell back" not in plain.stderr


def test_a_batch_that_wrote_nothing_does_not_name_an_output_it_left_behind(
    repo: Path, tmp_path: Path
) -> None:
    """Found by a review: every instance failing, the empty output the run created was removed
    but stderr still read "0/1 instances in OUT"."""
    dataset = tmp_path / "one.jsonl"
    row = {"instance_id": "shop-9", "repo": "acme/shop", "problem_statement": ISSUE}
    dataset.write_text(json.dumps(row) + "\n")
    (tmp_path / "trees").mkdir()
    out = tmp_path / "loc_outputs.jsonl"
    proc = _batch(dataset, tmp_path / "trees", out)
    assert proc.returncode == 3, proc.stderr
    assert not out.exists()
    assert f"0/1 instances written ({out} not left behind)" in proc.stderr, proc.stderr
