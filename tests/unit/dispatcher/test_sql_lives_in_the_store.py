"""Every feature's SQL is in `dispatcher/store/`: no module outside it writes a statement (a
string that starts like one). The features, the console and the edges call store functions."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.unit import layers

ROOT = "agentcall.dispatcher"
STATEMENT = re.compile(
    r"\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|ALTER|DROP|PRAGMA|WITH|BEGIN)\s"
)

pytestmark = pytest.mark.unit


def statements(sources: dict[str, Path]) -> list[str]:
    found = []
    for module, tree in layers.trees(sources):
        parts = {id(p) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for p in n.values}
        for node in ast.walk(tree):
            if id(node) in parts:
                continue
            if isinstance(node, ast.JoinedStr):
                text = "".join(
                    part.value if isinstance(part, ast.Constant) else "?" for part in node.values
                )
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            else:
                continue
            if STATEMENT.match(text):
                found.append(f"{module}:{node.lineno}: {text.strip()[:40]}")
    return sorted(set(found))


def test_no_sql_outside_the_store() -> None:
    assert statements(layers.outside(ROOT, "store")) == []


def test_the_check_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        'A = "SELECT a FROM t WHERE b = ?"\nB = f"UPDATE t SET {x} = 1"\n'
        'C = "PRAGMA query_only = 1"\nD = "Select what to show"\nE = "selected"\n',
        encoding="utf-8",
    )
    assert statements({"m": module}) == [
        "m:1: SELECT a FROM t WHERE b = ?",
        "m:2: UPDATE t SET ? = 1",
        "m:3: PRAGMA query_only = 1",
    ]
