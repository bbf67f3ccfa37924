#!/usr/bin/env python3
"""Encoder throughput: blagent's candle encoder next to sentence-transformers on PyTorch, on
the same code chunks, in one run.

    python bench/encoder_bench.py TREE [--chunks 256] [--threads 2] [--model DIR]

blagent runs in f32 and in each faster path the CPU can run: on AMX tiles (`bf16-amx`, its
default there), by AVX-512 BF16 dot products (`bf16-avx512`) and in int8 by AVX-512 VNNI
(`int8-avx512`, its default on CPUs with both and no AMX); the peer runs in f32 (its default) and cast
to bfloat16 (what a PyTorch user would do to reach AMX or AVX-512 BF16).

Chunks are the path-augmented AST chunks blagent indexes, taken from the first files of TREE.
Both engines truncate at the model's max_seq_length (256 for all-MiniLM-L6-v2) and use
--threads threads. Prints chunks/s for each engine and the ratio. Needs sentence-transformers
(and so PyTorch) in the environment; blagent itself never does.

Figures (256 django chunks, 2 threads, 256-token cap, no variable set, nothing else running): a
2-core Intel Xeon with AVX-512 and AMX, OpenBLAS core SkylakeX, two runs: blagent bf16-amx (its
default there) 109.8 and 110.7 chunks per CPU second, f32 30.6 and 30.8, torch f32 24.6 and 25.1,
torch cast to bfloat16 75.3 and 74.7 (blagent bf16 1.46x and 1.48x torch bf16, wall and CPU). A
2-core AMD EPYC Zen 4 with AVX-512 BF16 and VNNI, three runs (2026-12-05): blagent int8-avx512
(its default there) 97.7-101.4 chunks/s, bf16-avx512 76.9-79.0, f32 38.2-38.6, torch bf16
50.6-54.6 (int8 1.86x-1.93x wall and CPU). A
2-core AMD EPYC with AVX2, OpenBLAS core Zen chosen by itself (an earlier session): blagent f32
12.0, 11.7 and 12.2 chunks per CPU second against 7.5, 7.4 and 7.3 (1.60x, 1.58x, 1.67x), 97-102
GFLOP/s of an estimated 157 peak; with OPENBLAS_CORETYPE=Prescott (the fallback OpenBLAS 0.3.21
takes on CPUs it does not know) 0.36x, measured in an earlier session. For quick tuning without
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
            texts.append(
                f"# {rel}\n"
                + raw[chunk["start_byte"] : chunk["end_byte"]].decode("utf-8", "replace")
            )
            if len(texts) >= limit:
                return texts
    return texts


def rates(run, count: int) -> tuple[float, float]:
    """Chunks per wall-clock second and per CPU second (user + system) of one call of `run`;
    the second is less disturbed by other work on a shared machine."""
    wall, cpu = time.perf_counter(), time.process_time()
    run()
    return count / (time.perf_counter() - wall), count / (time.process_time() - cpu)


def flops_per_chunk(model_dir: Path, lengths: list[int]) -> float:
    """Multiply-add work of the forward pass, counted as 2 FLOPs each: the linear layers
    (2 x parameters x tokens) and attention's two products (4 x tokens^2 x hidden per layer)."""
    config = json.loads((model_dir / "config.json").read_text())
    hidden, layers, inner = (
        config["hidden_size"],
        config["num_hidden_layers"],
        config["intermediate_size"],
    )
    linear = 4 * hidden * hidden + 2 * hidden * inner
    total = sum(2 * linear * n * layers + 4 * n * n * hidden * layers for n in lengths)
    return total / len(lengths)


def peak_gflops(threads: int, flags: list[str]) -> tuple[float, str]:
    """The cores' single-precision FMA limit: 2 FMA units x lanes x 2 FLOPs x clock x threads.
    An estimate from the listed clock: a Zen 4 core does one 512-bit FMA a cycle, at a boost
    clock above the listed one (measured there: 58 GMAC/s per core, 232 GFLOP/s on 2 cores
    against the 332 estimated), so its percentages read low."""
    lanes = 16 if "avx512f" in flags else 8 if "fma" in flags else 4
    mhz = 0.0
    try:
        for line in Path("/proc/cpuinfo").read_text()[:65536].splitlines():
            if line.startswith("cpu MHz"):
                mhz = float(line.split(":")[1])
                break
    except (OSError, ValueError):
        pass
    return (
        2 * lanes * 2 * mhz * 1e-3 * threads,
        f"2 FMA x {lanes} lanes x 2 x {mhz:.0f} MHz x {threads}",
    )


def chunk_arguments(doc: str | None) -> argparse.ArgumentParser:
    """The arguments of the benches that read `chunk_texts`: TREE, --chunks, --model."""
    ap = argparse.ArgumentParser(
        description=doc, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("tree", type=Path)
    ap.add_argument("--chunks", type=int, default=256)
    ap.add_argument("--model", type=Path)
    return ap


def main() -> int:
    ap = chunk_arguments(__doc__)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    os.environ["RAYON_NUM_THREADS"] = str(args.threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import blagent
    import torch
    from blagent import _core
    from blagent.models import default_model_dir
    from sentence_transformers import SentenceTransformer

    torch.set_num_threads(args.threads)
    model_dir = args.model or default_model_dir()
    texts = chunk_texts(args.tree, args.chunks)
    encoders = {"f32": _core.Encoder(str(model_dir), precision="f32")}
    for precision in ("bf16-amx", "bf16-avx512", "int8-avx512"):
        try:
            encoders[precision] = _core.Encoder(str(model_dir), precision=precision)
        except _core.InputError as e:
            print(f"{precision}: not on this CPU ({e})")
    st = SentenceTransformer(str(model_dir), device="cpu")
    # The peer cast to bfloat16 by hand, as a user would to reach AMX through PyTorch.
    st_bf16 = SentenceTransformer(
        str(model_dir), device="cpu", model_kwargs={"torch_dtype": torch.bfloat16}
    )
    for encoder in encoders.values():
        encoder.embed(texts[:8])
    st.encode(texts[:8])
    st_bf16.encode(texts[:8])

    measured = {p: rates(lambda e=e: e.embed(texts), len(texts)) for p, e in encoders.items()}
    st_rate, st_cpu = rates(lambda: st.encode(texts, batch_size=32), len(texts))
    bf16_rate, bf16_cpu = rates(lambda: st_bf16.encode(texts, batch_size=32), len(texts))
    print(
        f"chunks: {len(texts)} from {args.tree}  threads: {args.threads}  max_seq_length: {st.max_seq_length}"
    )
    print(
        "                                 chunks/s  per CPU s   ratio to torch f32   to torch bf16 (wall, CPU)"
    )
    for precision, (rate, cpu) in measured.items():
        print(
            f"blagent ({precision:8}):            {rate:8.1f}  {cpu:8.1f}   {rate / st_rate:5.2f}x {cpu / st_cpu:5.2f}x"
            f"        {rate / bf16_rate:5.2f}x {cpu / bf16_cpu:5.2f}x"
        )
    print(f"sentence-transformers (torch):   {st_rate:8.1f}  {st_cpu:8.1f}")
    print(f"  the same cast to bfloat16:     {bf16_rate:8.1f}  {bf16_cpu:8.1f}")
    blas = blagent.blas_status()
    print(
        f"OpenBLAS core: {blas['core']}  (OPENBLAS_CORETYPE set by the user: {blas['user_set']}; "
        f"fallback: {blas['fallback']})  encoder by default: {blas['encoder_precision']}  "
        f"CPU: {blas['vendor']} {' '.join(blas['flags'])}"  # type: ignore[arg-type]
    )
    exact = encoders["f32"].embed(texts)
    for precision in encoders.keys() - {"f32"}:
        rounded = encoders[precision].embed(texts)
        cosines = [sum(a * b for a, b in zip(x, y)) for x, y in zip(exact, rounded)]
        print(
            f"{precision} against f32, cosine: min {min(cosines):.6f}, mean {sum(cosines) / len(cosines):.6f}"
        )
    lengths = [min(len(st.tokenizer(t)["input_ids"]), st.max_seq_length) for t in texts]
    work = flops_per_chunk(model_dir, lengths)
    peak, how = peak_gflops(args.threads, blas["flags"])  # type: ignore[arg-type]
    print(
        f"mean tokens per chunk: {sum(lengths) / len(lengths):.0f}  work: {work / 1e9:.2f} GFLOP per chunk"
    )
    for precision, (rate, _) in measured.items():
        print(
            f"blagent {precision}: {rate * work / 1e9:.1f} GFLOP/s; the f32 FMA peak is an estimated "
            f"{peak:.0f} ({how}): {rate * work / 1e9 / peak:.0%}"
            if peak
            else "peak unknown"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
