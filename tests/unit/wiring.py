"""Where a service is assembled, read from the source with `ast` (nothing is imported).

Shared by the services' tests of their assembly: components receive their hooks through their
constructors, typed, and are never wired afterwards by assigning to another object's
attribute (`ops.on_accepted = hub.notify`, `self.waiters.on_failure = ...`) or by appending to
its lists (`metrics.before_scrape.append(...)`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

REGISTERS = frozenset({"append", "extend", "add", "insert"})


def _root_is_self(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id == "self"


def _own_statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterable[ast.AST]:
    """The nodes of `function` outside the functions and classes it defines (a closure runs
    later, per request, not while the service is assembled)."""
    pending: list[ast.AST] = list(function.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        yield node
        pending.extend(ast.iter_child_nodes(node))


def _late_hook(node: ast.AST) -> str | None:
    targets: list[ast.expr] = []
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, ast.AugAssign | ast.AnnAssign):
        targets = [node.target]
    for target in targets:
        if isinstance(target, ast.Attribute) and not _root_is_self(target.value):
            return f"{ast.unparse(target)} = ..."
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in REGISTERS
        and isinstance(node.func.value, ast.Attribute)
    ):
        return f"{ast.unparse(node.func)}(...)"
    return None


def late_hooks(path: Path, functions: Iterable[str]) -> list[str]:
    """Hooks set after construction in the assembly `functions` of the module at `path`
    (`name` for a module-level function, `Class.name` for a method)."""
    wanted = set(functions)
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found: list[str] = []
    scopes: list[tuple[str, ast.AST]] = [("", tree)]
    while scopes:
        prefix, scope = scopes.pop()
        for node in ast.iter_child_nodes(scope):
            if isinstance(node, ast.ClassDef):
                scopes.append((f"{prefix}{node.name}.", node))
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                name = prefix + node.name
                if name in wanted:
                    wanted.discard(name)
                    found.extend(
                        f"{path.name}:{getattr(child, 'lineno', 0)} {name}: {hook}"
                        for child in _own_statements(node)
                        if (hook := _late_hook(child)) is not None
                    )
    found.extend(f"{path.name}: no function {name}" for name in sorted(wanted))
    return sorted(found)
