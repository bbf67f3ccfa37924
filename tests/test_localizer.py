"""The Python API: `blagent.Localizer(...).localize(repo, issue)` and its typed results."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import blagent
import pytest
from blagent import InputError, Localizer
from conftest import schema_validator

ISSUE = """apply_discount gives a negative total

`apply_discount(100, 10)` returns -900 instead of 90:

Traceback (most recent call last):
  File "/usr/lib/python3/site-packages/shop/cart.py", line 9, in total
  File "/usr/lib/python3/site-packages/shop/pricing.py", line 11, in apply_discount
shop.pricing.DiscountError: discount percentage cannot exceed one hundred
"""


def test_public_api_is_explicit() -> None:
    assert "Localizer" in blagent.__all__
    for name in blagent.__all__:
        assert hasattr(blagent, name), name
    assert issubclass(blagent.InputError, blagent.BlagentError)
    assert issubclass(blagent.BlagentIOError, blagent.BlagentError)
    assert issubclass(blagent.InternalError, blagent.BlagentError)


def test_ranks_the_buggy_file_first_with_evidence(repo: Path) -> None:
    result = Localizer(top_k=3).localize(repo, ISSUE)
    assert result.schema_version == blagent.SCHEMA_VERSION
    assert result.paths[0] == "shop/pricing.py"
    assert len(result.files) == 3
    top = result.files[0]
    signals = {e.signal for e in top.evidence}
    assert {"stack_frame", "definition", "error_message", "bm25_chunk"} <= signals
    frame = next(e for e in top.evidence if e.signal == "stack_frame")
    assert frame.lines == (11, 11)
    assert frame.symbol == "apply_discount"
    assert top.score >= result.files[1].score >= result.files[2].score


def test_one_result_type_for_every_pipeline_and_it_follows_its_schema(repo: Path) -> None:
    fused = Localizer(top_k=3).localize(repo, ISSUE, instance_id="shop-1")
    llm = Localizer(top_k=3).localize(repo, ISSUE, pipeline="blagent")
    for result, pipeline in ((fused, "fused"), (llm, "blagent")):
        assert type(result) is blagent.LocalizationResult
        assert result.pipeline == pipeline
        assert schema_validator("localize-result").is_valid(result.to_dict()), pipeline
        again = blagent.LocalizationResult.from_dict(json.loads(json.dumps(result.to_dict())))
        assert again == result
        assert (again.query["title"], again.stats["files"]) == (result.query["title"], 6)
    assert fused.instance_id == "shop-1" and fused.llm is None
    assert fused.localizer.mode == "llm-free" and llm.localizer.mode == "llm:blagent:none"
    assert llm.llm is not None and llm.llm["model"] == "none"
    assert fused.paths == llm.paths, "with no model the LLM pipeline's ranking is the fused one"
    request = blagent.LocalizeRequest("shop-1", str(repo), ISSUE, top_k=3, granularity="function")
    core_json = json.loads(Localizer()._inner.localize(json.dumps(request.to_dict())))
    typed = blagent.LocalizationResult.from_dict(core_json)
    assert typed.entities and typed.skipped and typed.files[0].evidence[0].lines is None
    assert typed.to_dict() == core_json, "to_dict writes back exactly what the core wrote"


def test_walk_reports_what_it_skipped(repo: Path) -> None:
    result = Localizer().localize(repo, ISSUE)
    reasons = {s.path: s.reason for s in result.skipped}
    assert reasons["shop/blob.py"] == "binary"
    assert reasons["shop/tests"] == "test"
    assert "shop/legacy.py" in result.stats["lossy_files"]
    assert "shop/broken.py" in result.stats["syntax_error_files"]
    assert all("tests/" not in p for p in result.paths)


def test_tests_can_be_included(repo: Path) -> None:
    result = Localizer(top_k=20, include_tests=True).localize(repo, ISSUE)
    assert "shop/tests/test_pricing.py" in result.paths


def test_index_is_reusable_across_issues(repo: Path) -> None:
    localizer = Localizer(top_k=2)
    index = localizer.index(repo)
    assert index.num_files == 6
    assert index.num_chunks > 6
    texts = index.chunk_texts()
    assert len(texts) == index.num_chunks
    assert all(t.startswith("# shop/") for t in texts)
    assert any("def apply_discount(total, percent):" in t for t in texts)
    first = localizer.localize(index, ISSUE)
    second = localizer.localize(index, "Inventory.reserve ignores the stock")
    assert first.paths[0] == "shop/pricing.py"
    assert second.paths[0] == "shop/inventory.py"


def test_an_index_answers_only_for_a_localizer_of_its_settings_and_repository(
    repo: Path, tmp_path: Path
) -> None:
    """Found by a review: an index built by one localizer was used by another as it was (a
    dense localizer got no dense signals, a Java-only one ranked Python files), and a request
    naming another repository was answered in the index without a word."""
    index = Localizer(history_commits=0).index(repo)
    with pytest.raises(InputError, match=r"other options .*index\.walk\.languages"):
        Localizer(history_commits=0, languages=["java"]).localize(index, ISSUE)
    with pytest.raises(InputError, match=r"index\.history_commits"):
        Localizer().localize(index, ISSUE)
    # Settings that do not shape the index may differ: the result's length, the weights.
    reused = Localizer(history_commits=0, top_k=1, weights={"definition": 0.1})
    assert reused.localize(index, ISSUE).paths == ["shop/pricing.py"]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    request = {"repo_path": str(elsewhere), "issue": ISSUE}
    with pytest.raises(InputError, match=r"names the repository .* but the index is of"):
        Localizer(history_commits=0).localize_request(request, index)
    same = {"repo_path": str(repo), "issue": ISSUE}
    assert Localizer(history_commits=0).localize_request(same, index).paths[0] == "shop/pricing.py"


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=repo,
        check=True,
        capture_output=True,
        env={**os.environ, "GIT_CONFIG_NOSYSTEM": "1"},
    )


def test_past_commits_like_the_title_lift_the_files_they_changed(repo: Path) -> None:
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "Initial import")
    inventory = repo / "shop" / "inventory.py"
    inventory.write_text(inventory.read_text() + "\n# keep the stock count sane\n")
    _git(repo, "commit", "-q", "-am", "Fixed stock going negative on oversold orders")
    issue = "Stock goes negative when an order is oversold\n\nAfter many orders it drops below 0."
    result = Localizer(top_k=6).localize(repo, issue)
    hit = next(f for f in result.files if f.path == "shop/inventory.py")
    history = [e.detail for e in hit.evidence if e.signal == "history_title"]
    assert history == ["past commit: Fixed stock going negative on oversold orders"]
    assert hit.contributions["history_title"] == pytest.approx(1.0)
    assert all("history_title" not in f.contributions for f in result.files if f is not hit)
    # Off, or without a .git folder, there is no such signal and nothing else changes.
    off = Localizer(top_k=6, history_commits=0).localize(repo, issue)
    assert all(e.signal != "history_title" for f in off.files for e in f.evidence)
    assert not any("commit history" in w for w in off.warnings)
    (repo / ".git").rename(repo.parent / "moved.git")
    plain = Localizer(top_k=6).localize(repo, issue)
    assert [f.path for f in plain.files] == [f.path for f in off.files]
    # A .git folder git cannot read is a warning, not an error.
    (repo / ".git").mkdir()
    broken = Localizer(top_k=6).localize(repo, issue)
    assert [f.path for f in broken.files] == [f.path for f in off.files]
    assert any(w.startswith("no commit history: git log failed") for w in broken.warnings)


def test_a_file_of_declarations_without_bodies_loses_a_share_of_its_score(tmp_path: Path) -> None:
    repo = tmp_path / "listeners"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "FrameListener.java").write_text(
        "/** Hears frames of a socket. */\ninterface FrameListener {\n"
        "    void onFrame(Socket socket, Frame frame);\n"
        "    void onClose(Socket socket, int code);\n}\n"
    )
    (repo / "src" / "FrameReader.java").write_text(
        "class FrameReader implements FrameListener {\n"
        "    public void onFrame(Socket socket, Frame frame) { socket.read(frame); }\n"
        "    public void onClose(Socket socket, int code) { socket.close(); }\n}\n"
    )
    issue = (
        "onFrame drops a frame when the socket closes\n\nThe FrameListener onFrame sees no frame."
    )
    result = Localizer(top_k=2).localize(repo, issue)
    interface = next(f for f in result.files if f.path == "src/FrameListener.java")
    assert interface.signals["unimplemented"] == pytest.approx(1.0)
    assert [e.detail for e in interface.evidence if e.signal == "unimplemented"] == [
        "2 of its 2 functions and methods are declared without a body"
    ]
    assert "unimplemented" not in interface.contributions
    assert sum(interface.contributions.values()) == pytest.approx(interface.score, rel=1e-5)
    share = blagent.default_weights()["unimplemented"]
    off = Localizer(top_k=2, weights={"unimplemented": 0}).localize(repo, issue)
    before = next(f for f in off.files if f.path == "src/FrameListener.java")
    assert interface.score == pytest.approx(before.score * (1 - share), rel=1e-5)
    implementation = next(f for f in result.files if f.path == "src/FrameReader.java")
    assert "unimplemented" not in implementation.signals


@pytest.mark.parametrize("issue", ["", "   \n\t  "])
def test_empty_issue_is_an_input_error(repo: Path, issue: str) -> None:
    with pytest.raises(InputError, match="empty"):
        Localizer().localize(repo, issue)


def test_missing_repository_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="repository not found"):
        Localizer().localize(tmp_path / "nope", ISSUE)


def test_a_file_as_repository_is_an_input_error(repo: Path) -> None:
    with pytest.raises(InputError, match="not a directory"):
        Localizer().localize(repo / "shop" / "cart.py", ISSUE)


def test_invalid_options_are_input_errors(repo: Path) -> None:
    with pytest.raises(InputError, match="top_k"):
        Localizer(top_k=0).localize(repo, ISSUE)
    with pytest.raises(InputError, match="unknown field `nonsense`"):
        Localizer(weights={"nonsense": 1.0})
    with pytest.raises(InputError, match="index_kind is 'exact' or 'hnsw', not 'flat'"):
        Localizer(dense=True, index_kind="flat", model_dir=repo)


def test_hostile_issue_text_still_ranks(repo: Path) -> None:
    hostile = "`" * 5000 + "(" * 5000 + "\x00\u202e" + 'File "' * 1000 + "a" * 100_000
    result = Localizer().localize(repo, hostile)
    indexed = Localizer().index(repo).num_files
    assert len(set(result.paths)) == len(result.files) == indexed, "completed with every file"
    assert [f.rank for f in result.files] == list(range(1, indexed + 1))


@pytest.mark.skipif(os.name != "posix", reason="symlinks")
def test_symlink_leaving_the_repository_is_never_read(repo: Path, outside_secret: Path) -> None:
    (repo / "shop" / "leak.py").symlink_to(outside_secret)
    result = Localizer(top_k=50).localize(repo, "PASSWORD hunter2 secret")
    assert "shop/leak.py" not in result.paths
    assert {s.path: s.reason for s in result.skipped}["shop/leak.py"] == "symlink_outside"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads everything")
def test_unreadable_file_is_skipped_not_fatal(repo: Path) -> None:
    target = repo / "shop" / "inventory.py"
    target.chmod(0)
    try:
        result = Localizer().localize(repo, ISSUE)
    finally:
        target.chmod(0o644)
    assert {s.path: s.reason for s in result.skipped}["shop/inventory.py"] == "unreadable"


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_special_files_are_skipped_without_blocking(repo: Path) -> None:
    os.mkfifo(repo / "shop" / "pipe.py")
    result = Localizer().localize(repo, ISSUE)
    assert {s.path: s.reason for s in result.skipped}["shop/pipe.py"] == "not_regular_file"


def test_languages_given_as_one_string_is_refused_at_once() -> None:
    """Found by a review: `languages="python"` was split into characters and failed only at
    localize time, asking for a language `p`."""
    with pytest.raises(InputError, match="list of names"):
        Localizer(languages="python")  # type: ignore[arg-type]
    assert Localizer(languages=["python"]) is not None
