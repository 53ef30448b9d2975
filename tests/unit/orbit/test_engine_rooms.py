"""Where Orbit's engine lives, beyond the import direction of `tests/unit/test_import_layers.py`:
the HTTP edges (`api/`, `console/`) reach the store only through the use cases; nothing above
the store sees its tables (it calls typed operations, `agentcall.orbit.store.ports`); every use case
is a module of `orbit/usecases/` and none has a namesake outside it (but its pure rules in
`domain/`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit import layers
from tests.unit.test_import_layers import ORBIT

ROOT = "agentcall.orbit"
TABLES = "store.tables"
# the use cases the API, the console, the CLI and the worker socket call
USE_CASES = frozenset(
    {
        "submit",
        "batch_submit",
        "cancel",
        "retry",
        "resolve",
        "lease",
        "start",
        "heartbeat",
        "finish",
        "requeue",
    }
)

pytestmark = pytest.mark.unit


def table_readers(edges: layers.Graph, root: str) -> list[str]:
    """Modules outside `root`'s store that import its tables module."""
    tables, store = f"{root}.{TABLES}", f"{root}.store"
    return sorted(
        f"{module} imports {tables}"
        for module, targets in edges.items()
        if tables in targets and module != store and not module.startswith(store + ".")
    )


def misplaced_use_cases(modules: dict[str, Path], root: str) -> list[str]:
    """Use cases missing from `root.usecases`, and modules elsewhere named like one (but in
    `domain/`, where a use case's pure rules carry its name, and in the SDKs)."""
    home, beside = f"{root}.usecases", (f"{root}.domain.", f"{root}.sdk.")
    missing = sorted(name for name in USE_CASES if f"{home}.{name}" not in modules)
    found = [f"{home}.{name} is missing" for name in missing]
    found += [
        f"{module} is a use case outside {home}"
        for module in sorted(modules)
        if module.rsplit(".", 1)[-1] in USE_CASES and not module.startswith((home + ".", *beside))
    ]
    return found


def test_nothing_above_the_store_imports_its_tables() -> None:
    assert table_readers(layers.graph(ROOT), ROOT) == []


def test_every_use_case_lives_in_its_package() -> None:
    assert misplaced_use_cases(layers.modules(ROOT), ROOT) == []


@pytest.mark.parametrize("edge", ["api", "console"])
def test_the_http_edges_may_not_import_the_store(edge: str) -> None:
    assert "store" not in ORBIT[edge]


def _tree(tmp_path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(tmp_path).parents:
            if str(parent) != ".":
                (tmp_path / parent / "__init__.py").touch()
        path.write_text(text, encoding="utf-8")


def test_the_checks_can_fail(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "x/svc/store/tables.py": "",
            "x/svc/store/db.py": "from x.svc.store import tables\n",
            "x/svc/execution/kernel.py": "from x.svc.store.tables import tasks\n",
            "x/svc/api/routes.py": "from x.svc.store import db\n",
            "x/svc/usecases/submit.py": "",
            "x/svc/execution/cancel.py": "",
            "x/svc/domain/submit.py": "",
        },
    )
    edges = layers.graph("x.svc", tmp_path)
    assert table_readers(edges, "x.svc") == ["x.svc.execution.kernel imports x.svc.store.tables"]
    misplaced = misplaced_use_cases(layers.modules("x.svc", tmp_path), "x.svc")
    assert "x.svc.execution.cancel is a use case outside x.svc.usecases" in misplaced
    assert "x.svc.usecases.cancel is missing" in misplaced
    assert "x.svc.usecases.submit is missing" not in misplaced
    assert not [line for line in misplaced if "domain" in line]
    table = {
        "": set(),
        "domain": set(),
        "store": set(),
        "usecases": {"store"},
        "execution": {"store"},
    }
    assert layers.layer_violations(edges, "x.svc", {**table, "api": ORBIT["api"]}) == [
        "x.svc.api.routes imports x.svc.store.db (api -> store is against the layers)"
    ]
