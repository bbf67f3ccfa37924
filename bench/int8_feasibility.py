#!/usr/bin/env python3
"""Would int8 linear layers keep the encoder's vectors? A numerical study before any kernel.

    python bench/int8_feasibility.py TREE [--chunks 256] [--calibration 64] [--model DIR]

The next factor of encoder speed on CPUs without AMX has to come from less arithmetic per token
(docs/dense.md): int8 dot products (`vpdpbusd`, AVX-512 VNNI or AVX-VNNI) do twice the
multiply-adds of `vdpbf16ps` per instruction. They multiply unsigned 8-bit activations by signed
8-bit weights, so a layer's input would be quantized per row (per token) with a zero point, and
its weights per output channel. This script runs the model's forward pass in NumPy, from the
model folder's safetensors, with each linear layer's product computed as such a kernel would
round it, and prints the cosine of each variant's vectors to blagent's own f32 vectors on the
same chunks as `encoder_bench.py` (the issue's bar is 0.999). The first row, NumPy in f32, checks
the forward pass itself; the bf16 row should come close to the cosine `encoder_bench.py` prints
for blagent's bf16 paths (it rounds only the products' inputs, not attention or GELU).

Variants: every linear layer in bf16; in int8 with symmetric per-row activations; with
asymmetric (u8) per-row activations; the same with the feed-forward output layer (whose input,
GELU's output, has the widest range) left in bf16; and SmoothQuant (alpha 0.5: each input channel
divided by sqrt(its activation maximum / its weight maximum), the weights multiplied back),
its activation maxima taken from `--calibration` further chunks that are not measured.

Needs numpy, safetensors and tokenizers next to the installed wheel; no PyTorch.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from encoder_bench import chunk_arguments, chunk_texts


@dataclasses.dataclass(frozen=True)
class Variant:
    """How each of a BERT block's four linear layers rounds its product's inputs: "f32" (not at
    all), "bf16", "sym" (int8, symmetric rows) or "u8" (int8 with u8 rows); with `smooth`, the
    SmoothQuant alpha applied before int8 rounding (0: none)."""

    qkv: str = "f32"  # attention's input projections (query, key, value)
    out: str = "f32"  # attention's output
    up: str = "f32"  # the feed-forward pair
    down: str = "f32"
    smooth: float = 0.0


VARIANTS = {
    "NumPy f32 (the check)": Variant(),
    "bf16, every layer": Variant("bf16", "bf16", "bf16", "bf16"),
    "int8, symmetric rows": Variant("sym", "sym", "sym", "sym"),
    "int8, u8 rows": Variant("u8", "u8", "u8", "u8"),
    "int8, u8 rows, FFN output bf16": Variant("u8", "u8", "u8", "bf16"),
    "int8, u8 rows, SmoothQuant 0.5": Variant("u8", "u8", "u8", "u8", smooth=0.5),
}


def to_bf16(x: np.ndarray) -> np.ndarray:
    """Rounds f32 to the nearest bf16, ties to even (as `vcvtneps2bf16`)."""
    bits = x.astype(np.float32).view(np.uint32)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def quantize_rows(x: np.ndarray, how: str) -> np.ndarray:
    """Each row rounded to 255 levels: symmetric around 0, or spanning [min, max] (u8 with a
    zero point, what `vpdpbusd` takes)."""
    if how == "sym":
        scale = np.abs(x).max(-1, keepdims=True) / 127 + 1e-12
        return np.round(x / scale).clip(-127, 127) * scale
    low, high = x.min(-1, keepdims=True), x.max(-1, keepdims=True)
    scale = (high - low) / 255 + 1e-12
    zero = np.round(-low / scale)
    return (np.round(x / scale + zero).clip(0, 255) - zero) * scale


def quantize_channels(w: np.ndarray) -> np.ndarray:
    """Each output channel (row of the weight) rounded to symmetric int8."""
    scale = np.abs(w).max(1, keepdims=True) / 127 + 1e-12
    return np.round(w / scale).clip(-127, 127) * scale


def erf(x: np.ndarray) -> np.ndarray:
    """erf to about 1e-7 (Abramowitz and Stegun 7.1.26), far below f32 GELU's own error."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1 / (1 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1 - poly * np.exp(-a * a))


def layer_norm(x: np.ndarray, gain: np.ndarray, bias: np.ndarray, eps: float) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gain + bias


class Bert:
    """all-MiniLM-L6-v2's forward pass (any BERT with absolute positions), mean-pooled and
    normalized, with each linear layer's arithmetic chosen per variant."""

    def __init__(self, model_dir: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        config = json.loads((model_dir / "config.json").read_text())
        self.layers = config["num_hidden_layers"]
        self.heads = config["num_attention_heads"]
        self.eps = config.get("layer_norm_eps", 1e-12)
        weights = load_file(str(model_dir / "model.safetensors"))
        self.w = {k.removeprefix("bert."): v.astype(np.float32) for k, v in weights.items()}
        self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        st_config = model_dir / "sentence_bert_config.json"
        cap = json.loads(st_config.read_text())["max_seq_length"] if st_config.is_file() else 256
        self.tokenizer.enable_truncation(cap)
        self.tokenizer.no_padding()
        # Per layer name: the largest |input| of each channel over the calibration chunks.
        self.input_max: dict[str, np.ndarray] = {}
        self.calibrating = False

    def linear(self, x: np.ndarray, name: str, how: str, smooth: float) -> np.ndarray:
        """`x @ weightᵀ + bias` with the inputs rounded `how` (see `Variant`)."""
        w, b = self.w[name + ".weight"], self.w[name + ".bias"]
        if self.calibrating:
            seen = np.abs(x).max(0)
            self.input_max[name] = np.maximum(self.input_max.get(name, seen), seen)
        if how == "bf16":
            return to_bf16(x) @ to_bf16(w).T + b
        if how in ("sym", "u8"):
            if smooth:
                act = np.maximum(self.input_max[name], 1e-5)
                wmax = np.maximum(np.abs(w).max(0), 1e-5)
                s = act**smooth / wmax ** (1 - smooth)
                x, w = x / s, w * s
            return quantize_rows(x, how) @ quantize_channels(w).T + b
        return x @ w.T + b

    def embed(self, text: str, variant: Variant) -> np.ndarray:
        ids = self.tokenizer.encode(text).ids
        n, w = len(ids), self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:n]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = layer_norm(
            x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps
        )
        hidden = x.shape[1]
        head = hidden // self.heads
        for layer in range(self.layers):
            p = f"encoder.layer.{layer}."
            q, k, v = (
                self.linear(x, p + "attention.self." + name, variant.qkv, variant.smooth)
                .reshape(n, self.heads, head)
                .transpose(1, 0, 2)
                for name in ("query", "key", "value")
            )
            scores = q @ k.transpose(0, 2, 1) / math.sqrt(head)
            scores = np.exp(scores - scores.max(-1, keepdims=True))
            scores /= scores.sum(-1, keepdims=True)
            context = (scores @ v).transpose(1, 0, 2).reshape(n, hidden)
            out = self.linear(context, p + "attention.output.dense", variant.out, variant.smooth)
            x = layer_norm(
                out + x,
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
                self.eps,
            )
            h = self.linear(x, p + "intermediate.dense", variant.up, variant.smooth)
            h = 0.5 * h * (1 + erf(h / math.sqrt(2)))
            h = self.linear(h, p + "output.dense", variant.down, variant.smooth)
            x = layer_norm(
                h + x, w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], self.eps
            )
        pooled = x.mean(0)
        return pooled / np.linalg.norm(pooled)


def main() -> int:
    ap = chunk_arguments(__doc__)
    ap.add_argument("--calibration", type=int, default=64)
    args = ap.parse_args()
    os.environ.setdefault("RAYON_NUM_THREADS", "2")

    from blagent import _core
    from blagent.models import default_model_dir

    model_dir = args.model or default_model_dir()
    texts = chunk_texts(args.tree, args.chunks + args.calibration)
    measured, calibration = texts[: args.chunks], texts[args.chunks :]
    reference = np.array(_core.Encoder(str(model_dir), precision="f32").embed(measured))
    bert = Bert(model_dir)
    bert.calibrating = True
    for text in calibration:
        bert.embed(text, Variant())
    bert.calibrating = False
    print(f"chunks: {len(measured)} from {args.tree}, calibration chunks: {len(calibration)}")
    print("cosine to blagent's f32 vectors            min       mean")
    for name, variant in VARIANTS.items():
        vectors = np.array([bert.embed(t, variant) for t in measured])
        cosines = (vectors * reference).sum(1)
        print(f"{name:38s} {cosines.min():.6f}  {cosines.mean():.6f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
