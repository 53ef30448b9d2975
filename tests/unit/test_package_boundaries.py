"""Architecture rule: the four packages never import each other, except that the
dispatcher may import the cell's public client module (`agentcall.cell.client`).

The test parses every module under src/ and fails naming each forbidden import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "agentcall"
PACKAGES = ("dispatcher", "cell", "mocksaas", "orbit")
ALLOWED = {("dispatcher", "agentcall.cell.client")}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
    return names


def _violations(package: str) -> list[str]:
    found = []
    for path in sorted((SRC / package).rglob("*.py")):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] != "agentcall" or len(parts) < 2:
                continue
            top = parts[1]
            if top == package or top not in PACKAGES:
                continue
            if any(package == src and (name == dst or name.startswith(dst + "."))
                   for src, dst in ALLOWED):
                continue
            found.append(f"{path.relative_to(SRC)} imports {name}")
    return found


@pytest.mark.parametrize("package", PACKAGES)
def test_packages_do_not_import_each_other(package: str) -> None:
    assert _violations(package) == []


def test_the_check_detects_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from agentcall.orbit.store import x\nimport agentcall.cell.client\n", encoding="utf-8"
    )
    assert _imports(module) == ["agentcall.orbit.store", "agentcall.cell.client"]
