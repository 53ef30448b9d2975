"""The Dispatcher's import direction, top to bottom:

    cli → service (assembly) → status, web, console
        → features: calls → recording; admission, discovery, control
        → finalize (ends an execution, stores its one call.result)
        → edges: saas, mq, cell → store (every feature's SQL)
        → domain, contracts, settings → errors;  logs and telemetry (the port the
          components report to, and its Prometheus registry) beside them; readiness
          (pure, over the status snapshot) under status and web

Features never import each other except calls → recording (the call supervisor runs the
recording loop and applies its events); none imports the assembly. An edge never imports
a feature. No import cycle between modules or between packages.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit import layers

ROOT = "agentcall.dispatcher"

BASE = {"domain", "errors", "logs", "telemetry"}
EDGES = {"saas", "mq", "cell", "store"}
FEATURES = {"admission", "discovery", "control", "calls", "recording"}

# part -> the parts its modules may import (besides itself).
ALLOWED: dict[str, set[str]] = {
    "": set(),
    "errors": set(),
    "logs": set(),
    "telemetry": set(),
    "readiness": set(),
    "domain": {"errors"},
    "contracts": {"errors"},
    "settings": {"errors", "settings_http"},
    "settings_http": set(),
    "store": {"domain", "errors"},
    "cell": {"domain", "errors"},
    "mq": {"store"} | BASE,
    "saas": {"store", "contracts", "settings"} | BASE,
    "finalize": {"store"} | BASE,
    "recording": {"finalize", "cell", "mq", "store", "settings"} | BASE,
    "calls": {"recording", "finalize", "cell", "store"} | BASE,
    "admission": {"mq", "saas", "store", "contracts"} | BASE,
    "discovery": {"saas", "store", "contracts"} | BASE,
    "control": {"cell", "mq", "saas", "store", "contracts"} | BASE,
    "web": {"domain", "readiness"},
    "console": {"domain", "store"},
    "status": FEATURES | EDGES | BASE | {"readiness"},
    "service": {"status", "web", "console", "settings"} | FEATURES | {"finalize"} | EDGES | BASE,
    "cli": {"service", "settings", "cell", "logs"},
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


def test_the_cell_package_is_reached_only_through_its_client() -> None:
    """The one import of another package of ours: ``agentcall.cell.client``, in the adapter."""
    found = sorted(
        f"{path.relative_to(layers.SRC)}: {line.strip()}"
        for path in layers.modules(ROOT).values()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.lstrip().startswith(("from agentcall.cell", "import agentcall.cell"))
    )
    assert found == ["agentcall/dispatcher/cell/adapter.py: from agentcall.cell.client import ("]


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """An edge importing a feature, and two features importing each other, against this table."""
    pkg = tmp_path / "x" / "d"
    for part in ("mq", "calls", "control"):
        (pkg / part).mkdir(parents=True)
        (pkg / part / "__init__.py").write_text("")
    (pkg / "mq" / "a.py").write_text("from x.d.calls import b\n")
    (pkg / "calls" / "b.py").write_text("from ..control import c\n")
    (pkg / "control" / "c.py").write_text("from x.d.calls import b\n")
    edges = layers.graph("x.d", tmp_path)
    assert layers.cycles(edges) == [["x.d.calls.b", "x.d.control.c"]]
    assert layers.layer_violations(edges, "x.d", ALLOWED) == [
        "x.d.calls.b imports x.d.control.c (calls -> control is against the layers)",
        "x.d.control.c imports x.d.calls.b (control -> calls is against the layers)",
        "x.d.mq.a imports x.d.calls.b (mq -> calls is against the layers)",
    ]
