"""The type stub `_core.pyi` matches the built native module, checked by mypy's stubtest (as
pydantic-core checks its stub): every name, class, method, parameter and default on both
sides."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import blagent

STUB = Path(blagent.__file__).with_name("_core.pyi")


def test_stub_ships_with_py_typed() -> None:
    assert STUB.is_file()
    assert STUB.with_name("py.typed").is_file()


def stubtest(cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """mypy's stubtest on `blagent._core`, with no mypy configuration but an empty one."""
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy.stubtest",
            "blagent._core",
            "--mypy-config-file",
            str(cwd / "none.ini"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env=env,
    )


def test_stubtest_finds_the_stub_and_the_module_in_agreement(tmp_path: Path) -> None:
    proc = stubtest(tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success" in proc.stdout


def test_stubtest_would_catch_a_stub_that_drifted(tmp_path: Path) -> None:
    """The check can fail: a copy of the package whose stub lacks `calibrate` is refused."""
    package = tmp_path / "blagent"
    package.mkdir()
    for path in Path(blagent.__file__).parent.iterdir():
        if path.is_file():
            (package / path.name).symlink_to(path)
    libs = Path(blagent.__file__).parent.with_name(
        "blagent.libs"
    )  # the libraries the wheel bundles
    if libs.is_dir():
        (tmp_path / libs.name).symlink_to(libs)
    (package / "_core.pyi").unlink()
    (package / "_core.pyi").write_text(
        STUB.read_text().replace("def calibrate(", "def calibrate_gone(")
    )
    proc = stubtest(tmp_path, env={"PYTHONPATH": str(tmp_path), "PATH": ""})
    assert proc.returncode != 0
    assert "calibrate" in proc.stdout
