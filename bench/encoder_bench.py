#!/usr/bin/env python3
"""Encoder throughput: blagent's candle encoder next to sentence-transformers on PyTorch, on
the same code chunks, in one run.

    python bench/encoder_bench.py TREE [--chunks 256] [--threads 2] [--model DIR]

Chunks are the path-augmented AST chunks blagent indexes, taken from the first files of TREE.
Both engines truncate at the model's max_seq_length (256 for all-MiniLM-L6-v2) and use
--threads threads. Prints chunks/s for each engine and the ratio. Needs sentence-transformers
(and so PyTorch) in the environment; blagent itself never does.

Figures (256 django chunks, 2 threads, 256-token cap, a 2-core machine with load 1.7-2.0):
blagent 45.4 vs 39.4 chunks/s (1.15x) and 45.9 vs 37.5 (1.22x); per CPU second 1.17x and 1.24x.
The version before the OpenBLAS forward (`embed/blas.rs`) ran 30.7 vs 44.1 (0.70x) on the same
machine when quiet. For quick tuning without
Python: `cargo run --release --example encode_bench -- MODEL_DIR TEXTS.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path


def chunk_texts(tree: Path, limit: int) -> list[str]:
    from blagent import _core

    texts: list[str] = []
    for path in sorted(tree.rglob("*.py")):
        rel = path.relative_to(tree).as_posix()
        if any(part.startswith("test") for part in rel.split("/")):
            continue
        data = path.read_bytes()
        parsed = json.loads(_core.parse_source(rel, data.decode("utf-8", "replace")))
        raw = data.decode("utf-8", "replace").encode()
        for chunk in parsed["chunks"]:
            texts.append(f"# {rel}\n" + raw[chunk["start_byte"] : chunk["end_byte"]].decode("utf-8", "replace"))
            if len(texts) >= limit:
                return texts
    return texts


def rates(run, count: int) -> tuple[float, float]:
    """Chunks per wall-clock second and per CPU second (user + system) of one call of `run`;
    the second is less disturbed by other work on a shared machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return count / (time.perf_counter() - wall), count / (time.process_time() - cpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tree", type=Path)
    ap.add_argument("--chunks", type=int, default=256)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--model", type=Path)
    args = ap.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import torch
    from sentence_transformers import SentenceTransformer

    from blagent import _core
    from blagent.models import default_model_dir

    torch.set_num_threads(args.threads)
    model_dir = args.model or default_model_dir()
    texts = chunk_texts(args.tree, args.chunks)
    candle = _core.Encoder(str(model_dir))
    st = SentenceTransformer(str(model_dir), device="cpu")
    candle.embed(texts[:8])
    st.encode(texts[:8])

    candle_rate, candle_cpu = rates(lambda: candle.embed(texts), len(texts))
    st_rate, st_cpu = rates(lambda: st.encode(texts, batch_size=32), len(texts))
    print(f"chunks: {len(texts)} from {args.tree}  threads: {args.threads}  max_seq_length: {st.max_seq_length}")
    print("                               chunks/s  chunks per CPU second")
    print(f"blagent (candle):              {candle_rate:8.1f}  {candle_cpu:8.1f}")
    print(f"sentence-transformers (torch): {st_rate:8.1f}  {st_cpu:8.1f}")
    print(f"ratio candle / torch:          {candle_rate / st_rate:8.2f}x {candle_cpu / st_cpu:8.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
