"""Architecture rule: the four services never import each other. Two exceptions only: every
service may import `agentcall.logs` (the one shared module: JSON log lines with one message
key), and the dispatcher may import the cell's public client module (`agentcall.cell.client`).

Nothing else lives directly under `src/agentcall/`: a new shared module fails here, so code
shared by the services stays one deliberate exception. Besides code, `agentcall/contracts/` holds
data only (the SaaS <-> Dispatcher schemas both sides of the contract read); a Python module
there fails too. The shared module imports no service.
The test parses every module under src/ (absolute and relative imports) and fails naming
each forbidden import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "agentcall"
PACKAGES = ("dispatcher", "cell", "mocksaas", "orbit")
SHARED = ("logs",)
DATA = ("contracts",)  # directories of data files, never Python
ALLOWED = {("dispatcher", "agentcall.cell.client")}


def _resolve(path: Path, root: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    parts = ["agentcall", *path.relative_to(root).with_suffix("").parts]
    parts = parts[: len(parts) - node.level]
    return ".".join(parts + ([node.module] if node.module else []))


def _imports(path: Path, root: Path = SRC) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            module = _resolve(path, root, node)
            if module == "agentcall":  # from agentcall import logs
                names.extend(f"agentcall.{alias.name}" for alias in node.names)
            elif module:
                names.append(module)
    return names


def _is_under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _forbidden(package: str, name: str) -> bool:
    parts = name.split(".")
    if parts[0] != "agentcall" or len(parts) < 2 or parts[1] == package:
        return False
    if parts[1] in SHARED:
        return False
    return not any(package == src and _is_under(name, dst) for src, dst in ALLOWED)


def _violations(package: str, root: Path = SRC) -> list[str]:
    sources = (
        sorted((root / package).rglob("*.py")) if package in PACKAGES else [root / f"{package}.py"]
    )
    return [
        f"{path.relative_to(root)} imports {name}"
        for path in sources
        for name in _imports(path, root)
        if _forbidden(package, name)
    ]


def _strangers(root: Path = SRC) -> list[str]:
    """Entries directly under `agentcall/` that are neither a service nor the shared module."""
    known = {*PACKAGES, *DATA, *(f"{name}.py" for name in SHARED)}
    strangers = [
        entry.name
        for entry in root.iterdir()
        if entry.name not in known
        and entry.name != "__pycache__"
        and (entry.suffix == ".py" or entry.is_dir())
    ]
    code_in_data = [
        str(path.relative_to(root))
        for name in DATA
        if (root / name).is_dir()
        for path in (root / name).glob("**/*.py")
    ]
    return sorted(strangers + code_in_data)


@pytest.mark.parametrize("package", PACKAGES + SHARED)
def test_packages_do_not_import_each_other(package: str) -> None:
    assert _violations(package) == []


def test_the_shared_module_is_the_only_code_outside_the_services() -> None:
    assert _strangers() == []


def test_the_check_detects_a_forbidden_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from agentcall.orbit.store import x\nimport agentcall.cell.client\n", encoding="utf-8"
    )
    assert _imports(module) == ["agentcall.orbit.store", "agentcall.cell.client"]


def test_the_check_fails_on_a_second_shared_module(tmp_path: Path) -> None:
    root = tmp_path / "agentcall"
    for package in ("cell", "orbit"):
        (root / package).mkdir(parents=True)
    (root / "logs.py").write_text("import json\n", encoding="utf-8")
    (root / "util.py").write_text("from agentcall.cell import x\n", encoding="utf-8")
    (root / "helpers").mkdir()
    (root / "contracts" / "x").mkdir(parents=True)
    (root / "contracts" / "x" / "a.schema.json").write_text("{}", encoding="utf-8")
    (root / "cell" / "a.py").write_text(
        "from agentcall import logs, util\nfrom agentcall.logs import configure\n"
        "from ..helpers import y\nfrom . import b\n",
        encoding="utf-8",
    )
    (root / "orbit" / "c.py").write_text("import agentcall.cell.client\n", encoding="utf-8")
    assert _strangers(root) == ["helpers", "util.py"]
    (root / "contracts" / "x" / "code.py").write_text("import json\n", encoding="utf-8")
    assert _strangers(root) == ["contracts/x/code.py", "helpers", "util.py"]
    assert _violations("cell", root) == [
        "cell/a.py imports agentcall.util",
        "cell/a.py imports agentcall.helpers",
    ]
    assert _violations("orbit", root) == ["orbit/c.py imports agentcall.cell.client"]
    assert _violations("logs", root) == []
    (root / "logs.py").write_text("from agentcall.orbit import x\n", encoding="utf-8")
    assert _violations("logs", root) == ["logs.py imports agentcall.orbit"]
