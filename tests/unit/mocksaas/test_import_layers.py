"""The Mock SaaS's import direction, each layer importing only the layers below it:

    cli
    → server, cli_admin        the process (uvicorn + runtime) and the admin command line
    → web                      HTTP routes: the contract GETs and the admin API
    → ops                      use cases of the admin API and the contract
    → runtime                  wires the store, the broker, the contracts and the loops
    → amqp                     broker connection, outbox relay, result consumers
    → store, settings, contracts, topology
    → domain                   pure rules: tasks, discovery, quota, faults, results
    → errors, metrics          (the shared base)

No import cycle between modules or between packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit import layers

ROOT = "agentcall.mocksaas"

# top to bottom; a part may import the parts of the layers below its own.
LAYERS: list[set[str]] = [
    {"cli"},
    {"server", "cli_admin"},
    {"web"},
    {"ops"},
    {"runtime"},
    {"amqp"},
    {"store", "settings", "contracts", "topology"},
    {"domain"},
    {"", "errors", "metrics"},
]


def _allowed() -> dict[str, set[str]]:
    table: dict[str, set[str]] = {}
    for depth, layer in enumerate(LAYERS):
        below = set().union(*LAYERS[depth + 1 :])
        table.update({part: below for part in layer})
    return table


ALLOWED = _allowed()

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
    pkg = tmp_path / "x" / "saas"
    for part in ("domain", "store"):
        (pkg / part).mkdir(parents=True)
        (pkg / part / "__init__.py").write_text("")
    (pkg / "domain" / "tasks.py").write_text("from x.saas.store import rows\n")
    (pkg / "store" / "rows.py").write_text("from ..domain import tasks\n")
    edges = layers.graph("x.saas", tmp_path)
    assert layers.cycles(edges) == [["x.saas.domain.tasks", "x.saas.store.rows"]]
    table = {"": set(), "domain": set(), "store": {"domain"}}
    assert layers.layer_violations(edges, "x.saas", table) == [
        "x.saas.domain.tasks imports x.saas.store.rows (domain -> store is against the layers)"
    ]
