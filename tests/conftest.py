"""Fixtures: a small repository written by the tests themselves, with the hard cases."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

SOURCES = {
    "shop/__init__.py": '"""Shop package."""\nfrom .pricing import apply_discount\n',
    "shop/pricing.py": (
        '"""Prices and discounts."""\n\n\n'
        "class DiscountError(ValueError):\n    pass\n\n\n"
        "def apply_discount(total, percent):\n"
        '    """Apply a percentage discount."""\n'
        "    if percent > 100:\n"
        '        raise DiscountError("discount percentage cannot exceed one hundred")\n'
        "    return total - total * percent\n"
    ),
    "shop/cart.py": (
        "from .pricing import apply_discount\n\n\n"
        "class Cart:\n    def __init__(self):\n        self.items = []\n\n"
        "    def total(self, percent=0):\n        return apply_discount(sum(self.items), percent)\n"
    ),
    "shop/inventory.py": "class Inventory:\n    def reserve(self, sku, quantity):\n        return quantity\n",
    "shop/tests/test_pricing.py": "from shop.pricing import apply_discount\n\ndef test_discount():\n    assert apply_discount(100, 0.1) == 90\n",
    "shop/broken.py": "def broken(x:\n    return x\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    for rel, text in SOURCES.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root / "shop" / "blob.py").write_bytes(b"\x00\x01binary\x00")
    (root / "shop" / "legacy.py").write_bytes(b"NAME = 'Jos\xe9'\n")
    return root


@pytest.fixture
def outside_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secret.py"
    secret.parent.mkdir()
    secret.write_text("PASSWORD = 'hunter2'\n")
    return secret


def can_make_unreadable() -> bool:
    return os.name == "posix" and os.geteuid() != 0


# What `vdpbf16ps` (the bf16-avx512 path) needs of the CPU.
AVX512_BF16_FLAGS = {"avx512f", "avx512bw", "avx512vl", "avx512_bf16"}
# What `vpdpbusd` (the int8-avx512 path) needs of the CPU.
AVX512_INT8_FLAGS = AVX512_BF16_FLAGS | {"avx512_vnni"}


def _amd() -> bool:
    """Whether the CPU is AMD's, where bf16 dot products outrun f32 (the int8 path runs its
    other layers and attention by them there, in f32 elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            return "AuthenticAMD" in info.read(65536)
    except OSError:
        return False


# The suffix each precision adds to the model's identity in the embedding cache.
PRECISION_SUFFIX = {
    "bf16-amx": "/bf16.2",
    "bf16-avx512": "/bf16-avx512.2",
    "int8-avx512": "/int8-avx512.1" if _amd() else "/int8-avx512-f32.1",
    "f32": "",
}


def expected_encoder_precision() -> str:
    """The encoder precision this CPU calls for, read from its vendor and flags rather than
    from the library under test: AMX tiles where Linux lists them (it lists them only with tile
    state enabled); else int8 by `vpdpbusd` where the CPU has AVX-512 BF16 and VNNI (Zen 4 and
    later; an Intel Xeon whose AMX is not granted); else, on AMD's CPUs with AVX-512 BF16,
    where `vdpbf16ps` outruns f32 (on Intel's it runs at half the f32 rate), `vdpbf16ps`; else
    f32."""
    from blagent import _blas

    vendor, flags = _blas.cpu()
    if {"amx_tile", "amx_bf16"} <= flags:
        return "bf16-amx"
    if AVX512_INT8_FLAGS <= flags:
        return "int8-avx512"
    if AVX512_BF16_FLAGS <= flags and vendor == "AuthenticAMD":
        return "bf16-avx512"
    return "f32"


SCHEMAS = Path(__file__).resolve().parent.parent / "schemas"


def schema_validator(name: str):  # type: ignore[no-untyped-def]
    """A jsonschema validator for `schemas/<name>.schema.json`, resolving the others by `$id`."""
    import jsonschema
    from referencing import Registry, Resource

    schemas = {p.name: json.loads(p.read_text()) for p in SCHEMAS.glob("*.schema.json")}
    registry = Registry().with_resources(
        (s["$id"], Resource.from_contents(s)) for s in schemas.values()
    )
    schema = schemas[f"{name}.schema.json"]
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema, registry=registry)
