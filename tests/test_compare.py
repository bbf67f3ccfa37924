"""`blagent compare` on runs written here: side-by-side metrics, paired tests, peers as runs."""

from __future__ import annotations

import difflib
import json
from pathlib import Path

from test_cli import run

# 12 instances in two repositories; the baseline ranks gold first on 6, the other run on 10.
IDS = [f"r{i}" for i in range(12)]


def write(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def setup(tmp_path: Path) -> tuple[Path, Path, Path]:
    dataset = write(
        tmp_path / "d.jsonl",
        [
            {
                "instance_id": i,
                "repo": "a/x" if n < 6 else "b/y",
                "problem_statement": "p",
                "gold_files": [f"{i}.py"],
            }
            for n, i in enumerate(IDS)
        ],
    )
    base = write(
        tmp_path / "base.jsonl",
        [
            {"instance_id": i, "found_files": [f"{i}.py", "z.py"] if n % 2 else ["z.py", f"{i}.py"]}
            for n, i in enumerate(IDS)
        ],
    )
    # Better on 5 instances the baseline ranks second, worse on r1; no line for r11.
    other = []
    for n, i in enumerate(IDS[:-1]):
        first = (n % 2 == 1 and n != 1) or n in (0, 2, 4, 6, 8)
        other.append(
            {"instance_id": i, "found_files": [f"{i}.py", "z.py"] if first else ["z.py", f"{i}.py"]}
        )
    return dataset, base, write(tmp_path / "other.jsonl", other)


def test_compare_prints_metrics_and_paired_tests(tmp_path: Path) -> None:
    dataset, base, other = setup(tmp_path)
    proc = run(
        "compare",
        str(base),
        str(other),
        "--dataset",
        str(dataset),
        "--format",
        "json",
        "--resamples",
        "500",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["baseline"] == "base.jsonl" and report["instances"] == 12
    runs = {r["name"]: r for r in report["runs"]}
    assert runs["base.jsonl"]["overall"]["acc"][0] == 0.5
    assert runs["other.jsonl"]["missing"] == 1
    overall = next(d for d in report["differences"] if d["scope"] == "overall")
    # Acc@1: baseline right on r1,r3,r5,r7,r9,r11; other on r0,r2,r3,r4,r5,r6,r7,r8,r9: b = 2 (r1, r11), c = 5.
    assert (overall["mcnemar_acc1"]["baseline_only"], overall["mcnemar_acc1"]["run_only"]) == (2, 5)
    assert abs(overall["mcnemar_acc1"]["p"] - 0.453125) < 1e-9  # 2 * P(X <= 2), X ~ Bin(7, 1/2)
    assert abs(overall["acc"][0]["delta"] - 3 / 12) < 1e-9
    assert overall["acc"][0]["low"] <= overall["acc"][0]["delta"] <= overall["acc"][0]["high"]
    assert {d["scope"] for d in report["differences"]} == {"overall", "a/x", "b/y"}
    text = run("compare", str(base), str(other), "--dataset", str(dataset), "--resamples", "200")
    assert "McNemar b=2 c=5" in text.stdout and "LocAgent's reading" in text.stdout
    assert "warning" not in text.stderr, text.stderr
    # Found by a review: two runs joined by `cat` were scored by each instance's last line,
    # without a word.
    joined = tmp_path / "joined.jsonl"
    joined.write_text(other.read_text() + base.read_text())
    proc = run("compare", str(base), str(joined), "--dataset", str(dataset), "--resamples", "50")
    assert proc.returncode == 0, proc.stderr
    assert "blagent: warning:" in proc.stderr and "duplicate instance r0" in proc.stderr


def test_peers_are_runs_and_bad_input_is_an_error(tmp_path: Path) -> None:
    dataset, base, _ = setup(tmp_path)
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps({"perfect": {i: [f"{i}.py"] for i in IDS}, "empty": {}}))
    proc = run(
        "compare",
        str(base),
        "--peers",
        str(peers),
        "--peer",
        "perfect",
        "--dataset",
        str(dataset),
        "--format",
        "json",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [r["name"] for r in report["runs"]] == ["base.jsonl", "perfect"]
    assert report["runs"][1]["overall"]["mrr"] == 1.0
    unknown = run(
        "compare", str(base), "--peers", str(peers), "--peer", "nobody", "--dataset", str(dataset)
    )
    assert unknown.returncode == 1 and "no peer run" in unknown.stderr
    # Found by a review: a peer named twice was read as its last ranking.
    twice = tmp_path / "twice.json"
    twice.write_text('{"perfect": {}, "perfect": {"a": ["x.py"]}}')
    proc = run("compare", str(base), "--peers", str(twice), "--dataset", str(dataset))
    assert proc.returncode == 1 and "duplicate key `perfect`" in proc.stderr, proc.stderr
    alone = run("compare", str(base), "--dataset", str(dataset))
    assert alone.returncode == 1 and "at least two runs" in alone.stderr


def _diff(repo: Path, rel: str, old: str, new: str) -> str:
    before = (repo / rel).read_text()
    after = before.replace(old, new)
    assert after != before
    body = "".join(
        difflib.unified_diff(
            before.splitlines(True), after.splitlines(True), f"a/{rel}", f"b/{rel}"
        )
    )
    return f"diff --git a/{rel} b/{rel}\n{body}"


def test_compare_at_function_level_reads_found_functions_in_both_readings(
    repo: Path, tmp_path: Path
) -> None:
    # Gold: apply_discount and Cart.total (two gold functions); "doc" touches no function.
    patch = _diff(repo, "shop/pricing.py", "total * percent\n", "total * percent / 100\n")
    patch += _diff(repo, "shop/cart.py", "sum(self.items)", "sum(self.items or [])")
    docs = _diff(repo, "shop/pricing.py", '"""Prices and discounts."""', '"""Prices."""')
    trees = tmp_path / "trees"
    trees.mkdir()
    for name in ("two", "doc"):
        (trees / name).symlink_to(repo, target_is_directory=True)
    rows = [
        {"instance_id": "two", "repo": "acme/shop", "problem_statement": "p", "patch": patch},
        {"instance_id": "doc", "repo": "acme/shop", "problem_statement": "p", "patch": docs},
        {"instance_id": "gone", "repo": "acme/shop", "problem_statement": "p", "patch": patch},
    ]
    dataset = write(tmp_path / "fn.jsonl", rows)
    reserve, apply, total = (
        "shop/inventory.py::Inventory.reserve",
        "shop/pricing.py::apply_discount",
        "shop/cart.py::Cart.total",
    )
    base = write(
        tmp_path / "base.jsonl",
        [{"instance_id": "two", "found_functions": [apply, reserve, total]}],
    )
    other = write(
        tmp_path / "other.jsonl",
        [{"instance_id": "two", "found_functions": [reserve, total, apply]}],
    )
    args = [str(base), str(other), "--dataset", str(dataset), "--granularity", "function"]
    proc = run("compare", *args, "--repos", str(trees), "--format", "json", "--resamples", "50")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["granularity"] == "function" and report["instances"] == 1
    runs = {r["name"]: r["overall"] for r in report["runs"]}
    # base: a gold function first (any@1) but not both in the top 1 (Acc@1); both in the top 5.
    assert runs["base.jsonl"]["mrr"] == 1.0 and runs["other.jsonl"]["mrr"] == 0.5
    assert runs["base.jsonl"]["acc_any"][0] == 1.0 and runs["base.jsonl"]["acc"][0] == 0.0
    assert runs["base.jsonl"]["acc"][2] == 1.0
    overall = next(d for d in report["differences"] if d["scope"] == "overall")
    assert overall["acc_any"][0]["delta"] == -1.0 and overall["acc"][0]["delta"] == 0.0
    assert overall["mcnemar_acc1_any"]["baseline_only"] == 1
    assert overall["mcnemar_acc1"]["baseline_only"] == 0
    assert any("no tree" in w for w in report["warnings"])
    assert any("touches no function" in w for w in report["warnings"])
    text = run("compare", *args, "--repos", str(trees), "--resamples", "50").stdout
    assert "functions; baseline" in text and "McNemar any b=1 c=0" in text
    no_trees = run("compare", *args)
    assert no_trees.returncode == 1 and "base trees" in no_trees.stderr
    # Found by a review: a trees folder that does not exist was reported as "no selected
    # instance has gold functions", and one id that names no folder of its own failed all.
    missing = run("compare", *args, "--repos", str(tmp_path / "nowhere"))
    assert missing.returncode == 1 and "does not exist" in missing.stderr, missing.stderr
    write(tmp_path / "fn.jsonl", [*rows, {**rows[0], "instance_id": ".."}])
    proc = run("compare", *args, "--repos", str(trees), "--format", "json", "--resamples", "50")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["instances"] == 1 and any('".."' in w for w in report["warnings"]), report
    # Found by a review: a `batch --granularity function` line (its ranking in the result's
    # entities), an Agentless run and the peers' file lists were all scored as ranking no
    # function, MRR 0 with no word.
    entities = [
        {"id": reserve, "kind": "method"},
        {"id": "shop/cart.py::Cart", "kind": "class"},
        {"id": total, "kind": "method"},
    ]
    batch = write(
        tmp_path / "batch.jsonl",
        [{"instance_id": "two", "found_files": [], "blagent": {"entities": entities}}],
    )
    proc = run(
        "compare", str(base), str(batch), *args[2:], "--repos", str(trees), "--format", "json",
        "--resamples", "50",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    runs = {r["name"]: r["overall"] for r in json.loads(proc.stdout)["runs"]}
    assert runs["batch.jsonl"]["mrr"] == 0.5, runs
    agentless = write(
        tmp_path / "agentless.jsonl",
        [{"instance_id": "two", "found_files": [], "found_related_locs": [["function: f"]]}],
    )
    proc = run("compare", str(base), str(agentless), *args[2:], "--repos", str(trees))
    assert proc.returncode == 1 and "no record ranks functions" in proc.stderr, proc.stderr
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps({"p": {"two": ["shop/cart.py"]}}))
    proc = run("compare", str(base), *args[2:], "--repos", str(trees), "--peers", str(peers))
    assert proc.returncode == 1 and "rank files, not functions" in proc.stderr, proc.stderr


def test_a_run_of_function_ids_written_with_one_colon_is_named(repo: Path, tmp_path: Path) -> None:
    # Found by a review: `path:Class.method` ids matched no gold function (compared as
    # `path::Class.method`) and the run scored 0 without a word.
    patch = _diff(repo, "shop/cart.py", "sum(self.items)", "sum(self.items or [])")
    trees = tmp_path / "trees"
    trees.mkdir()
    (trees / "one").symlink_to(repo, target_is_directory=True)
    row = {"instance_id": "one", "repo": "acme/shop", "problem_statement": "p", "patch": patch}
    dataset = write(tmp_path / "fn.jsonl", [row])
    ranked = ["shop/pricing.py::apply_discount", "shop/cart.py::Cart.total"]
    base = write(tmp_path / "base.jsonl", [{"instance_id": "one", "found_functions": ranked}])
    colon = write(
        tmp_path / "colon.jsonl",
        [{"instance_id": "one", "found_functions": [r.replace("::", ":") for r in ranked]}],
    )
    args = ["--dataset", str(dataset), "--granularity", "function", "--repos", str(trees)]
    proc = run("compare", str(base), str(colon), *args, "--format", "json", "--resamples", "50")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [r["overall"]["mrr"] for r in report["runs"]] == [0.5, 0.0]
    named = [w for w in report["warnings"] if w.startswith("colon.jsonl: ")]
    assert len(named) == 1 and "`path::Class.method`" in named[0], report["warnings"]
    assert '"shop/pricing.py:apply_discount"' in named[0]
    assert not any(w.startswith("base.jsonl: ") for w in report["warnings"])
    text = run("compare", str(base), str(colon), *args, "--resamples", "50")
    assert "warning: colon.jsonl: none of its function ids" in text.stdout, text.stdout
    # A run that finds no gold function but writes its ids as compared is not warned about.
    wrong = write(
        tmp_path / "wrong.jsonl",
        [{"instance_id": "one", "found_functions": ["shop/pricing.py::apply_discount"]}],
    )
    proc = run("compare", str(base), str(wrong), *args, "--format", "json", "--resamples", "50")
    assert not any("wrong.jsonl" in w for w in json.loads(proc.stdout)["warnings"]), proc.stdout


def test_unknown_ids_are_refused_and_runs_sharing_a_file_name_are_told_apart(
    tmp_path: Path,
) -> None:
    """Found by a review: `--ids` with an id the dataset lacks shrank the sample silently
    (eval, batch and calibrate refuse it), and `a/run.jsonl` against `b/run.jsonl` gave two
    runs named `run.jsonl`."""
    dataset, base, other = setup(tmp_path)
    typo = run("compare", str(base), str(other), "--dataset", str(dataset), "--ids", "r1,nope")
    assert typo.returncode == 1 and "not in" in typo.stderr and "nope" in typo.stderr
    for folder, source in (("a", base), ("b", other)):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "run.jsonl").write_bytes(source.read_bytes())
    args = [str(tmp_path / "a" / "run.jsonl"), str(tmp_path / "b" / "run.jsonl")]
    proc = run("compare", *args, "--dataset", str(dataset), "--format", "json", "--resamples", "50")
    assert proc.returncode == 0, proc.stderr
    names = [r["name"] for r in json.loads(proc.stdout)["runs"]]
    assert names == args, names


def test_names_from_the_dataset_cannot_forge_lines_of_the_text_report(tmp_path: Path) -> None:
    dataset, base, other = setup(tmp_path)
    rows = [json.loads(line) for line in dataset.read_text().splitlines()]
    for row in rows:
        row["repo"] = "o/m\nFORGED: every run MRR 1.000"
    write(dataset, rows)
    proc = run("compare", str(base), str(other), "--dataset", str(dataset), "--resamples", "100")
    assert proc.returncode == 0, proc.stderr
    assert not any(line.startswith("FORGED") for line in proc.stdout.splitlines()), proc.stdout
    assert "o/m\\x0aFORGED" in proc.stdout


def test_runs_whose_found_files_are_not_paths_are_named(tmp_path: Path) -> None:
    dataset, base, _ = setup(tmp_path)
    rows = [{"instance_id": i, "found_files": [f"{i}.py"]} for i in IDS]
    rows[0]["found_files"] = None
    del rows[1]["found_files"]
    lax = write(tmp_path / "lax.jsonl", rows)
    args = ["--dataset", str(dataset), "--resamples", "100", "--format", "json"]
    proc = run("compare", str(base), str(lax), *args)
    assert proc.returncode == 0, proc.stderr
    warnings = json.loads(proc.stdout)["warnings"]
    assert any("2 record(s) without a `found_files` list" in w for w in warnings), warnings
    rows[0]["found_files"] = [1, 2]
    bad = write(tmp_path / "bad.jsonl", rows)
    proc = run("compare", str(base), str(bad), *args)
    assert proc.returncode == 1 and "is not a list of paths" in proc.stderr, proc.stderr


def test_runs_are_told_apart_by_whole_names_and_a_run_of_another_dataset_is_refused(
    tmp_path: Path,
) -> None:
    """Found by a review: names past 28 characters were cut to the same text, a peer named as
    a run file was listed under that file's name, and a run with no line for any instance
    scored 0 without a word."""
    dataset, base, other = setup(tmp_path)
    long_a = tmp_path / "experiment_bm25_with_history_and_dense_v1.jsonl"
    long_b = tmp_path / "experiment_bm25_with_history_and_dense_v2.jsonl"
    long_a.write_bytes(base.read_bytes())
    long_b.write_bytes(other.read_bytes())
    proc = run("compare", str(long_a), str(long_b), "--dataset", str(dataset), "--resamples", "50")
    assert proc.returncode == 0, proc.stderr
    for name in (long_a.name, long_b.name):
        assert f"\n{name} " in proc.stdout and f"\n  {name} " in proc.stdout, proc.stdout
    peers = tmp_path / "peers.json"
    peers.write_text(json.dumps({"base.jsonl": {i: [f"{i}.py"] for i in IDS}}))
    proc = run(
        "compare", str(base), "--peers", str(peers), "--dataset", str(dataset), "--format", "json"
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert [r["name"] for r in report["runs"]] == ["base.jsonl", "peers:base.jsonl"]
    assert {d["run"] for d in report["differences"]} == {"peers:base.jsonl"}
    # A second review: a peer named `peers:base.jsonl` too, and one run file given twice.
    peers.write_text(
        json.dumps({n: {i: [f"{i}.py"] for i in IDS} for n in ("base.jsonl", "peers:base.jsonl")})
    )
    proc = run(
        "compare", str(base), str(base), "--peers", str(peers), "--dataset", str(dataset),
        "--format", "json",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    names = [r["name"] for r in json.loads(proc.stdout)["runs"]]
    assert names == [str(base), f"{base} #2", "base.jsonl", "peers:base.jsonl"]
    proc = run(
        "compare", str(base), "--peers", str(peers), "--dataset", str(dataset), "--format", "json"
    )
    names = [r["name"] for r in json.loads(proc.stdout)["runs"]]
    assert names == ["base.jsonl", "peers:base.jsonl", "peers:base.jsonl #2"]
    stranger = write(tmp_path / "stranger.jsonl", [{"instance_id": "zz", "found_files": ["a.py"]}])
    proc = run("compare", str(base), str(stranger), "--dataset", str(dataset))
    assert proc.returncode == 1, proc.stdout
    assert "stranger.jsonl has no line for any of the 12 instances compared" in proc.stderr
