"""Modules and tests are named for the behaviour they hold, never for the project's phases:
no label such as `p3`, `phase2`, `issue15`, `round2`, `stage1` or a review's `finding_3` in the
name of a module under src/, tests/ or bench/, or of a test function."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# `p3` but not `p50` (a percentile)
LABEL = re.compile(r"(?:^|_)(?:p\d|(?:phase|issue|round|stage|step)\d+|finding_?\d+)(?:_|$)")

pytestmark = pytest.mark.unit


def labelled(paths: list[Path], root: Path) -> list[str]:
    found = []
    for path in paths:
        if LABEL.search(path.stem):
            found.append(str(path.relative_to(root)))
        if path.name.startswith("test_"):
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            found.extend(
                f"{path.relative_to(root)}::{node.name}"
                for node in ast.walk(tree)
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name.startswith("test")
                and LABEL.search(node.name)
            )
    return found


def test_no_phase_label_in_a_module_or_test_name() -> None:
    paths = sorted(p for part in ("src", "tests", "bench") for p in (ROOT / part).rglob("*.py"))
    assert labelled(paths, ROOT) == []


def test_the_check_can_fail(tmp_path: Path) -> None:
    (tmp_path / "test_p3_batch.py").write_text(
        "def test_p3_cancel(): ...\ndef test_job_phase_moves(): ...\n"
        "async def test_retry_round2(): ...\ndef test_p50_latency(): ...\n"
        "def test_a_slow_body_is_cut_finding_6(): ...\n",
        encoding="utf-8",
    )
    (tmp_path / "store_round2.py").write_text("", encoding="utf-8")
    paths = sorted(tmp_path.glob("*.py"))
    assert labelled(paths, tmp_path) == [
        "store_round2.py",
        "test_p3_batch.py",
        "test_p3_batch.py::test_p3_cancel",
        "test_p3_batch.py::test_retry_round2",
        "test_p3_batch.py::test_a_slow_body_is_cut_finding_6",
    ]
