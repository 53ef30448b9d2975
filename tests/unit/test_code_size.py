"""Every module can be read in one sitting: no module under src/ over 400 lines, no function
over 60 lines (from `def` to its last line: docstring and body included, decorators not)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.unit.layers import SRC

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60

pytestmark = pytest.mark.unit


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def long_modules(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        count = len(path.read_text(encoding="utf-8").splitlines())
        if count > MAX_MODULE_LINES:
            found.append(f"{path}: {count} lines")
    return found


def long_functions(paths: list[Path]) -> list[str]:
    found = []
    for path in paths:
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                count = (node.end_lineno or node.lineno) - node.lineno + 1
                if count > MAX_FUNCTION_LINES:
                    found.append(f"{path}:{node.lineno} {node.name}: {count} lines")
    return found


def test_no_module_is_too_long() -> None:
    assert long_modules(_sources()) == []


def test_no_function_is_too_long() -> None:
    assert long_functions(_sources()) == []


def test_the_limits_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES))
    module.write_text(f"def f():\n{body}\n" + "\n" * MAX_MODULE_LINES, encoding="utf-8")
    assert len(long_modules([module])) == 1
    assert [line.split(" ")[1] for line in long_functions([module])] == ["f:"]
