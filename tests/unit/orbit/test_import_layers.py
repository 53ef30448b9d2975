"""Orbit's import direction: `cli → api → usecases → execution → store → domain`, with
`protocol` (the worker wire format) beside `domain`, and the SDKs depending only on `protocol`
and `domain`.
No import cycle between modules or between packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit import layers

ROOT = "agentcall.orbit"

# part -> the parts its modules may import (besides itself).
ALLOWED: dict[str, set[str]] = {
    "": set(),
    "__main__": {"cli"},
    "domain": set(),
    "protocol": {"domain"},
    "store": {"domain"},
    "execution": {"store", "domain", "protocol"},
    # the operations the API, the console, the CLI and the worker socket call
    "usecases": {"execution", "store", "domain", "protocol"},
    "api": {"console", "usecases", "execution", "store", "domain", "protocol", "settings"},
    # the console at /ui: an HTTP edge beside the API (which mounts it), reading through
    # execution's inspection and the store, acting through execution's use cases
    "console": {"usecases", "execution", "store", "domain"},
    "sdk": {"protocol", "domain"},
    # the server's ServerSettings: read from the environment where the server is assembled
    # (cli, api.factory) and passed down as values, so only those two parts import it
    "settings": {"domain"},
    "cli": {"api", "usecases", "execution", "store", "domain", "protocol", "sdk", "settings"},
}

pytestmark = pytest.mark.unit


def test_no_import_cycle_between_modules() -> None:
    assert layers.cycles(layers.graph(ROOT)) == []


def test_no_import_cycle_between_packages() -> None:
    edges = layers.graph(ROOT)
    for depth in range(3, 6):
        assert layers.cycles(layers.collapse(edges, depth)) == [], depth


def test_imports_follow_the_layers() -> None:
    assert layers.layer_violations(layers.graph(ROOT), ROOT, ALLOWED) == []


def test_every_part_of_the_table_exists() -> None:
    """A part renamed or removed must leave the table too (the table stays the layout)."""
    parts = {name.split(".")[2] if name.count(".") >= 2 else "" for name in layers.graph(ROOT)}
    assert set(ALLOWED) == parts


def test_the_checks_can_fail(tmp_path: Path) -> None:
    pkg = tmp_path / "x" / "svc"
    for part in ("domain", "store"):
        (pkg / part).mkdir(parents=True)
        (pkg / part / "__init__.py").write_text("")
    (pkg / "domain" / "a.py").write_text("from x.svc.store import b\n")
    (pkg / "store" / "b.py").write_text("from ..domain import a\n")
    edges = layers.graph("x.svc", tmp_path)
    assert layers.cycles(edges) == [["x.svc.domain.a", "x.svc.store.b"]]
    table = {"": set(), "domain": set(), "store": {"domain"}}
    assert layers.layer_violations(edges, "x.svc", table) == [
        "x.svc.domain.a imports x.svc.store.b (domain -> store is against the layers)"
    ]
