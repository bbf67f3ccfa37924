#!/usr/bin/env python3
"""Fit the function-level weights from a signal dump, with k-fold cross-validation.

    blagent eval --dataset ../shared/data/swebench_verified_dev307.jsonl --repos TREES \
        --granularity function --signals-out fn_signals.jsonl --quiet
    python bench/fit_function_weights.py fn_signals.jsonl \
        --write rust/blagent-core/src/retrieve/functions/weights.json [--free line_link]

Mirrors `rust/blagent-core/src/retrieve/functions/`: a function's score is the weighted sum of
its features, candidates are ranked by score (ties: the better file, then the earlier symbol,
which is the dump's order), a name defined twice in a file counts once at its best row, and
at most MAX_FUNCTIONS are listed. The fit is a coordinate ascent over a grid of weights
(file_score fixed at 1, since only the order matters) on
MRR + (any@1 + any@5 + any@10) / 3. It prints the shipped weights and the fitted ones, each
cross-validated (fit on k-1 folds, scored on the held-out fold), and with --write stores the
weights fitted on every instance: a new file, or one that holds a weights JSON (`version`,
`weights` of numbers), never the signal dump under any name (refused before the fit). Pure
Python; a fit on 300 instances takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

import safe_output

MAX_FUNCTIONS = 50
KS = (1, 3, 5, 10)
GRID = [0.0, 0.05, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 5.0]
ANCHOR = "file_score"
# A step must gain this much of the objective to be taken (about one instance's rank moving
# from 2 to 1 in 300): smaller gains are noise that cross-validation does not confirm.
MIN_GAIN = 0.002


class Instance:
    """One instance's candidates: feature rows, their ids and which ids are gold."""

    def __init__(self, row: dict[str, Any]) -> None:
        fn = row["functions"]
        self.id = row["instance_id"]
        self.repo = row.get("repo", "")
        self.names: list[str] = fn["feature_names"]
        gold = set(fn["gold"])
        self.n_gold = len(gold)
        candidates = fn["candidates"]
        rows = [c["features"] for c in candidates]
        gold_rows = [i for i, c in enumerate(candidates) if c["id"] in gold]
        self.all_gold_listed = len({candidates[i]["id"] for i in gold_rows}) == len(gold)

        # With weights ≥ 0, a row no higher than every gold row in every feature, and after
        # them, never outranks one: it is dropped. Rows are kept sparse (index, value).
        def dominated(i: int) -> bool:
            return all(g < i and all(a <= b for a, b in zip(rows[i], rows[g])) for g in gold_rows)

        keep = [i for i in range(len(rows)) if i in gold_rows or not dominated(i)]
        self.rows = [[(j, x) for j, x in enumerate(rows[i]) if x] for i in keep]
        # A name defined twice in a file (getter and setter, overloads) is one entity, ranked
        # where its best row is: rows carry their id's number, and gold is grouped by id.
        numbers: dict[str, int] = {}
        self.ids = [numbers.setdefault(candidates[i]["id"], len(numbers)) for i in keep]
        by_id: dict[int, list[int]] = {}
        for at, i in enumerate(keep):
            if i in gold_rows:
                by_id.setdefault(self.ids[at], []).append(at)
        self.gold = list(by_id.values())


def is_weights(data: bytes) -> bool:
    """Whether `data` is a weights JSON as --write writes it: `version` and `weights`, an
    object of numbers."""
    try:
        obj = json.loads(data)
    except (ValueError, RecursionError):
        return False
    weights = obj.get("weights") if isinstance(obj, dict) else None
    return (
        "version" in obj
        and isinstance(weights, dict)
        and all(isinstance(v, int | float) and not isinstance(v, bool) for v in weights.values())
    )


def load(path: str) -> list[Instance]:
    out = []
    with open(path) as f:
        for line in f:
            row = json.loads(line)
            if "functions" in row and row["functions"]["gold"]:
                out.append(Instance(row))
    return out


def ranks(inst: Instance, w: list[float]) -> list[int]:
    """1-based ranks of the gold ids under weights `w`: rows by score (ties to the earlier
    row), each id counted once, at its best row."""
    if not inst.gold:
        return []
    scores = [sum(w[j] * x for j, x in r) for r in inst.rows]
    out = []
    for rows in inst.gold:
        g = min(rows, key=lambda i: (-scores[i], i))
        s = scores[g]
        ahead = {inst.ids[j] for j, t in enumerate(scores) if t > s or (t == s and j < g)}
        out.append(1 + len(ahead))
    return out


def metrics(data: list[Instance], w: list[float]) -> dict[str, float]:
    n = max(len(data), 1)
    m = {"mrr": 0.0, **{f"any@{k}": 0.0 for k in KS}, **{f"all@{k}": 0.0 for k in KS}}
    for inst in data:
        r = [x for x in ranks(inst, w) if x <= MAX_FUNCTIONS]
        if not r:
            continue
        m["mrr"] += 1.0 / min(r)
        for k in KS:
            m[f"any@{k}"] += min(r) <= k
            m[f"all@{k}"] += inst.all_gold_listed and len(r) == inst.n_gold and max(r) <= k
    return {k: v / n for k, v in m.items()}


def objective(m: dict[str, float]) -> float:
    return m["mrr"] + (m["any@1"] + m["any@5"] + m["any@10"]) / 3


def fit(
    data: list[Instance], start: list[float], names: list[str], free: set[str] | None = None
) -> list[float]:
    """Coordinate ascent from `start`; only the weights named in `free` move (all but the
    anchor when None)."""
    w = list(start)
    best = objective(metrics(data, w))
    for _ in range(4):
        improved = False
        for j, name in enumerate(names):
            if name == ANCHOR or (free is not None and name not in free):
                continue
            for value in GRID:
                if value == w[j]:
                    continue
                trial = [*w[:j], value, *w[j + 1 :]]
                score = objective(metrics(data, trial))
                if score > best + MIN_GAIN:
                    best, w, improved = score, trial, True
        if not improved:
            break
    return w


def folds(data: list[Instance], k: int, seed: int) -> list[list[Instance]]:
    order = list(data)
    random.Random(seed).shuffle(order)
    return [order[i::k] for i in range(k)]


def cross_validate(
    data, start, names, k, seed, free=None
) -> tuple[dict[str, float], list[list[float]]]:
    parts = folds(data, k, seed)
    total: dict[str, float] = {}
    fitted = []
    for i, held in enumerate(parts):
        train = [x for j, p in enumerate(parts) if j != i for x in p]
        w = fit(train, start, names, free)
        fitted.append(w)
        for key, v in metrics(held, w).items():
            total[key] = total.get(key, 0.0) + v * len(held)
    return {key: v / len(data) for key, v in total.items()}, fitted


def show(label: str, m: dict[str, float]) -> None:
    cells = "  ".join(f"{k} {v:.3f}" for k, v in m.items())
    print(f"{label:<28} {cells}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("signals", help="signal dump of `blagent eval --granularity function`")
    parser.add_argument(
        "--weights", default="rust/blagent-core/src/retrieve/functions/weights.json"
    )
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--write", help="write the weights fitted on every instance here")
    parser.add_argument(
        "--free",
        help="comma-separated weights to fit, the others held at --weights' (default: all)",
    )
    args = parser.parse_args()
    free = set(args.free.split(",")) if args.free else None
    if args.write:
        holds = "a weights JSON: version, weights"
        safe_output.check(Path(args.write), is_weights, holds, inputs=[Path(args.signals)])
    data = load(args.signals)
    if not data:
        raise SystemExit("no instance with gold functions and a function dump")
    names = data[0].names
    with open(args.weights) as f:
        shipped_file = json.load(f)
    shipped = [float(shipped_file["weights"].get(n, 0.0)) for n in names]
    print(f"{len(data)} instances with gold functions")
    show("shipped (in-sample)", metrics(data, shipped))
    for j, name in enumerate(names):
        alone = [1.0 if i == j else 0.0 for i in range(len(names))]
        show(f"  {name} alone", metrics(data, alone))
    started = time.time()
    if free is not None and not free <= set(names):
        raise SystemExit(f"--free: not in the dump: {sorted(free - set(names))}")
    cv, fitted = cross_validate(data, shipped, names, args.folds, args.seed, free)
    show(f"fitted, {args.folds}-fold CV", cv)
    final = fit(data, shipped, names, free)
    show("fitted on all (in-sample)", metrics(data, final))
    print(f"fit time: {time.time() - started:.0f} s for {args.folds + 1} fits")
    for j, name in enumerate(names):
        per_fold = " ".join(f"{w[j]:g}" for w in fitted)
        print(f"  {name:<14} {final[j]:<6g} (folds: {per_fold})")
    if args.write:
        note = (
            f"coordinate ascent on {len(data)} instances of {args.signals.rsplit('/', 1)[-1]} "
            f"(bench/fit_function_weights.py); {args.folds}-fold CV: "
            + ", ".join(f"{k} {v:.3f}" for k, v in cv.items() if k == "mrr" or k.startswith("any"))
        )
        out = {
            "version": int(shipped_file.get("version", 0)) + 1,
            "note": note,
            "weights": {n: final[j] for j, n in enumerate(names)},
        }
        safe_output.write(Path(args.write), json.dumps(out, indent=2) + "\n")
        print(f"wrote {args.write}")


if __name__ == "__main__":
    main()
