"""`blagent analyze-failures` over a generated-patch set with known answers: a small shop
repository, gold patches, and generated patches failing at every stage (fixtures made here)."""

from __future__ import annotations

import difflib
import json
from pathlib import Path
from typing import Any

import pytest
from test_cli import run

# The shop repository is shared with the Rust known-answer test (rust/blagent-core/tests/it/analysis.rs).
SHOP = (
    Path(__file__).resolve().parents[1]
    / "rust"
    / "blagent-core"
    / "tests"
    / "fixtures"
    / "analysis_shop"
    / "shop"
)
INIT, PRICING, INVENTORY, CART = (
    (SHOP / name).read_text() for name in ("__init__.py", "pricing.py", "inventory.py", "cart.py")
)

FILES = {
    "shop/__init__.py": INIT,
    "shop/pricing.py": PRICING,
    "shop/inventory.py": INVENTORY,
    "shop/cart.py": CART,
}

Edit = tuple[str, str, str]


def patch(edits: list[Edit]) -> str:
    """A git patch applying each (path, old text, new text) replacement."""
    out = ""
    for path, old_text, new_text in edits:
        old = FILES[path]
        new = old.replace(old_text, new_text, 1)
        assert new != old, path
        diff = difflib.unified_diff(
            old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"
        )
        out += f"diff --git a/{path} b/{path}\n" + "".join(diff)
    return out


DISCOUNT_FIX = [
    (
        "shop/pricing.py",
        "# percent is 0..100\n        factor = 1 - percent / 100",
        "# percent is clamped to 0..100\n        factor = 1 - min(percent, 100) / 100",
    )
]
AVERAGE_FIX = [
    ("shop/pricing.py", "average = total / count\n", "average = total / count if count else 0\n")
]
SHIPPING = [("shop/pricing.py", "taxed < 50", "taxed <= 50")]

# id: (gold edits, generated edits, found files, extra localization fields, expected stage)
CASES: dict[str, tuple[list[Edit], list[Edit], list[str], dict[str, Any], str]] = {
    "shop-resolved": (SHIPPING, SHIPPING, ["shop/pricing.py"], {}, "resolved"),
    "shop-file": (
        [
            (
                "shop/inventory.py",
                "if quantity > available:",
                "if quantity <= 0 or quantity > available:",
            )
        ],
        [("shop/cart.py", "self.items.append(item)", "self.items.append(item.copy())")],
        ["shop/cart.py", "shop/pricing.py", "shop/__init__.py", "shop/inventory.py"],
        {},
        "file",
    ),
    "shop-function": (
        DISCOUNT_FIX,
        [
            (
                "shop/pricing.py",
                "return round_price(taxed + shipping)",
                "return round_price(taxed) + shipping",
            )
        ],
        ["shop/pricing.py", "shop/cart.py"],
        {"found_related_locs": [["function: Pricer.total\nclass: Cart"], ["function: Cart.total"]]},
        "function",
    ),
    "shop-line": (
        AVERAGE_FIX,
        [("shop/pricing.py", 'lines = ["orders"]', 'lines = ["orders:"]')],
        ["shop/pricing.py"],
        {},
        "line",
    ),
    "shop-approx": (
        AVERAGE_FIX,
        [("shop/pricing.py", "first = total / count\n", "first = total / count if count else 0\n")],
        ["shop/pricing.py"],
        {"found_functions": ["shop/pricing.py::Pricer.report"]},
        "patch_generation",
    ),
    "shop-patchgen": (
        DISCOUNT_FIX,
        [("shop/pricing.py", "factor = 1 - percent / 100", "factor = 1 - percent / 1000")],
        ["shop/cart.py", "shop/pricing.py"],
        {},
        "patch_generation",
    ),
    "shop-empty": (DISCOUNT_FIX, [], ["shop/pricing.py"], {}, "empty_patch"),
}


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, Path]:
    for iid in CASES:
        for rel, text in FILES.items():
            file = tmp_path / "trees" / iid / rel
            file.parent.mkdir(parents=True, exist_ok=True)
            file.write_text(text)
    rows = [{"instance_id": i, "repo": "acme/shop", "patch": patch(c[0])} for i, c in CASES.items()]
    locs = [{"instance_id": i, "found_files": c[2], **c[3]} for i, c in CASES.items()]
    preds = [
        {"instance_id": i, "model_name_or_path": "fake", "model_patch": patch(c[1])}
        for i, c in CASES.items()
    ]
    outcome = {"resolved": "resolved", "empty_patch": "empty_patch"}
    report: dict[str, list[str]] = {"resolved": [], "unresolved": [], "empty_patch": []}
    for iid, case in CASES.items():
        report[outcome.get(case[4], "unresolved")].append(iid)
    (tmp_path / "report.json").write_text(json.dumps(report))
    return {
        "dataset": write_jsonl(tmp_path / "lite.jsonl", rows),
        "locs": write_jsonl(tmp_path / "locs.jsonl", locs),
        "predictions": write_jsonl(tmp_path / "preds.jsonl", preds),
        "report": tmp_path / "report.json",
        "repos": tmp_path / "trees",
    }


def analyze(inputs: dict[str, Path], *extra: str) -> Any:
    args = [f"--{k}={v}" for k, v in inputs.items()]
    return run("analyze-failures", *args, *extra)


def test_every_stage_of_the_known_answer_set(inputs: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = analyze(inputs, "--out-dir", str(out))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary["warnings"] == []
    counts = {s["stage"]: s["count"] for s in summary["summary"]["stages"]}
    assert counts == {
        "file": 1,
        "function": 1,
        "line": 1,
        "patch_generation": 2,
        "localized": 0,
        "unclassified": 0,
        "empty_patch": 1,
        "resolved": 1,
    }
    assert summary["summary"]["function_rule"] == "any" and summary["summary"]["evaluated"] is True
    assert summary["summary"]["unresolved"] == 5
    for iid, case in CASES.items():
        instance = json.loads((out / "instances" / f"{iid}.json").read_text())
        assert instance["stage"] == case[4], (iid, instance)
    approx = json.loads((out / "instances" / "shop-approx.json").read_text())
    assert approx["line"]["verdict"] == "approximate"
    assert approx["line"]["similarity"] >= 0.6
    assert approx["line"]["gold"]["text"] == "average = total / count"
    patchgen = json.loads((out / "instances" / "shop-patchgen.json").read_text())
    assert patchgen["line"]["gold"]["text"] == "factor = 1 - percent / 100", "comment skipped"
    function = json.loads((out / "instances" / "shop-function.json").read_text())["function"]
    assert function["missing"] == ["shop/pricing.py::Pricer.discount"]
    assert function["edited"] == ["shop/pricing.py::Pricer.total"]
    md = (out / "summary.md").read_text()
    assert "| patch generation | 2 | 40.0% |" in md
    assert "| resolved | 1 | 14.3% |" in md
    assert (out / "chart.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert (out / "chart.svg").read_text().startswith("<svg")
    assert sorted(Path(p).name for p in summary["outputs"]) == [
        "chart.png",
        "chart.svg",
        "summary.json",
        "summary.md",
    ]


def test_top_k_decides_the_file_stage(inputs: dict[str, Path]) -> None:
    proc = analyze(inputs, "--top-k", "4")
    counts = {s["stage"]: s["count"] for s in json.loads(proc.stdout)["summary"]["stages"]}
    assert counts["file"] == 0
    assert counts["function"] == 2


def test_without_a_report_the_localization_stages_of_every_instance(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    del inputs["report"]
    proc = analyze(inputs, "--out-dir", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["summary"]
    counts = {s["stage"]: s["count"] for s in summary["stages"]}
    # The resolved instance and the two patch-generation ones passed file, function and line.
    assert counts == {
        "file": 1,
        "function": 1,
        "line": 1,
        "patch_generation": 0,
        "localized": 3,
        "unclassified": 0,
        "empty_patch": 1,
        "resolved": 0,
    }
    assert summary["evaluated"] is False
    everyone = sum(counts.values())
    assert all(abs(s["percent"] - 100 * s["count"] / everyone) < 1e-9 for s in summary["stages"]), (
        "shares of all"
    )
    assert (
        "no evaluation report: the localization stages of every instance"
        in (tmp_path / "out" / "summary.md").read_text()
    )


def test_all_gold_functions_is_the_stricter_reading(inputs: dict[str, Path]) -> None:
    proc = analyze(inputs, "--function-rule", "all")
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)["summary"]
    assert summary["function_rule"] == "all"
    assert "every gold function" in summary["function_criterion"]


def test_missing_trees_are_said_and_the_rest_classified(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    (tmp_path / "no_trees").mkdir()
    inputs["repos"] = tmp_path / "no_trees"
    proc = analyze(inputs, "--out-dir", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["summary"]["missing_trees"] == len(CASES)
    file_stage = json.loads((tmp_path / "out" / "instances" / "shop-file.json").read_text())
    assert file_stage["stage"] == "file"
    assert any("base tree not found" in n for n in file_stage["notes"])


def test_unknown_prediction_and_unparsable_patch_are_warnings(
    inputs: dict[str, Path], tmp_path: Path
) -> None:
    lines = inputs["predictions"].read_text().splitlines()
    lines = [line.replace("@@ -", "@@ -x") if "shop-approx" in line else line for line in lines]
    lines.append(json.dumps({"instance_id": "ghost-1", "model_patch": ""}))
    inputs["predictions"].write_text("\n".join(lines) + "\n")
    proc = analyze(inputs, "--out-dir", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    assert "unknown instance ghost-1" in proc.stderr
    approx = json.loads((tmp_path / "out" / "instances" / "shop-approx.json").read_text())
    assert approx["stage"] == "patch_generation"
    assert any("generated patch does not parse" in n for n in approx["notes"])


def test_bad_input_exits_1(inputs: dict[str, Path], tmp_path: Path) -> None:
    locs = inputs["locs"]
    locs.write_text(locs.read_text() + "{not json\n")
    proc = analyze(inputs)
    assert proc.returncode == 1
    assert f"locs.jsonl:{len(CASES) + 1}" in proc.stderr
    assert proc.stdout == ""

    inputs["locs"] = write_jsonl(tmp_path / "ok.jsonl", [])
    inputs["report"].write_text('{"resolved": 7}')
    proc = analyze(inputs)
    assert proc.returncode == 1
    assert "list of instance ids" in proc.stderr
    # Found by a review: a report that names an outcome twice was read as its last list.
    inputs["report"].write_text('{"resolved": [], "resolved": ["x"]}')
    proc = analyze(inputs)
    assert proc.returncode == 1 and "duplicate key `resolved`" in proc.stderr, proc.stderr

    inputs["report"] = tmp_path / "missing.json"
    assert analyze(inputs).returncode == 1
    assert run("analyze-failures", "--dataset", "x").returncode == 2
    assert run("analyze-failures", "--help").returncode == 0
