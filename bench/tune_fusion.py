#!/usr/bin/env python3
"""Tune the fusion weights offline from a signal dump, with a held-out check.

    blagent eval --dataset D --repos R --signals-out signals.jsonl
    python bench/tune_fusion.py signals.jsonl --holdout ../shared/data/lite_sample100.txt
    python bench/tune_fusion.py dev307.jsonl lca52.jsonl --only names_issue,names_title --folds 5

Mirrors `rust/blagent-core/src/retrieve/fuse.rs`: BM25 signals are divided by the query's best
score, dense cosines min-max scaled over the files they retrieved, the others capped at 1, and
the fused score is their weighted sum, times `1 - unimplemented * share` where `unimplemented`
is the share of a file's functions without a body (its weight is that factor's, at most 1; dumps
of builds before it have none, so it leaves them as they were). Prints each signal
alone, the current weights, and the weights a coordinate ascent finds on the instances outside
the held-out list, scored on both parts — so a weight is kept only if it holds on unseen data.
With --folds K it cross-validates instead: each of K folds (a seeded shuffle of the instances of
every dump given) is scored with the weights tuned on the other K-1.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import Any

from fit_function_weights import folds

SIGNALS = [
    "bm25_file", "bm25_chunk", "title_file", "title_chunk", "path_mention", "module_mention",
    "stack_frame", "definition", "error_message", "dense_issue", "dense_structural", "dense_behavioral",
    "names_issue", "names_title", "history_title", "unimplemented",
]  # fmt: skip
# Not a part of the sum: the share of it a file loses (`fuse.rs`'s `implemented`).
FACTOR = SIGNALS.index("unimplemented")
LEXICAL = {
    SIGNALS.index(name)
    for name in (
        "bm25_file",
        "bm25_chunk",
        "title_file",
        "title_chunk",
        "names_issue",
        "names_title",
        "history_title",
    )
}
DENSE = {SIGNALS.index(name) for name in ("dense_issue", "dense_structural", "dense_behavioral")}
GRID = [0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0]


def load(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in open(path)]


def scale(i: int, v: float, lo: float, hi: float) -> float:
    if v <= 0 or hi <= 0:
        return 0.0
    if i in LEXICAL:
        return v / hi
    if i in DENSE:
        return (v - lo) / (hi - lo) if hi > lo else 1.0
    return min(v, 1.0)


def normalized(inst: dict[str, Any]) -> tuple[list[list[float]], list[bool]]:
    mx = inst["max"]
    mn = inst.get("min") or [0.0] * len(mx)
    rows, gold = [], []
    for f in inst["files"]:
        scores = (f["scores"] + [0.0] * len(SIGNALS))[: len(SIGNALS)]
        rows.append(
            [
                scale(i, v, mn[i] if i < len(mn) else 0.0, mx[i] if i < len(mx) else 0.0)
                for i, v in enumerate(scores)
            ]
        )
        gold.append(f["path"] in inst["gold"])
    return rows, gold


RRF_K = 60


def reciprocal_ranks(rows: list[list[float]]) -> list[list[float]]:
    """Each file's 1 / (RRF_K + rank) per signal (0 where the signal did not fire)."""
    out = [[0.0] * len(SIGNALS) for _ in rows]
    for s in range(len(SIGNALS)):
        if s == FACTOR:
            for i, r in enumerate(rows):
                out[i][s] = r[s]
            continue
        order = sorted((i for i, r in enumerate(rows) if r[s] > 0), key=lambda i: -rows[i][s])
        for rank, i in enumerate(order, 1):
            out[i][s] = 1.0 / (RRF_K + rank)
    return out


def fused(w: list[float], row: list[float]) -> float:
    """The weighted sum of a file's signals, scaled down by its unimplemented share."""
    total = sum(wi * xi for i, (wi, xi) in enumerate(zip(w, row)) if i != FACTOR)
    return total * (1.0 - min(max(w[FACTOR], 0.0), 1.0) * min(row[FACTOR], 1.0))


def metrics(data: list[tuple[list[list[float]], list[bool]]], w: list[float]) -> dict[str, float]:
    mrr = a1 = a5 = a10 = 0.0
    for rows, gold in data:
        scores = [fused(w, row) for row in rows]
        best_gold = max((s for s, g in zip(scores, gold) if g), default=-math.inf)
        if best_gold <= 0:
            continue
        rank = 1 + sum(1 for s, g in zip(scores, gold) if s > best_gold and not g)
        mrr += 1 / rank
        a1 += rank <= 1
        a5 += rank <= 5
        a10 += rank <= 10
    n = max(len(data), 1)
    return {"mrr": mrr / n, "acc1": a1 / n, "acc5": a5 / n, "acc10": a10 / n}


def objective(m: dict[str, float]) -> float:
    return m["mrr"] + 0.5 * m["acc10"]


def fmt(m: dict[str, float]) -> str:
    return (
        f"MRR {m['mrr']:.3f}  Acc@1 {m['acc1']:.3f}  Acc@5 {m['acc5']:.3f}  Acc@10 {m['acc10']:.3f}"
    )


def ascend(data, start: list[float], free: list[int], rounds: int = 4) -> list[float]:
    w = list(start)
    best = objective(metrics(data, w))
    for _ in range(rounds):
        improved = False
        for i in free:
            for v in GRID:
                trial = [*w[:i], v, *w[i + 1 :]]
                score = objective(metrics(data, trial))
                if score > best + 1e-9:
                    best, w, improved = score, trial, True
        if not improved:
            break
    return w


def cross_validate(data, current: list[float], free: list[int], k: int, seed: int) -> None:
    """Prints the held-out metrics of weights tuned on the other folds, and each fold's."""
    parts = folds(data, k, seed)
    total = {"mrr": 0.0, "acc1": 0.0, "acc5": 0.0, "acc10": 0.0}
    for i, held in enumerate(parts):
        train = [x for f, part in enumerate(parts) if f != i for x in part]
        tuned = ascend(train, current, free)
        for key, value in metrics(held, tuned).items():
            total[key] += value * len(held)
        print(f"  fold {i + 1}:", ", ".join(f"{SIGNALS[j]} {tuned[j]:g}" for j in free))
    cv = {key: value / max(len(data), 1) for key, value in total.items()}
    print(f"{k}-fold cross-validated: {fmt(cv)}   (current: {fmt(metrics(data, current))})")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("signals", nargs="+", help="signal dumps, read as one set")
    ap.add_argument("--holdout", help="file of instance ids held out from tuning")
    ap.add_argument("--folds", type=int, help="K-fold cross-validation instead of --holdout")
    ap.add_argument("--seed", type=int, default=0, help="the folds' shuffle (with --folds)")
    ap.add_argument(
        "--weights", help="JSON object of the current weights (default: blagent's defaults)"
    )
    ap.add_argument(
        "--rrf", action="store_true", help="weighted reciprocal-rank fusion instead of score mixing"
    )
    ap.add_argument(
        "--only",
        help="comma-separated signals to tune (default: all); the others keep their weights",
    )
    args = ap.parse_args()
    free = (
        [SIGNALS.index(n) for n in args.only.split(",")] if args.only else list(range(len(SIGNALS)))
    )

    insts = [inst for path in args.signals for inst in load(path)]
    held = set(open(args.holdout).read().split()) if args.holdout else set()

    def view(inst: dict[str, Any]) -> tuple[list[list[float]], list[bool]]:
        rows, gold = normalized(inst)
        return (reciprocal_ranks(rows), gold) if args.rrf else (rows, gold)

    tune = [view(i) for i in insts if i["instance_id"] not in held]
    test = [view(i) for i in insts if i["instance_id"] in held]
    everything = tune + test
    print(f"instances: {len(everything)} (tune {len(tune)}, held out {len(test)})")
    for i, name in enumerate(SIGNALS):
        if i == FACTOR:
            continue
        w = [0.0] * len(SIGNALS)
        w[i] = 1.0
        print(f"  {name:<15} alone: {fmt(metrics(everything, w))}")
    if args.weights:
        given = json.loads(args.weights)
    else:
        from blagent import default_weights

        given = default_weights()
    current = [given.get(n, 0.0) for n in SIGNALS]
    print(f"current weights: {fmt(metrics(everything, current))}")
    if args.folds:
        cross_validate(everything, current, free, args.folds, args.seed)
        return
    tuned = ascend(tune or everything, current, free)
    print("tuned weights:", json.dumps(dict(zip(SIGNALS, tuned))))
    print(
        f"  on tuning set: {fmt(metrics(tune, tuned))}   (current: {fmt(metrics(tune, current))})"
    )
    if test:
        print(
            f"  on held out:   {fmt(metrics(test, tuned))}   (current: {fmt(metrics(test, current))})"
        )
    print(f"  on all:        {fmt(metrics(everything, tuned))}")


if __name__ == "__main__":
    main()
