#!/usr/bin/env python3
"""Index time, peak memory and query latency of the LLM-free localizer on one repository tree.

    python bench/index_bench.py TREE [--dataset ../shared/data/swebench_lite.jsonl] [--runs 3]
                                [--summaries [--cache-dir DIR]]

Prints walk / parse / index milliseconds (median of --runs fresh indexings), the process's peak
resident memory, and the median and p90 latency of queries answered from the built index, at
file level and at function level side by side (each issue asked at both, alternating), with the
ratio of the medians. With --summaries the function level compares each candidate's summary
with the title through the embedding model, its vectors cached in --cache-dir (default: a new
temporary folder, so the first queries embed every summary they meet). The
queries are the dataset's issue texts for the tree's repository when --dataset is given (the
repository is guessed from the tree's top-level package), else a fixed set of made-up reports.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import time

from blagent import Localizer

FALLBACK_ISSUES = [
    "TypeError: unsupported operand type(s) when calling the main entry point with None",
    "The `parse` function ignores the `strict` argument and accepts invalid input silently",
    'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\nValueError: invalid literal',
]


def issues_for(tree: str, dataset: str | None, limit: int) -> list[str]:
    if not dataset:
        return FALLBACK_ISSUES
    top = {name for name in os.listdir(tree) if os.path.isdir(os.path.join(tree, name))}
    picked = []
    with open(dataset) as fh:
        for line in fh:
            row = json.loads(line)
            package = row["repo"].split("/")[1].replace("-", "")
            if package in top or row["repo"].split("/")[1] in top:
                picked.append(row["problem_statement"])
    return picked[:limit] or FALLBACK_ISSUES


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("tree")
    ap.add_argument("--dataset")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--queries", type=int, default=50)
    ap.add_argument("--summaries", action="store_true", help="the `summary` feature on")
    ap.add_argument("--cache-dir", help="embedding cache for --summaries (default: a new one)")
    args = ap.parse_args()

    cache = args.cache_dir or tempfile.mkdtemp(prefix="blagent-cache-")
    localizer = Localizer(top_k=10, summaries=args.summaries, cache_dir=cache)
    stages: dict[str, list[float]] = {"walk_ms": [], "parse_ms": [], "index_ms": [], "total_ms": []}
    index = None
    for _ in range(args.runs):
        start = time.perf_counter()
        index = localizer.index(args.tree)
        total = (time.perf_counter() - start) * 1000
        timings = json.loads(index.timings_json())
        for key in ("walk_ms", "parse_ms", "index_ms"):
            stages[key].append(timings[key])
        stages["total_ms"].append(total)
    assert index is not None
    latencies: dict[str, list[float]] = {"file": [], "function": []}
    for issue in issues_for(args.tree, args.dataset, args.queries):
        for granularity, times in latencies.items():
            start = time.perf_counter()
            localizer.localize(index, issue, granularity=granularity)
            times.append((time.perf_counter() - start) * 1000)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"tree: {args.tree}" + ("  (function level with --summaries)" if args.summaries else ""))
    print(
        f"files: {index.num_files}  chunks: {index.num_chunks}  cores: {os.cpu_count()}  load: {os.getloadavg()[0]:.2f}"
    )
    import blagent

    if hasattr(blagent, "blas_status"):  # older wheels lack it
        blas = blagent.blas_status()
        print(f"CPU: {blas['vendor']} {' '.join(blas['flags'])}  OpenBLAS core: {blas['core']}")
    print(
        f"index (median of {args.runs}): "
        + "  ".join(f"{k} {statistics.median(v):.0f}" for k, v in stages.items())
    )
    for granularity, times in latencies.items():
        times.sort()
        p90 = times[int(0.9 * (len(times) - 1))]
        print(
            f"queries ({granularity}): {len(times)}  median {statistics.median(times):.1f} ms  p90 {p90:.1f} ms"
        )
    ratio = statistics.median(latencies["function"]) / statistics.median(latencies["file"])
    print(f"function / file query median: {ratio:.2f}x")
    print(f"peak RSS: {peak_mib:.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
