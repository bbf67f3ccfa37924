"""The LLM pipelines through the CLI and the Python API, with no LLM configured: every LLM stage
falls back to retrieval, the ranking is the fused one completed to `top_k`, and the result's
`llm` section says what happened."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from blagent import InputError, Localizer
from test_cli import run
from test_localizer import ISSUE


@pytest.mark.parametrize("pipeline", ["blagent", "rrl"])
def test_cli_pipeline_without_llm_falls_back_to_the_fused_ranking(
    repo: Path, pipeline: str
) -> None:
    fused = json.loads(
        run("localize", "--repo", str(repo), "--issue-text", ISSUE, "--top-k", "3").stdout
    )
    proc = run(
        "localize",
        "--repo",
        str(repo),
        "--issue-text",
        ISSUE,
        "--top-k",
        "3",
        "--pipeline",
        pipeline,
    )
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert [f["path"] for f in result["files"]][: len(fused["files"])] == [
        f["path"] for f in fused["files"]
    ]
    assert len(result["files"]) == 3
    llm = result["llm"]
    assert (llm["pipeline"], llm["model"], llm["llm_ranked"], llm["calls"]) == (
        pipeline,
        "none",
        False,
        0,
    )
    assert "no LLM configured" in llm["fallbacks"][0]
    assert "fell back to retrieval" in proc.stderr


def test_the_final_list_is_completed_to_top_k(repo: Path) -> None:
    result = Localizer(top_k=50).localize(repo, "`restock` fails", pipeline="blagent")
    indexed = Localizer().index(repo).num_files
    assert len(result.paths) == indexed
    assert result.llm is not None and result.llm["fallbacks"]


def test_bad_pipeline_inputs_are_refused(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="base URL"):
        Localizer(llm_config_json='{"base_url": "nope"}')
    with pytest.raises(InputError, match="unknown variant `gpt`"):
        Localizer().localize(repo, ISSUE, pipeline="gpt")
    bad = tmp_path / "prompts"
    bad.mkdir()
    (bad / "t0_structural.md").write_text("no placeholder")
    proc = run(
        "localize",
        "--repo",
        str(repo),
        "--issue-text",
        ISSUE,
        "--pipeline",
        "blagent",
        "--prompts-dir",
        str(bad),
    )
    assert proc.returncode == 1 and "needs" in proc.stderr
    assert (
        run(
            "localize", "--repo", str(repo), "--issue-text", ISSUE, "--pipeline", "bogus"
        ).returncode
        == 2
    )


def test_llm_options_are_passed_through_and_checked(repo: Path) -> None:
    base = ("localize", "--repo", str(repo), "--issue-text", ISSUE, "--pipeline", "blagent")
    proc = run(*base, "--llm-option", "model_weight=0.25", "--llm-option", "max_steps=2")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["llm"]["model_weight"] == 0.25
    # Without a model the weight is the share of valid replies: none were made.
    assert json.loads(run(*base).stdout)["llm"]["model_weight"] == 0.0
    typo = run(*base, "--llm-option", "model_wieght=1")
    assert typo.returncode == 1 and "unknown field `model_wieght`" in typo.stderr
    assert run(*base, "--llm-option", "max_steps").returncode == 1


def test_eval_reports_llm_totals(repo: Path, tmp_path: Path) -> None:
    trees = tmp_path / "trees"
    trees.mkdir()
    (trees / "shop-1").symlink_to(repo, target_is_directory=True)
    dataset = tmp_path / "data.jsonl"
    row = {
        "instance_id": "shop-1",
        "repo": "o/shop",
        "problem_statement": ISSUE,
        "gold_files": ["shop/pricing.py"],
    }
    dataset.write_text(json.dumps(row) + "\n")
    proc = run(
        "eval",
        "--dataset",
        str(dataset),
        "--repos",
        str(trees),
        "--pipeline",
        "blagent",
        "--format",
        "json",
        "--quiet",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["llm"]["instances"] == 1 and report["llm"]["total"]["calls"] == 0
    table = run(
        "eval", "--dataset", str(dataset), "--repos", str(trees), "--pipeline", "rrl", "--quiet"
    )
    assert "llm (rrl, none): 0/1 ranked by the model" in table.stdout
