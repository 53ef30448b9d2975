"""Import graph of a package tree, read from the source with `ast` (nothing is imported).

Shared by the import-direction tests of each service: every import counts, including the ones
inside functions and under `TYPE_CHECKING`, because a cycle there is still a cycle in the design.
`from package import name` is an edge to the submodule `package.name` when that is a module,
otherwise to `package` itself.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src"

Graph = dict[str, set[str]]


def modules(root: str, src: Path = SRC) -> dict[str, Path]:
    """Every module below the dotted package `root`, by dotted name."""
    base = src.joinpath(*root.split("."))
    found: dict[str, Path] = {}
    for path in sorted(base.rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def outside(root: str, part: str, src: Path = SRC) -> dict[str, Path]:
    """The modules below `root` that are not in its part `part` (e.g. every module of a service
    but its store)."""
    inside = f"{root}.{part}"
    return {
        name: path
        for name, path in modules(root, src).items()
        if name != inside and not name.startswith(inside + ".")
    }


def trees(sources: Mapping[str, Path]) -> Iterator[tuple[str, ast.Module]]:
    """Each module's name and syntax tree, by name."""
    for name, path in sorted(sources.items()):
        yield name, ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def _absolute(module: str, path: Path, node: ast.ImportFrom) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if path.name != "__init__.py":
        base.pop()
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _targets(module: str, path: Path, known: Mapping[str, Path]) -> Iterable[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            origin = _absolute(module, path, node)
            for alias in node.names:
                child = f"{origin}.{alias.name}"
                yield child if child in known else origin


def graph(root: str, src: Path = SRC) -> Graph:
    """Edges between the modules below `root` (imports of other code are left out)."""
    known = modules(root, src)
    edges: Graph = {name: set() for name in known}
    for name, path in known.items():
        for target in _targets(name, path, known):
            if target in known and target != name:
                edges[name].add(target)
    return edges


def collapse(edges: Graph, depth: int) -> Graph:
    """The same graph between packages: names cut to their first `depth` parts."""
    out: Graph = {}
    for src_name, targets in edges.items():
        a = ".".join(src_name.split(".")[:depth])
        out.setdefault(a, set())
        for target in targets:
            b = ".".join(target.split(".")[:depth])
            if a != b:
                out[a].add(b)
    return out


def cycles(edges: Graph) -> list[list[str]]:
    """Strongly connected components with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for child in sorted(edges.get(node, ())):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            component = stack[stack.index(node) :]
            del stack[stack.index(node) :]
            if len(component) > 1:
                found.append(sorted(component))

    for start in sorted(edges):
        if start not in index:
            visit(start)
    return found


def layer_violations(edges: Graph, root: str, allowed: Mapping[str, set[str]]) -> list[str]:
    """Imports between the top-level parts of `root` that `allowed` does not list.

    `allowed[part]` names the parts that modules under `part` may import (a part always may
    import itself); a part missing from the table is reported, so a new package must be placed.
    """
    depth = len(root.split(".")) + 1
    found = []
    for src_name, targets in sorted(edges.items()):
        a = src_name.split(".")[depth - 1] if src_name.count(".") >= depth - 1 else ""
        if a not in allowed:
            found.append(f"{src_name}: '{a}' has no place in the layer table")
            continue
        for target in sorted(targets):
            b = target.split(".")[depth - 1] if target.count(".") >= depth - 1 else ""
            if b != a and b not in allowed[a]:
                found.append(f"{src_name} imports {target} ({a} -> {b} is against the layers)")
    return found
