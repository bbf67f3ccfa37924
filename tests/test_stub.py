"""The type stub `_core.pyi` matches the built native module: every name and method exists on
both sides, and function signatures agree on parameter names."""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import blagent
from blagent import _core

STUB = Path(blagent.__file__).with_name("_core.pyi")


def stub_tree() -> ast.Module:
    return ast.parse(STUB.read_text())


def public(names: list[str]) -> set[str]:
    return {n for n in names if not n.startswith("_") or n == "__version__"}


def test_stub_ships_with_py_typed() -> None:
    assert STUB.is_file()
    assert STUB.with_name("py.typed").is_file()


def test_module_level_names_match() -> None:
    stubbed = set()
    for node in stub_tree().body:
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)):
            stubbed.add(node.name)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            stubbed.add(node.target.id)
    assert stubbed == public(dir(_core))


def test_class_methods_and_function_parameters_match() -> None:
    for node in stub_tree().body:
        if isinstance(node, ast.ClassDef):
            runtime = getattr(_core, node.name)
            stubbed = {n.name for n in node.body if isinstance(n, ast.FunctionDef) and n.name != "__init__"}
            actual = {n for n in vars(runtime) if not n.startswith("_")}
            assert stubbed == actual, node.name
        elif isinstance(node, ast.FunctionDef):
            params = [a.arg for a in node.args.args]
            runtime = inspect.signature(getattr(_core, node.name))
            assert params == list(runtime.parameters), node.name
