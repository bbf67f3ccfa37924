"""The standardized interface: typed request/result, the FileLocalizer protocol, hints and
entities, `blagent localize --request-json`, and real outputs checked against `schemas/`."""

from __future__ import annotations

import json
from pathlib import Path

import blagent
import pytest
from blagent import (
    SCHEMA_VERSION,
    FileLocalizer,
    Hints,
    InputError,
    LocalizationResult,
    Localizer,
    LocalizeRequest,
    LocalizerInfo,
    Rewrites,
)
from conftest import schema_validator
from test_cli import run
from test_localizer import ISSUE


def request_for(repo: Path, **kwargs: object) -> LocalizeRequest:
    return LocalizeRequest("shop-1", str(repo), ISSUE, **kwargs)  # type: ignore[arg-type]


def test_blagent_implements_the_protocol() -> None:
    assert isinstance(Localizer(), FileLocalizer)
    assert not isinstance(object(), FileLocalizer)


def test_request_round_trips_and_validates_against_the_schema(repo: Path) -> None:
    request = request_for(
        repo,
        hints=Hints(files=["shop/cart.py"], language="python"),
        top_k=3,
        granularity="function",
    )
    data = request.to_dict()
    schema_validator("localize-request").validate(data)
    assert LocalizeRequest.from_dict(data) == request
    minimal = {"instance_id": "a", "repo_path": "/r", "issue": "boom"}
    schema_validator("localize-request").validate(minimal)
    assert LocalizeRequest.from_dict(minimal).top_k == 10
    # What Localizer.localize sends without an id, and what the core takes: no id, or an empty one.
    for anonymous in ({"repo_path": "/r", "issue": "boom"}, {**minimal, "instance_id": ""}):
        schema_validator("localize-request").validate(anonymous)
        assert LocalizeRequest.from_dict(anonymous).instance_id == ""


def test_a_request_carries_rewrites_through_json(repo: Path) -> None:
    request = request_for(repo, rewrites=Rewrites("Cart.total in shop/cart.py", "totals are wrong"))
    data = request.to_dict()
    schema_validator("localize-request").validate(data)
    assert data["rewrites"] == {
        "structural": "Cart.total in shop/cart.py",
        "behavioral": "totals are wrong",
    }
    assert LocalizeRequest.from_dict(data) == request
    assert "rewrites" not in request_for(repo).to_dict()
    assert Localizer().localize_request(request).files
    with pytest.raises(InputError, match="rewrites is missing behavioral"):
        LocalizeRequest.from_dict({**data, "rewrites": {"structural": "x"}})
    with pytest.raises(TypeError, match="must be a Rewrites"):
        request_for(repo, rewrites={"structural": "x", "behavioral": "y"})


def test_file_granularity_result_is_schema_valid_and_llm_free(repo: Path) -> None:
    result = Localizer().localize_request(request_for(repo, top_k=3))
    schema_validator("localize-result").validate(result.to_dict())
    assert result.schema_version == blagent.SCHEMA_VERSION
    assert result.instance_id == "shop-1"
    assert result.paths[0] == "shop/pricing.py"
    assert [f.rank for f in result.files] == [1, 2, 3]
    assert result.entities is None
    assert (
        result.usage.prompt_tokens == result.usage.completion_tokens == result.usage.llm_calls == 0
    )
    assert result.localizer.mode == "llm-free"
    assert result.timings["total_ms"] >= result.timings["query_ms"] > 0
    assert LocalizationResult.from_dict(result.to_dict()) == result


def test_function_granularity_lists_entities_of_the_top_files(repo: Path) -> None:
    result = Localizer().localize_request(request_for(repo, top_k=2, granularity="function"))
    schema_validator("localize-result").validate(result.to_dict())
    assert result.entities
    assert result.entities[0].id == "shop/pricing.py::apply_discount"
    assert result.entities[0].kind == "function"
    assert {e.path for e in result.entities} <= set(result.paths)
    scores = [e.score for e in result.entities]
    assert scores == sorted(scores, reverse=True)
    for e in result.entities:  # what each feature added, summing to the score
        assert sum(e.contributions.values()) == pytest.approx(e.score, abs=1e-5)
    assert result.entities[0].contributions["frame"] > 0


def test_hints_boost_the_suspected_file_and_warn_about_the_rest(repo: Path) -> None:
    plain = Localizer().localize_request(request_for(repo, top_k=10))
    hints = Hints(
        files=[
            "shop/inventory.py",
            "shop/nowhere.py",
            "shop/tests/test_pricing.py",
            "shop/nowhere.py",
        ],
        language="rust",
    )
    hinted = Localizer().localize_request(request_for(repo, top_k=10, hints=hints))
    schema_validator("localize-result").validate(hinted.to_dict())
    before = next((f.score for f in plain.files if f.path == "shop/inventory.py"), 0.0)
    after = next(f for f in hinted.files if f.path == "shop/inventory.py")
    weight = blagent.default_weights()["path_mention"]
    assert after.hinted and after.evidence[0].signal == "hint"
    assert after.score == pytest.approx(before + weight, rel=1e-5)
    assert sum("shop/nowhere.py" in w for w in hinted.warnings) == 1
    assert sum("test_pricing.py" in w for w in hinted.warnings) == 1
    assert sum("rust" in w for w in hinted.warnings) == 1


def test_a_prebuilt_index_answers_requests_too(repo: Path) -> None:
    localizer = Localizer()
    index = localizer.index(repo)
    result = localizer.localize_request(request_for(repo, top_k=2).to_dict(), index=index)
    assert result.paths[0] == "shop/pricing.py"
    assert result.timings["index_reused"] is True
    assert result.timings["total_ms"] == result.timings["query_ms"]
    fresh = localizer.localize_request(request_for(repo, top_k=2))
    assert fresh.timings["index_reused"] is False
    assert fresh.timings["total_ms"] >= fresh.timings["walk_ms"] + fresh.timings["query_ms"]


@pytest.mark.parametrize(
    "bad",
    [
        {"instance_id": "a", "repo_path": "/r", "issue": "x", "topk": 3},
        {"instance_id": "a", "repo_path": "/r", "issue": "x", "schema_version": "2.0"},
        {"instance_id": "a", "repo_path": "/r", "issue": "x", "granularity": "line"},
        {"instance_id": "a", "repo_path": "/r", "issue": "   "},
        {"instance_id": "a", "repo_path": "/r", "issue": "x", "hints": {"filez": ["a.py"]}},
        {
            "instance_id": "a",
            "repo_path": "/r",
            "issue": "x",
            "rewrites": {"structural": "s", "behavioral": "b", "typo": 1},
        },
    ],
)
def test_invalid_requests_are_input_errors_and_schema_invalid(bad: dict[str, object]) -> None:
    assert not schema_validator("localize-request").is_valid(bad)
    with pytest.raises(InputError):
        Localizer().localize_request(bad)
    if set(bad) & {"hints", "rewrites", "topk"}:
        with pytest.raises(InputError):  # unknown keys, here too
            LocalizeRequest.from_dict(bad)


def test_requests_the_api_cannot_send_are_input_errors(repo: Path) -> None:
    localizer = Localizer()
    nested: dict[str, object] = {}
    for _ in range(2000):
        nested = {"x": nested}
    for bad in (
        [SCHEMA_VERSION, "a", str(repo), "issue"],  # an array: read by position before
        {"instance_id": "a", "repo_path": str(repo), "issue": "x", "deep": nested},
        {"instance_id": "a", "repo_path": str(repo), "issue": "x", "odd": {1, 2}},
    ):
        with pytest.raises(InputError):
            localizer.localize_request(bad)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        Localizer(llm_options=[1])  # type: ignore[arg-type]
    with pytest.raises(InputError):
        Localizer(reads="abc")  # type: ignore[arg-type]
    with pytest.raises(InputError):
        Hints(files=None)  # type: ignore[arg-type]
    generated = Hints(files=(p for p in ["shop/inventory.py"]))
    assert generated.files == ["shop/inventory.py"]
    hinted = localizer.localize_request(request_for(repo, top_k=10, hints=generated))
    assert any(f.hinted for f in hinted.files)


def test_another_localizer_can_build_schema_valid_results() -> None:
    other = LocalizationResult(
        instance_id="x-1",
        localizer=LocalizerInfo("dense-retriever", "0.3", "llm-free"),
        files=[
            blagent.FileHit(
                1,
                "pkg/a.py",
                0.9,
                evidence=[blagent.Evidence("dense", 0.9, "cosine", (3, 9), "A.f")],
            )
        ],
    )
    schema_validator("localize-result").validate(other.to_dict())


def test_cli_reads_a_request_from_a_file_or_stdin(repo: Path, tmp_path: Path) -> None:
    request = request_for(repo, top_k=2, granularity="function").to_dict()
    path = tmp_path / "request.json"
    path.write_text(json.dumps(request))
    from_file = run("localize", "--request-json", str(path))
    from_stdin = run("localize", "--request-json", "-", stdin=json.dumps(request))
    assert from_file.returncode == from_stdin.returncode == 0, from_file.stderr
    result = json.loads(from_file.stdout)
    schema_validator("localize-result").validate(result)
    assert result["files"][0]["path"] == "shop/pricing.py"
    assert [f["path"] for f in json.loads(from_stdin.stdout)["files"]] == [
        f["path"] for f in result["files"]
    ]


def test_cli_request_errors_exit_1_and_usage_errors_exit_2(repo: Path, tmp_path: Path) -> None:
    assert run("localize", "--request-json", "-", stdin="{not json").returncode == 1
    assert run("localize", "--request-json", "-", stdin="[1, 2]").returncode == 1
    missing = run(
        "localize",
        "--request-json",
        "-",
        stdin=json.dumps({"instance_id": "a", "repo_path": str(tmp_path / "no"), "issue": "x"}),
    )
    assert missing.returncode == 1 and "repository not found" in missing.stderr
    assert run("localize", "--request-json", str(tmp_path / "absent.json")).returncode == 1
    both = run("localize", "--repo", str(repo), "--request-json", "-", stdin="{}")
    assert both.returncode == 2
