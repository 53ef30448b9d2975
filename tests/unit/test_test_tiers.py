"""The test tiers import only their own tier, `tests/support/` and the product.

`tests/unit`, `tests/integration` and `tests/acceptance` never import one another's modules:
what two tiers share lives in `tests/support/`, which imports no tier. Every import counts,
including relative ones and the ones inside functions (read with `ast`, nothing is imported).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parents[1]
TIERS = ("unit", "integration", "acceptance")
SUPPORT = "support"


def _module(path: Path, tests: Path) -> list[str]:
    parts = ["tests", *path.relative_to(tests).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _imported(path: Path, tests: Path) -> Iterator[tuple[int, str]]:
    """Each dotted module the file imports, with its line."""
    here = _module(path, tests)
    package = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Import):
            yield from ((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                origin = node.module or ""
            else:
                base = package[: len(package) - (node.level - 1)]
                origin = ".".join(base + ([node.module] if node.module else []))
            for alias in node.names:
                yield node.lineno, f"{origin}.{alias.name}"


def _tier(dotted: list[str]) -> str | None:
    """The tier (or `support`) of a module of the tests package; None for any other code."""
    if dotted[:1] != ["tests"] or len(dotted) < 2:
        return None
    return dotted[1] if dotted[1] in (*TIERS, SUPPORT) else ""


def tier_violations(tests: Path) -> list[str]:
    """Imports of `tests/` that cross into another tier's modules, as `file:line imports x`."""
    found = []
    for path in sorted(tests.rglob("*.py")):
        own = _tier(_module(path, tests))
        if own is None:
            continue
        allowed = {SUPPORT} if own in ("", SUPPORT) else {own, SUPPORT}
        for line, target in _imported(path, tests):
            tier = _tier(target.split("."))
            if tier is None or tier in allowed or target in ("tests", "tests.support"):
                continue
            where = path.relative_to(tests.parent)
            found.append(f"{where}:{line} imports {target} ({own or 'tests'} -> {tier or 'tests'})")
    return found


def test_tiers_import_only_their_own_tier_and_the_support() -> None:
    assert tier_violations(TESTS) == []


def test_the_check_can_fail(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    files = {
        "__init__.py": "",
        "conftest.py": "from tests.unit import helpers\n",
        "unit/helpers.py": "from tests.support.ports import free_port\nfrom . import helpers\n",
        "integration/test_a.py": "from tests.unit.helpers import x\n",
        "acceptance/test_b.py": "def f():\n    from ..integration import test_a\n",
        "support/ports.py": "import tests.acceptance.test_b\n",
    }
    for name, text in files.items():
        path = tests / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert tier_violations(tests) == [
        "tests/acceptance/test_b.py:2 imports tests.integration.test_a (acceptance -> integration)",
        "tests/conftest.py:1 imports tests.unit.helpers (tests -> unit)",
        "tests/integration/test_a.py:1 imports tests.unit.helpers.x (integration -> unit)",
        "tests/support/ports.py:1 imports tests.acceptance.test_b (support -> acceptance)",
    ]
