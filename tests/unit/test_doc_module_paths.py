"""Every module path named in a docstring, a comment or a page of the docs exists.

What is read: the docstrings (module, class, function) and the comments of every Python file
under src/, tests/, bench/, scripts/ and examples/, and every line of README.md and of the
pages under docs/. What is checked there:

- dotted paths under the namespace, `agentcall.<service>.<module>…`: the longest prefix that
  is a module or package must exist, and the name that follows it, if any, must be defined at
  the top of that module (a function, a class, an assignment or an import), and the next one
  in that class's body when the name is a class;
- pre-namespace paths (`<service>.<module>…` without `agentcall.`, where `<module>` is a
  module or package of that service, e.g. a store module named from its service): refused,
  with the namespaced path to write instead;
- dotted paths of the test and bench packages (`tests.<module>…`, `bench.<module>…`), as the
  namespace's;
- file paths and names of Python files (`<folder>/<name>.py`, `<name>.py`): some Python file
  of the checkout has a path that ends with it, so `src/agentcall/<service>/store/db.py`,
  `store/db.py`, `tests/unit/layers.py` and `layers.py` are all checked.

The check runs over a small tree written by the tests below too, so that it can fail.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CODE = ("src", "tests", "bench", "scripts", "examples")
SERVICES = ("orbit", "dispatcher", "cell", "mocksaas")
DOTTED = re.compile(
    r"(?<![\w.\-/])((?:agentcall|tests|bench|orbit|dispatcher|cell|mocksaas)(?:\.[A-Za-z_]\w*)+)"
)
FILE = re.compile(r"(?<![\w./<>*{}$-])((?:[\w.-]+/)*[\w-]+\.py)(?![\w/])")
SUFFIXES = ("py", "md", "txt", "json", "toml", "sql", "log", "db", "yaml", "yml", "example")


@dataclass(frozen=True)
class Named:
    """A path named in a text: where (file relative to the root, line) and what."""

    where: str
    line: int
    text: str


def python_files(root: Path) -> list[Path]:
    found = []
    for folder in CODE:
        if (root / folder).is_dir():
            found += [p for p in (root / folder).rglob("*.py") if "__pycache__" not in p.parts]
    return sorted(found)


def doc_pages(root: Path) -> list[Path]:
    pages = [root / "README.md"] if (root / "README.md").is_file() else []
    return pages + sorted((root / "docs").rglob("*.md")) if (root / "docs").is_dir() else pages


def python_texts(path: Path) -> Iterator[tuple[int, str]]:
    """(line, text) of the docstrings and comments of a Python file."""
    source = path.read_text(encoding="utf-8")
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                if isinstance(body[0].value.value, str):
                    yield body[0].lineno, body[0].value.value
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string


def named_paths(root: Path) -> Iterator[Named]:
    """Every dotted or file path named in the texts this check reads."""
    texts: list[tuple[Path, int, str]] = []
    for path in python_files(root):
        texts += [(path, line, text) for line, text in python_texts(path)]
    for page in doc_pages(root):
        lines = page.read_text(encoding="utf-8").splitlines()
        texts += [(page, number, text) for number, text in enumerate(lines, 1)]
    for path, line, text in texts:
        where = path.relative_to(root).as_posix()
        for pattern in (DOTTED, FILE):
            for match in pattern.finditer(text):
                yield Named(where, line + text[: match.start()].count("\n"), match.group(1))


def _package_dir(root: Path, parts: list[str]) -> Path:
    base = root if parts[0] in ("tests", "bench") else root / "src"
    return base.joinpath(*parts)


def _module_file(root: Path, parts: list[str]) -> Path | None:
    """The file of a module or package (a folder without `__init__.py` counts), or None."""
    where = _package_dir(root, parts)
    if where.with_suffix(".py").is_file():
        return where.with_suffix(".py")
    if (where / "__init__.py").is_file():
        return where / "__init__.py"
    return where if where.is_dir() else None


def _defined(tree: ast.Module | ast.ClassDef) -> dict[str, ast.AST]:
    names: dict[str, ast.AST] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id: node for t in targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names |= {(a.asname or a.name).split(".")[0]: node for a in node.names}
        elif isinstance(node, ast.If | ast.Try):
            names |= _defined(ast.Module(body=node.body, type_ignores=[]))
    return names


def dotted_problem(root: Path, text: str) -> str | None:
    """Why a dotted path does not name something that exists, or None when it does."""
    parts = text.split(".")
    if len(parts) == 2 and parts[-1] in SUFFIXES:
        return None  # a file name (`orbit.db`, `dispatcher.md`), not a module path
    if parts[0] in SERVICES:
        if _module_file(root, ["agentcall", parts[0], parts[1]]) is None:
            return None  # not a module of the service: an attribute, a protocol or file name
        return f"a path from before the namespace: write agentcall.{text}"
    known = 1
    while known < len(parts) and _module_file(root, parts[: known + 1]) is not None:
        known += 1
    module = _module_file(root, parts[:known])
    if module is None or (known == 1 and parts[0] == "agentcall" and len(parts) > 1):
        return f"no module {'.'.join(parts[: known + 1])}"
    rest = parts[known:]
    if not rest or module.is_dir():
        return None if not rest else f"no module {'.'.join(parts[: known + 1])}"
    names = _defined(ast.parse(module.read_text(encoding="utf-8")))
    if rest[0] not in names and module.name == "__init__.py":
        return f"no module {'.'.join(parts[: known + 1])}"
    if rest[0] not in names:
        return f"{'.'.join(parts[:known])} defines no {rest[0]}"
    node = names[rest[0]]
    if len(rest) > 1 and isinstance(node, ast.ClassDef) and rest[1] not in _defined(node):
        return f"{'.'.join(parts[: known + 1])} defines no {rest[1]}"
    return None


def file_suffixes(root: Path) -> set[str]:
    """Every ending (whole folders) of the path of every Python file of the checkout."""
    endings: set[str] = set()
    for path in python_files(root):
        parts = path.relative_to(root).parts
        endings |= {"/".join(parts[i:]) for i in range(len(parts))}
    return endings


def problems(root: Path) -> list[str]:
    """`where:line: path: why` for every named path that does not exist."""
    endings = file_suffixes(root)
    found = []
    for named in named_paths(root):
        if named.text.endswith(".py"):
            relative = re.sub(r"^(\.\.?/)+", "", named.text)
            why = None if relative in endings else "no such file"
        else:
            why = dotted_problem(root, named.text)
        if why is not None:
            found.append(f"{named.where}:{named.line}: {named.text}: {why}")
    return found


def test_every_module_path_named_in_the_docs_and_docstrings_exists() -> None:
    found = problems(ROOT)
    assert not found, f"{len(found)} paths name nothing that exists:\n" + "\n".join(found)


STORE = '''"""The store.

`agentcall.orbit.store.db.Database.open` opens it; see agentcall.orbit.store and
tests.support.helpers.fresh, `store/db.py` and src/agentcall/orbit/store/db.py.
"""

import os

from agentcall.orbit.domain import ids

LIMIT = 3


class Database:
    def open(self) -> None:
        """Files: `orbit.db`, docs in `dispatcher.md`; `orbit.worker.v1` is a protocol."""
        # the cell's `cell.originate(...)` is a method, not a module
'''


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    for relative, text in {
        "src/agentcall/orbit/store/__init__.py": "",
        "src/agentcall/orbit/store/db.py": STORE,
        "src/agentcall/orbit/domain/__init__.py": "",
        "src/agentcall/orbit/domain/ids.py": "def new() -> str:\n    return ''\n",
        "src/agentcall/cell/calls.py": "",
        "tests/support/helpers.py": "def fresh() -> None: ...\n",
    }.items():
        (tmp_path / relative).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / relative).write_text(text, encoding="utf-8")
    (tmp_path / "docs").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("named", "why"),
    [
        ("agentcall.orbit.store.db.LIMIT", None),
        ("agentcall.orbit.store.db.ids", None),
        ("agentcall.orbit.store.db.os", None),
        ("agentcall.orbit.domain.ids.new", None),
        ("agentcall.orbit.store.db.Database.open", None),
        ("agentcall.orbit", None),
        ("agentcall.orbit.store.driver_pool", "no module agentcall.orbit.store.driver_pool"),
        ("agentcall.orbit.store.db.Gone", "agentcall.orbit.store.db defines no Gone"),
        (
            "agentcall.orbit.store.db.Database.close",
            "agentcall.orbit.store.db.Database defines no close",
        ),
        ("agentcall.gone.x", "no module agentcall.gone"),
        ("orbit.store.db", "a path from before the namespace: write agentcall.orbit.store.db"),
        (
            "orbit.store.driver_pool",
            "a path from before the namespace: write agentcall.orbit.store.driver_pool",
        ),
        ("cell.calls", "a path from before the namespace: write agentcall.cell.calls"),
        ("cell.originate", None),
        ("orbit.worker.v1", None),
        ("orbit.db", None),
        ("tests.support.helpers.fresh", None),
        ("tests.services", "no module tests.services"),
    ],
)
def test_a_dotted_path_names_a_module_and_what_it_defines(
    tree: Path, named: str, why: str | None
) -> None:
    assert dotted_problem(tree, named) == why


def test_the_check_finds_what_a_small_tree_names_wrongly(tree: Path) -> None:
    assert problems(tree) == []
    (tree / "src/agentcall/orbit/store/gone.py").write_text(
        '"""Moved from orbit.store.db; see `agentcall.orbit.store.pool`."""\n'
        "# the old file: src/agentcall/orbit/store/pool.py, or store/db.py\n",
        encoding="utf-8",
    )
    (tree / "README.md").write_text(
        "See `agentcall.orbit.store.db.Database` and tests/unit/<service>/test_layers.py.\n",
        encoding="utf-8",
    )
    (tree / "docs" / "page.md").write_text(
        "Run `python -m agentcall.orbit.store.db`; it was `orbit/store/pool.py`, `pool.py`.\n",
        encoding="utf-8",
    )
    assert problems(tree) == [
        "src/agentcall/orbit/store/gone.py:1: orbit.store.db: "
        "a path from before the namespace: write agentcall.orbit.store.db",
        "src/agentcall/orbit/store/gone.py:1: agentcall.orbit.store.pool: "
        "no module agentcall.orbit.store.pool",
        "src/agentcall/orbit/store/gone.py:2: src/agentcall/orbit/store/pool.py: no such file",
        "docs/page.md:1: orbit/store/pool.py: no such file",
        "docs/page.md:1: pool.py: no such file",
    ]
