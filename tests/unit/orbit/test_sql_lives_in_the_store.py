"""Orbit's SQL is written in `store/` only: the tables, the named hot statements
(`queries.sql`), the write statements built from row changes (`store/sql.py`) and the SQLAlchemy
queries of the other reads and writes. Outside it nothing writes a statement (a string that
starts like one), builds a SQLAlchemy query (`sa.select(...)`, `sa.text(...)`, ...) or reads a
table's columns (`tasks.c.id`); the engine describes row changes (`Insert`, `Update`) and the
store turns them into SQL."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.unit import layers

ROOT = "agentcall.orbit"
STATEMENT = re.compile(r"\s*(SELECT|INSERT|UPDATE|DELETE|REPLACE|CREATE|ALTER|DROP|WITH)\s")
BUILDERS = frozenset({"select", "insert", "update", "delete", "text", "exists", "union", "func"})

pytestmark = pytest.mark.unit


def sql_written(sources: dict[str, Path]) -> list[str]:
    found = []
    for module, tree in layers.trees(sources):
        for node in ast.walk(tree):
            what = None
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                what = node.value.strip()[:40] if STATEMENT.match(node.value) else None
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                if node.value.id in ("sa", "sqlalchemy") and node.attr in BUILDERS:
                    what = f"{node.value.id}.{node.attr}"
                elif node.attr == "c" and node.value.id != "self":
                    what = f"{node.value.id}.c"
            elif isinstance(node, ast.ImportFrom) and node.module == "sqlalchemy":
                names = [alias.name for alias in node.names if alias.name in BUILDERS]
                what = f"from sqlalchemy import {', '.join(names)}" if names else None
            if what:
                found.append(f"{module}:{node.lineno}: {what}")  # type: ignore[attr-defined]
    return sorted(found)


def test_no_sql_outside_the_store() -> None:
    assert sql_written(layers.outside(ROOT, "store")) == []


def test_the_check_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import sqlalchemy as sa\nfrom sqlalchemy import select\n"
        "q = sa.select(tasks.c.id)\nR = 'SELECT 1'\nS = 'Selected'\nok = self.c\n",
        encoding="utf-8",
    )
    assert sql_written({"m": module}) == [
        "m:2: from sqlalchemy import select",
        "m:3: sa.select",
        "m:3: tasks.c",
        "m:4: SELECT 1",
    ]
