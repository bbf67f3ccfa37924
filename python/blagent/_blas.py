"""OpenBLAS's kernels, chosen before the library loads.

The wheel bundles a distribution's OpenBLAS built with runtime CPU dispatch (DYNAMIC_ARCH). Its
dispatch only knows the CPUs of its release: on newer ones (Intel Sapphire Rapids, Emerald
Rapids, AMD Zen 4/5 as seen by older releases) it falls back to the SSE3 kernels of `Prescott`,
about four times slower for the encoder and Faiss's exact search. OpenBLAS reads
`OPENBLAS_CORETYPE` once, when it loads; `prepare()` sets it for that moment from the CPU's own
flags, and puts the environment back as it was right after, so child processes see the user's
environment. A value the user set is never overridden.

Rules (the kernel families of OpenBLAS's sgemm):
- AVX-512 F/BW/DQ/VL present (the kernel exposes these flags only when the OS saves the
  registers): `SkylakeX`.
- AVX2 and FMA on a CPU that is not AMD's: `Haswell`. AMD's AVX2-only CPUs (Zen 1-3) are known to
  every OpenBLAS release since 0.3.0 and get its `Zen` tuning by themselves.
- Anything else: OpenBLAS's own detection.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENV = "OPENBLAS_CORETYPE"
CPUINFO = Path("/proc/cpuinfo")
#: Bytes of /proc/cpuinfo read: the first processor's block is well inside (flags ~1.5 KB).
CPUINFO_LIMIT = 64 * 1024

AVX512 = frozenset({"avx512f", "avx512bw", "avx512dq", "avx512vl"})
AVX2 = frozenset({"avx2", "fma"})
#: OpenBLAS cores whose sgemm kernels use AVX2 + FMA or wider.
AVX2_CORES = frozenset({"Haswell", "Zen", "SkylakeX", "CooperLake", "SapphireRapids"})
AVX512_CORES = frozenset({"SkylakeX", "CooperLake", "SapphireRapids"})


def cpu() -> tuple[str, frozenset[str]]:
    """The vendor and feature flags of the first processor in /proc/cpuinfo ("", {} elsewhere)."""
    try:
        with CPUINFO.open("rb") as f:
            text = f.read(CPUINFO_LIMIT).decode("ascii", "replace")
    except OSError:
        return "", frozenset()
    vendor, flags = "", frozenset[str]()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "vendor_id" and not vendor:
            vendor = value.strip()
        elif key == "flags":
            flags = frozenset(value.split())
            break
    return vendor, flags


def core_for(vendor: str, flags: frozenset[str]) -> str | None:
    """The core type to ask OpenBLAS for, or None to leave the choice to its own detection."""
    if AVX512 <= flags:
        return "SkylakeX"
    if AVX2 <= flags and vendor != "AuthenticAMD":
        return "Haswell"
    return None


@contextmanager
def prepared() -> Iterator[str | None]:
    """Within the block, `OPENBLAS_CORETYPE` holds the chosen core unless the user set one; the
    environment is restored after. Yields the core set (None when nothing was set)."""
    if os.environ.get(ENV):
        yield None
        return
    core = core_for(*cpu())
    if core is None:
        yield None
        return
    os.environ[ENV] = core
    try:
        yield core
    finally:
        os.environ.pop(ENV, None)


#: The flags that choose the encoder's arithmetic (docs/dense.md), reported with the BLAS's.
ENCODER_FLAGS = {"avx", "sse4_2", "avx512_bf16", "avx512_vnni", "amx_tile", "amx_bf16"}


def status(loaded_core: str) -> dict[str, object]:
    """What a benchmark or a bug report needs to say about the BLAS: the core in use, the CPU's
    relevant flags, and whether the core is slower than the CPU allows."""
    vendor, flags = cpu()
    relevant = sorted(f for f in flags if f in AVX512 | AVX2 | ENCODER_FLAGS)
    expected = AVX512_CORES if AVX512 <= flags else AVX2_CORES if AVX2 <= flags else None
    return {
        "core": loaded_core,
        "vendor": vendor,
        "flags": relevant,
        "user_set": os.environ.get(ENV),
        "fallback": expected is not None and loaded_core not in expected,
    }
