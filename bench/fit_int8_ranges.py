#!/usr/bin/env python3
"""Measures the input ranges the int8 encoder smooths by, and writes them for blagent to ship.

    python bench/fit_int8_ranges.py TREE [TREE ...] --dataset DEV.jsonl \
        [--chunks 40] [--issues 60] [--model DIR] [--write PATH]

blagent's int8 linear layers (`rust/blagent-core/src/embed/vnni.rs`, AVX-512 VNNI) divide each
input channel by SmoothQuant's factor `sqrt(a_j / w_j)` before rounding the inputs to u8, where
`a_j` is the largest |input| the channel takes (docs/dense.md). This script runs the model's
forward pass in NumPy (`int8_feasibility.Bert`, f32) over calibration texts and records `a_j` for
every linear layer: `--chunks` code chunks spread over each TREE (every chunk of its non-test
Python files, taken at even steps) and the first `--issues` problem statements of the dataset
(what queries look like). Use development trees and the development set
(`swebench_verified_dev307.jsonl`), never the test set. Each layer also records the sum of its
weight, by which blagent tells that the ranges belong to the model it loaded.

Prints the texts used and how long the pass took; `--write` writes the JSON
(`rust/blagent-core/src/embed/int8_ranges.json` is what blagent ships): a new file or one of these
ranges, never the dataset nor a file in a TREE or the model folder (refused before the pass). Needs numpy, safetensors
and tokenizers next to the installed wheel; no PyTorch.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import safe_output
from encoder_bench import chunk_texts
from int8_feasibility import Bert, Variant

# blagent's name of each linear layer of a BERT block that runs in int8, and the Hugging Face
# weights it reads (the query, key and value projections share their input and run as one product
# in blagent). The feed-forward output layer stays in bf16: its input, GELU's output, rounds to u8
# with the most loss (docs/dense.md).
LAYERS = {
    "qkv": ("attention.self.query", "attention.self.key", "attention.self.value"),
    "attention_out": ("attention.output.dense",),
    "intermediate": ("intermediate.dense",),
}


def spread(texts: list[str], count: int) -> list[str]:
    """`count` texts at even steps through `texts`."""
    if len(texts) <= count:
        return texts
    step = len(texts) / count
    return [texts[int(i * step)] for i in range(count)]


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("trees", nargs="+", type=Path)
    ap.add_argument("--dataset", type=Path, required=True)
    ap.add_argument("--chunks", type=int, default=40, help="code chunks per tree")
    ap.add_argument("--issues", type=int, default=60)
    ap.add_argument("--model", type=Path)
    ap.add_argument("--write", type=Path)
    args = ap.parse_args()

    from blagent.models import default_model_dir

    model_dir = args.model or default_model_dir()
    if args.write:
        ours = safe_output.json_object_with("about", "model", "texts", "layers")
        holds = "int8 ranges: about, model, texts, layers"
        safe_output.check(args.write, ours, holds, [args.dataset], [*args.trees, model_dir])
    texts: list[str] = []
    for tree in args.trees:
        texts += spread(chunk_texts(tree, 100_000), args.chunks)
    with args.dataset.open() as rows:
        issues = [json.loads(line)["problem_statement"] for line in rows if line.strip()]
    texts += issues[: args.issues]
    began = time.perf_counter()
    bert = Bert(model_dir)
    bert.calibrating = True
    for text in texts:
        bert.embed(text, Variant())
    seconds = time.perf_counter() - began
    print(
        f"{len(texts)} texts ({len(texts) - len(issues[: args.issues])} chunks from "
        f"{len(args.trees)} trees, {len(issues[: args.issues])} issues) in {seconds:.0f} s"
    )

    layers = []
    for layer in range(bert.layers):
        prefix = f"encoder.layer.{layer}."
        entry = {}
        for name, sources in LAYERS.items():
            weight_sum = sum(
                float(bert.w[prefix + s + ".weight"].astype(np.float64).sum()) for s in sources
            )
            input_max = bert.input_max[prefix + sources[0]]
            entry[name] = {
                "weight_sum": weight_sum,
                "input_max": [float(f"{v:.4g}") for v in input_max],
            }
        layers.append(entry)
    ranges = {
        "about": "Largest |input| of each input channel of each linear layer, for the int8 "
        "encoder's SmoothQuant factors; written by bench/fit_int8_ranges.py",
        "model": model_dir.name,
        "texts": len(texts),
        "layers": layers,
    }
    if args.write:
        safe_output.write(args.write, json.dumps(ranges, separators=(",", ":")) + "\n")
        print(f"wrote {args.write} ({args.write.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
