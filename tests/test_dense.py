"""Dense retrieval end to end with the real default model: chunk embeddings in a Faiss index,
the dense signals in the fused ranking, the embedding cache across commits, and the stored vector
index (reused when sound, rebuilt when stale or corrupt)."""

from __future__ import annotations

import json
import os
import pty
import re
import shutil
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from blagent import InputError, Localizer, ModelError
from blagent.models import default_model_dir
from conftest import PRECISION_SUFFIX, expected_encoder_precision

ISSUE = (
    "apply_discount accepts a percentage above one hundred\n\n"
    "Calling `apply_discount(100, 150)` should raise DiscountError but returns a negative total."
)
DENSE_SIGNALS = {"dense_issue", "dense_structural", "dense_behavioral"}


def localize(repo: Path, cache: Path, **options: object) -> dict:
    return Localizer(dense=True, cache_dir=cache, **options).localize(repo, ISSUE).to_dict()


def manifests(cache: Path) -> list[Path]:
    return sorted((cache / "indexes").glob("*/manifest.json"))


def test_dense_signals_fire_and_point_at_chunks(repo: Path, tmp_path: Path) -> None:
    result = localize(repo, tmp_path / "cache")
    top = result["files"][0]
    assert top["path"] == "shop/pricing.py"
    assert DENSE_SIGNALS <= set(top["signals"])
    dense = [e for e in top["evidence"] if e["signal"] == "dense_issue"]
    assert dense and dense[0]["lines"][0] >= 1 and "cosine" in dense[0]["detail"]
    lexical = Localizer().localize(repo, ISSUE).to_dict()
    assert not DENSE_SIGNALS & set(lexical["files"][0]["signals"])


def test_a_sound_stored_index_is_reused_and_a_corrupt_one_rebuilt(
    repo: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    first = localize(repo, cache)
    (manifest,) = manifests(cache)
    before = manifest.read_text()
    again = localize(repo, cache)
    assert [f["path"] for f in again["files"]] == [f["path"] for f in first["files"]]
    assert manifest.read_text() == before
    vectors = manifest.parent / "vectors.faiss"
    data = bytearray(vectors.read_bytes())
    data[-1] ^= 0xFF
    vectors.write_bytes(bytes(data))
    rebuilt = localize(repo, cache)
    assert [f["path"] for f in rebuilt["files"]] == [f["path"] for f in first["files"]]
    assert json.loads(manifest.read_text())["checksum"] == json.loads(before)["checksum"]


def test_another_commit_embeds_only_new_chunks(repo: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    localize(repo, cache)
    entries = sum(1 for p in (cache / "embeddings").rglob("*") if p.is_file())
    (repo / "shop" / "coupons.py").write_text("def redeem(code):\n    return code.upper()\n")
    localize(repo, cache)
    after = sum(1 for p in (cache / "embeddings").rglob("*") if p.is_file())
    # One new chunk, plus the three query vectors of the (unchanged) issue already cached.
    assert after == entries + 1
    assert len(manifests(cache)) == 2


def test_hnsw_and_truncation_are_options(repo: Path, tmp_path: Path) -> None:
    hnsw = localize(repo, tmp_path / "cache", index_kind="hnsw", dense_max_tokens=64)
    assert hnsw["files"][0]["path"] == "shop/pricing.py"
    kinds = {json.loads(m.read_text())["kind"]["kind"] for m in manifests(tmp_path / "cache")}
    assert kinds == {"hnsw"}
    with pytest.raises(InputError, match="index_kind is 'exact' or 'hnsw', not 'ivf'"):
        Localizer(dense=True, index_kind="ivf")


def test_texts_are_truncated_at_128_tokens_unless_asked(repo: Path, tmp_path: Path) -> None:
    # The model's identity in the index manifest names the length: MiniLM's folder allows 256.
    for asked, length in [(None, "/t128"), (64, "/t64"), (0, "/t256")]:
        cache = tmp_path / f"cache-{asked}"
        localize(repo, cache, dense_max_tokens=asked)
        (manifest,) = manifests(cache)
        model = json.loads(manifest.read_text())["model"]
        suffix = PRECISION_SUFFIX[expected_encoder_precision()]
        # Then a hash of the weights and tokenizer, then the precision.
        assert model.endswith(suffix), model
        assert re.search(f"{length}/c[0-9a-f]{{16}}$", model.removesuffix(suffix)), model


def test_cli_dense_flag(repo: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "blagent",
            "localize",
            "--repo",
            str(repo),
            "--issue-text",
            ISSUE,
            "--dense",
            "--cache-dir",
            str(tmp_path / "cache"),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    files = json.loads(proc.stdout)["files"]
    assert DENSE_SIGNALS <= set(files[0]["signals"])
    assert proc.stderr == ""


def _stderr_on_a_terminal(args: list[str]) -> tuple[int, str]:
    """Runs the CLI with stderr on a pseudo-terminal; its exit code and what it drew there
    (read while it runs, so a long drawing never fills the terminal's buffer)."""
    try:
        master, slave = pty.openpty()
    except OSError as e:
        pytest.skip(f"no pseudo-terminal here: {e}")
    drawn = bytearray()

    def read() -> None:
        try:
            while chunk := os.read(master, 1 << 16):
                drawn.extend(chunk)
        except OSError:  # EIO: the terminal's other end is closed and everything was read
            pass

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # A terminal names its kind; without TERM (a CI runner, `env -i`) nothing is drawn.
        proc = subprocess.run(
            [sys.executable, "-m", "blagent", *args],
            stdout=subprocess.PIPE,
            stderr=slave,
            check=False,
            timeout=300,
            env={**os.environ, "TERM": "xterm"},
        )
    finally:
        os.close(slave)
        reader.join(timeout=30)
        os.close(master)
    return proc.returncode, drawn.decode("utf-8", "replace")


def test_indexing_shows_files_chunks_rate_and_time_left_unless_quiet(
    repo: Path, tmp_path: Path
) -> None:
    args = ["localize", "--repo", str(repo), "--issue-text", ISSUE, "--dense"]
    code, drawn = _stderr_on_a_terminal([*args, "--cache-dir", str(tmp_path / "a")])
    assert code == 0, drawn
    assert re.search(r"embedding [1-9]\d* files: .* (\d+)/\1 chunks", drawn), drawn
    assert "/s" in drawn and "ETA" in drawn, drawn
    code, drawn = _stderr_on_a_terminal([*args, "--cache-dir", str(tmp_path / "b"), "--quiet"])
    assert (code, drawn) == (0, "")


def test_eval_with_given_rewrites_reports_the_pool(repo: Path, tmp_path: Path) -> None:
    trees = tmp_path / "trees"
    trees.mkdir()
    (trees / "shop-1").symlink_to(repo)
    dataset = tmp_path / "data.jsonl"
    dataset.write_text(
        json.dumps(
            {
                "instance_id": "shop-1",
                "repo": "o/shop",
                "problem_statement": ISSUE,
                "gold_files": ["shop/pricing.py"],
            }
        )
        + "\n"
    )
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        json.dumps(
            {
                "instance_id": "shop-1",
                "structural_t0": "apply_discount DiscountError shop/pricing.py",
                "behavioral_t1": "a discount above 100 percent gives a negative total",
            }
        )
        + "\n"
    )
    base = [
        sys.executable,
        "-m",
        "blagent",
        "eval",
        "--dataset",
        str(dataset),
        "--repos",
        str(trees),
        "--format",
        "json",
        "--quiet",
    ]
    proc = subprocess.run(
        [*base, "--dense", "--cache-dir", str(tmp_path / "cache"), "--queries", str(queries)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    rewrites = report["rewrites"]
    assert rewrites["instances"] == 1 and rewrites["pool_recall"] == 1.0
    assert rewrites["hybrid_pool_recall"] == 1.0 and 1 <= rewrites["hybrid_pool_mean_size"] <= 15
    assert 1 <= rewrites["pool_mean_size"] <= 15
    assert rewrites["dense_structural"]["instances"] == 1
    assert report["dense"]["embedded"] > 0
    without_dense = subprocess.run(
        [*base, "--queries", str(queries)], capture_output=True, text=True, check=False
    )
    assert without_dense.returncode == 1 and "needs --dense" in without_dense.stderr


def test_a_model_of_the_same_name_and_sizes_gets_its_own_cache(repo: Path, tmp_path: Path) -> None:
    """A fine-tune as large as its base (here: one weight changed) used to read the base's
    cached vectors: the identity named only the model's name and sizes."""
    tuned = tmp_path / "tuned"
    shutil.copytree(default_model_dir(), tuned)
    weights = tuned / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-4:] = struct.pack("<f", struct.unpack("<f", bytes(data[-4:]))[0] + 0.5)
    weights.write_bytes(bytes(data))
    cache = tmp_path / "cache"
    localize(repo, cache)
    localize(repo, cache, model_dir=tuned)
    assert len([p for p in (cache / "embeddings").iterdir() if p.is_dir()]) == 2


def test_a_folder_of_other_settings_gets_its_own_cache(repo: Path, tmp_path: Path) -> None:
    """Found by a review: the same weights with CLS pooling, another activation or other
    prefixes were served the cached vectors of the folder as it was."""
    from blagent import _core

    base = _core.Encoder(str(default_model_dir())).identity
    for name, change in (
        (
            "1_Pooling/config.json",
            {"pooling_mode_cls_token": True, "pooling_mode_mean_tokens": False},
        ),
        ("config.json", {"hidden_act": "relu"}),
        ("config_sentence_transformers.json", {"prompts": {"query": "q: ", "document": ""}}),
    ):
        other = tmp_path / name.replace("/", "_")
        shutil.copytree(default_model_dir(), other)
        path = other / name
        settings = json.loads(path.read_text()) if path.exists() else {}
        path.write_text(json.dumps({**settings, **change}))
        assert _core.Encoder(str(other)).identity != base, name
    cache = tmp_path / "cache"
    localize(repo, cache)
    localize(repo, cache, model_dir=tmp_path / "1_Pooling_config.json")
    assert len([p for p in (cache / "embeddings").iterdir() if p.is_dir()]) == 2


def test_a_model_that_gives_nan_vectors_is_a_model_error(repo: Path, tmp_path: Path) -> None:
    """Found by a review: NaN weights turned the dense signals off with no error or warning
    (Faiss finds nothing for NaN vectors), and the NaN vectors were cached."""
    broken = tmp_path / "broken"
    shutil.copytree(default_model_dir(), broken)
    weights = broken / "model.safetensors"
    data = bytearray(weights.read_bytes())
    # The embeddings' layer norm, which every token passes: its weights made NaN.
    (size,) = struct.unpack("<Q", bytes(data[:8]))
    header = json.loads(bytes(data[8 : 8 + size]))
    name = next(n for n in header if n.endswith("embeddings.LayerNorm.weight"))
    start, end = header[name]["data_offsets"]
    assert header[name]["dtype"] == "F32"
    base = 8 + size
    data[base + start : base + end] = struct.pack("<f", float("nan")) * ((end - start) // 4)
    weights.write_bytes(bytes(data))
    with pytest.raises(ModelError, match="NaN or infinite"):
        localize(repo, tmp_path / "cache", model_dir=broken)


def test_garbled_weights_are_a_model_error_naming_the_file(repo: Path, tmp_path: Path) -> None:
    """Found by a review: safetensors' own error ("header too large") did not say which file."""
    broken = tmp_path / "garbled"
    shutil.copytree(default_model_dir(), broken)
    (broken / "model.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(ModelError, match=re.escape(str(broken / "model.safetensors"))):
        localize(repo, tmp_path / "cache", model_dir=broken)


def test_a_refused_dense_batch_leaves_no_cache_folder(repo: Path, tmp_path: Path) -> None:
    """Found by a review: the model was loaded (and its cache folders made) before the batch
    found its output to be its own dataset and refused to run."""
    trees = tmp_path / "trees"
    shutil.copytree(repo, trees / "i1")
    dataset = tmp_path / "dataset.jsonl"
    dataset.write_text(json.dumps({"instance_id": "i1", "problem_statement": ISSUE}) + "\n")
    before = dataset.read_bytes()
    cache = tmp_path / "cache"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "blagent",
            "batch",
            "--dataset",
            str(dataset),
            "--repos",
            str(trees),
            "--out",
            str(dataset),
            "--dense",
            "--cache-dir",
            str(cache),
            "--quiet",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1 and "an input of this run" in proc.stderr, proc.stderr
    assert dataset.read_bytes() == before
    assert not cache.exists()


def test_a_cache_that_cannot_be_written_is_a_warning_not_a_failure(
    repo: Path, tmp_path: Path
) -> None:
    """Found by a review: a file where the cache's `indexes/` or `embeddings/` folder belongs
    (as a read-only or full disk) failed the run with an I/O error, though nothing needed
    storing to answer it."""
    reference = localize(repo, tmp_path / "reference")
    for blocked in ("indexes", "embeddings"):
        cache = tmp_path / f"blocked-{blocked}"
        cache.mkdir()
        (cache / blocked).write_text("not a folder\n")
        result = localize(repo, cache)
        assert [f["path"] for f in result["files"]] == [f["path"] for f in reference["files"]]
        assert any("not stored" in w for w in result["warnings"]), result["warnings"]
        assert (cache / blocked).read_text() == "not a folder\n"


def test_a_cache_inside_the_repository_is_refused(repo: Path, tmp_path: Path) -> None:
    """Found by a review: `--cache-dir repo/.cache` filled the user's checkout."""
    checkout = tmp_path / "checkout"
    shutil.copytree(repo, checkout)
    with pytest.raises(InputError, match="inside"):
        localize(checkout, checkout / ".cache")
    assert not (checkout / ".cache").exists()
    # Nor a repository that is the folder the cache writes in (a review of the check).
    cache = tmp_path / "cache"
    shutil.copytree(repo, cache / "embeddings")
    with pytest.raises(InputError, match="inside"):
        localize(cache / "embeddings", cache)
    assert sorted(p.name for p in (cache / "embeddings").iterdir()) == sorted(
        p.name for p in repo.iterdir()
    )


def test_summaries_compare_candidate_functions_with_the_title(tmp_path: Path) -> None:
    """`summaries=True` adds the `summary` feature at function level with the real model, and
    embeds no chunk: no vector index is stored, only the summaries' and title's vectors."""
    minishop = Path(__file__).resolve().parent.parent / "examples" / "minishop"
    issue = (Path(__file__).resolve().parent.parent / "examples" / "minishop_issue.md").read_text()
    cache = tmp_path / "cache"
    with_summaries = Localizer(summaries=True, cache_dir=cache).localize(
        minishop, issue, granularity="function"
    )
    entities = with_summaries.to_dict()["entities"]
    summary = [e["contributions"].get("summary", 0.0) for e in entities]
    # Min-max over the candidates: the one nearest the title gets the whole weight.
    assert max(summary) == pytest.approx(1.0) and min(summary) == 0.0
    assert not manifests(cache) and list((cache / "embeddings").iterdir())
    plain = Localizer().localize(minishop, issue, granularity="function").to_dict()["entities"]
    assert not any("summary" in e["contributions"] for e in plain)
    # The files are ranked as without it.
    assert [f["path"] for f in with_summaries.to_dict()["files"]] == [
        f["path"] for f in Localizer().localize(minishop, issue).to_dict()["files"]
    ]
    with pytest.raises(InputError, match="summaries is True or False"):
        Localizer(summaries="yes")  # type: ignore[arg-type]


def test_summaries_write_no_cache_inside_the_repository(repo: Path) -> None:
    """The summaries' vectors are cached where dense retrieval's are, never in the tree read."""
    before = sorted(p.relative_to(repo) for p in repo.rglob("*"))
    with pytest.raises(InputError, match="cache folder"):
        Localizer(summaries=True, cache_dir=repo / ".cache").localize(
            repo, ISSUE, granularity="function"
        )
    assert sorted(p.relative_to(repo) for p in repo.rglob("*")) == before


def test_summaries_leave_java_and_kotlin_functions_alone(tmp_path: Path) -> None:
    """The summary feature compares Python functions only (on the Java and Kotlin development
    tasks its fitted weight is 0)."""
    repo = tmp_path / "shop"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "Cart.java").write_text(
        "class Cart {\n  /** Applies a percentage coupon to the total. */\n"
        "  int applyCoupon(int total, int percent) { return total - percent; }\n}\n"
    )
    (repo / "src" / "Tax.kt").write_text("fun addTax(total: Int): Int = total + 1\n")
    issue = "Percentage coupons give a negative total\n\napplyCoupon subtracts the percent."
    entities = (
        Localizer(summaries=True, cache_dir=tmp_path / "cache")
        .localize(repo, issue, granularity="function")
        .to_dict()["entities"]
    )
    assert {e["id"] for e in entities} >= {"src/Cart.java::Cart.applyCoupon", "src/Tax.kt::addTax"}
    assert not any("summary" in e["contributions"] for e in entities)
