"""OpenBLAS must run kernels as wide as the CPU allows: the encoder and Faiss's exact search
are four times slower on the generic fallback, and nothing else would say so."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import blagent
import pytest
from blagent import _blas
from conftest import AVX512_BF16_FLAGS, AVX512_INT8_FLAGS, expected_encoder_precision

VENDOR, FLAGS = _blas.cpu()
HAS_AVX2 = _blas.AVX2 <= FLAGS


def loaded_in_fresh_process(**env: str) -> dict[str, object]:
    """blas_status() and the environment's variable after `import blagent` in a new interpreter."""
    environ = {k: v for k, v in os.environ.items() if k != _blas.ENV} | env
    code = (
        "import json, os, blagent; "
        f"print(json.dumps({{'status': blagent.blas_status(), 'env': os.environ.get({_blas.ENV!r})}}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


@pytest.mark.skipif(
    not HAS_AVX2, reason="the CPU has no AVX2: every OpenBLAS core is as fast as it gets"
)
def test_kernels_are_not_a_generic_fallback_on_an_avx2_cpu() -> None:
    loaded = loaded_in_fresh_process()
    status = loaded["status"]
    assert isinstance(status, dict)
    assert not status["fallback"], (
        f"OpenBLAS runs {status['core']} kernels on a CPU with {status['flags']}"
    )
    assert loaded["env"] is None, "the variable set for loading must not stay in the environment"


@pytest.mark.skipif(not HAS_AVX2, reason="needs a CPU where Prescott is slower than the CPU allows")
def test_the_check_sees_a_fallback_and_a_users_choice_is_kept() -> None:
    loaded = loaded_in_fresh_process(**{_blas.ENV: "Prescott"})
    status = loaded["status"]
    assert isinstance(status, dict)
    assert status["core"] == "Prescott" and status["user_set"] == "Prescott"
    assert status["fallback"] is True
    assert loaded["env"] == "Prescott"


def test_the_loaded_core_is_the_one_chosen_for_this_cpu() -> None:
    chosen = _blas.core_for(VENDOR, FLAGS)
    if os.environ.get(_blas.ENV):
        pytest.skip("OPENBLAS_CORETYPE is set in this environment")
    core = blagent.blas_status()["core"]
    if chosen is not None:
        assert core == chosen
    else:
        assert isinstance(core, str) and core


def test_rules() -> None:
    avx2 = frozenset({"sse4_2", "avx", "avx2", "fma"})
    avx512 = avx2 | _blas.AVX512
    assert _blas.core_for("GenuineIntel", avx512) == "SkylakeX"
    assert _blas.core_for("AuthenticAMD", avx512) == "SkylakeX"
    assert _blas.core_for("GenuineIntel", avx2) == "Haswell"
    assert _blas.core_for("HygonGenuine", avx2) == "Haswell"
    assert _blas.core_for("AuthenticAMD", avx2) is None
    assert _blas.core_for("GenuineIntel", frozenset({"sse4_2", "avx"})) is None
    assert _blas.core_for("GenuineIntel", avx2 | {"avx512f"}) == "Haswell", (
        "partial AVX-512 is not enough"
    )


def precision_in_fresh_process(**env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "BLAGENT_ENCODER_PRECISION"} | env
    code = "import blagent; print(blagent.blas_status()['encoder_precision'])"
    out = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def test_the_encoder_takes_the_fastest_arithmetic_the_cpu_has() -> None:
    # AMX tiles, else bf16 dot products where they outrun f32, else f32; f32 when asked.
    assert precision_in_fresh_process() == expected_encoder_precision()
    assert precision_in_fresh_process(BLAGENT_ENCODER_PRECISION="f32") == "f32"


def test_the_precision_variable_picks_any_path_the_cpu_runs_and_refuses_the_rest() -> None:
    # Each arithmetic path this CPU can run can be chosen, so that each can be measured here.
    runnable = {"f32"}
    if AVX512_BF16_FLAGS <= FLAGS:
        runnable.add("bf16-avx512")
    if AVX512_INT8_FLAGS <= FLAGS:
        runnable.add("int8-avx512")
    if expected_encoder_precision() == "bf16-amx":
        runnable.add("bf16-amx")
    for name in ("f32", "bf16-amx", "bf16-avx512", "int8-avx512"):
        if name in runnable:
            assert precision_in_fresh_process(BLAGENT_ENCODER_PRECISION=name) == name
        else:
            with pytest.raises(subprocess.CalledProcessError) as refused:
                precision_in_fresh_process(BLAGENT_ENCODER_PRECISION=name)
            assert name in refused.value.stderr
    assert precision_in_fresh_process(BLAGENT_ENCODER_PRECISION="auto") == (
        expected_encoder_precision()
    )
    with pytest.raises(subprocess.CalledProcessError) as bad:
        precision_in_fresh_process(BLAGENT_ENCODER_PRECISION="fp8")
    assert "BLAGENT_ENCODER_PRECISION" in bad.value.stderr and "fp8" in bad.value.stderr


def threads_in_fresh_process(
    cpus: set[int] | None = None, load: bool = True, **env: str
) -> dict[str, object]:
    """blas_status()["threads"], after an encoder loads (`load`), in a new interpreter whose
    CPUs are `cpus` (as `taskset` or a container's cpuset would leave it), and what a child
    process of it sees of CANDLE_NUM_THREADS."""
    names = ("RAYON_NUM_THREADS", "CANDLE_NUM_THREADS")
    environ = {k: v for k, v in os.environ.items() if k not in names} | env
    code = (
        "import json, os, subprocess, sys; "
        f"cpus = {sorted(cpus) if cpus else None!r}; "
        "cpus and os.sched_setaffinity(0, cpus); "
        "import blagent; from blagent import _core; "
        "from blagent.models import default_model_dir; "
        f"{load!r} and _core.Encoder(str(default_model_dir())); "
        "child = subprocess.run(['sh', '-c', 'echo ${CANDLE_NUM_THREADS-unset}'], "
        "capture_output=True, text=True).stdout.strip(); "
        "print(json.dumps({**blagent.blas_status()['threads'], 'child': child}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="no CPU affinity here")
def test_the_encoders_threads_are_the_cpus_the_process_may_use() -> None:
    # candle would size its pool by the machine's physical cores, blind to an affinity mask;
    # its spinning workers then take CPU from the encoder (on 2 of 16 cores, a third of it).
    mine = os.sched_getaffinity(0)
    one = {min(mine)}
    unset = {"child": "unset"}
    assert threads_in_fresh_process(one) == {"workers": 1, "candle": 1} | unset
    assert threads_in_fresh_process() == {"workers": len(mine), "candle": len(mine)} | unset
    # Nothing starts before an encoder loads (a process forked then has no pool to miss).
    assert threads_in_fresh_process(one, load=False) == {"workers": 1, "candle": None} | unset
    # A user's count is kept; a value that is no count is as unset, as rayon reads it.
    assert (
        threads_in_fresh_process(one, RAYON_NUM_THREADS="2")
        == {
            "workers": 2,
            "candle": 2,
        }
        | unset
    )
    assert threads_in_fresh_process(one, CANDLE_NUM_THREADS="3") == {
        "workers": 1,
        "candle": 3,
        "child": "3",
    }
    for no_count in ("0", "abc"):
        assert (
            threads_in_fresh_process(one, RAYON_NUM_THREADS=no_count)
            == {
                "workers": 1,
                "candle": 1,
            }
            | unset
        )


def test_a_process_forked_after_the_status_runs() -> None:
    # Found by a review: blas_status() started rayon's pool, and a child forked after it hung
    # on the pool's threads, which a fork does not copy.
    example = Path(__file__).resolve().parent.parent / "examples" / "minishop"
    code = f"""
import os, sys, blagent
blagent.blas_status()
pid = os.fork()
if pid == 0:
    result = blagent.Localizer().localize({str(example)!r}, "the cart total is wrong")
    os._exit(0 if result.files else 1)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    proc = subprocess.run([sys.executable, "-c", code], timeout=120)
    assert proc.returncode == 0
