"""Where Orbit's server is assembled and what stays below it: only the settings modules read
the environment (`ServerSettings`, the SDK's `WorkerSettings` and `ClientSettings`), only the
store asks which database it runs on (`store/db.py`, the connectors, the column types), and
the assembly hands every hook to a constructor instead of setting it afterwards."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.unit import layers, wiring

ROOT = "agentcall.orbit"
PACKAGE = layers.SRC / "agentcall" / "orbit"
READS_THE_ENVIRONMENT = {"agentcall.orbit.settings", "agentcall.orbit.sdk.settings"}
ENVIRONMENT = frozenset({"environ", "environb", "getenv", "getenvb", "putenv", "unsetenv"})
# the assembly: the functions that build the server's components and join them
ASSEMBLY = {
    "assembly/server.py": ("create_app",),
    "assembly/engine.py": ("ExecutionService.__init__", "_CrossProcess.__init__"),
}

pytestmark = pytest.mark.unit


def environment_readers(sources: dict[str, Path]) -> list[str]:
    found = []
    for module, tree in layers.trees(sources):
        for node in ast.walk(tree):
            via_os = (
                isinstance(node, ast.Attribute)
                and node.attr in ENVIRONMENT
                and isinstance(node.value, ast.Name)
                and node.value.id == "os"
            )
            imported = (
                isinstance(node, ast.ImportFrom)
                and node.module == "os"
                and any(alias.name in ENVIRONMENT for alias in node.names)
            )
            if via_os or imported:
                found.append(f"{module}:{node.lineno}")  # type: ignore[attr-defined]
    return found


def dialect_questions(sources: dict[str, Path]) -> list[str]:
    """Uses of `Dialect` or of a database's `.dialect` other than its name (`.dialect.value`,
    for a log line)."""
    found = []
    for module, tree in layers.trees(sources):
        named = {
            id(node.value)
            for node in ast.walk(tree)
            if isinstance(node, ast.Attribute) and node.attr == "value"
        }
        for node in ast.walk(tree):
            asks = (isinstance(node, ast.Name) and node.id == "Dialect") or (
                isinstance(node, ast.Attribute) and node.attr == "dialect" and id(node) not in named
            )
            imports = isinstance(node, ast.ImportFrom) and any(
                alias.name == "Dialect" for alias in node.names
            )
            if asks or imports:
                found.append(f"{module}:{node.lineno}")  # type: ignore[attr-defined]
    return found


def test_only_the_settings_modules_read_the_environment() -> None:
    sources = {n: p for n, p in layers.modules(ROOT).items() if n not in READS_THE_ENVIRONMENT}
    assert environment_readers(sources) == []


def test_only_the_store_asks_which_database_it_runs_on() -> None:
    assert dialect_questions(layers.outside(ROOT, "store")) == []


def test_the_assembly_passes_hooks_to_constructors() -> None:
    found = [
        hook
        for module, functions in ASSEMBLY.items()
        for hook in wiring.late_hooks(PACKAGE / module, functions)
    ]
    assert found == []


def test_the_checks_can_fail(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import os\nfrom os import environ\nfrom x.store.db import Dialect\n"
        "url = os.environ.get('ORBIT_URL')\n"
        "def build(db, ops, hub, metrics):\n"
        "    if db.dialect is Dialect.SQLITE:\n"
        "        pass\n"
        "    print(db.dialect.value)\n"
        "    ops.on_accepted = hub.notify\n"
        "    metrics.before_scrape.append(hub.refresh)\n"
        "    def later(ctx):\n"
        "        ctx.rejected = True\n"
        "class Service:\n"
        "    def __init__(self, hub):\n"
        "        self.hub = hub\n"
        "        self.hub.relay = print\n",
        encoding="utf-8",
    )
    assert environment_readers({"m": module}) == ["m:2", "m:4"]
    assert dialect_questions({"m": module}) == ["m:3", "m:6", "m:6"]
    assert wiring.late_hooks(module, ["build", "Service.__init__", "gone"]) == [
        "m.py: no function gone",
        "m.py:10 build: metrics.before_scrape.append(...)",
        "m.py:16 Service.__init__: self.hub.relay = ...",
        "m.py:9 build: ops.on_accepted = ...",
    ]
