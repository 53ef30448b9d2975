"""The store's hot statements as data: the named queries of `queries.sql`, and the writes built
from rows (`Insert`, `Update`: one multi-row INSERT, one CASE UPDATE for many rows). Each is
written here once, with `:name` parameters; a connector (`agentcall.orbit.store.connector`) turns it
into its driver's SQL once per shape and runs it.

A conditional UPDATE that matches fewer rows than it names raises `ConcurrentChange`."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import Any

import sqlalchemy as sa

_NAME = re.compile(r"^-- name: (\w+)$", re.MULTILINE)
_FRAGMENT = re.compile(r"\{(\w+)\}")
_PLAIN = frozenset({str, int, bool, bytes, type(None), datetime})


class ConcurrentChange(RuntimeError):
    """A conditional update found the row changed under a lock: the transaction is rolled back
    and the message answered UNAVAILABLE (the worker resends it)."""


def _load(text: str) -> dict[str, str]:
    """`-- name: x` blocks; comment lines dropped, `{fragment}`s of this file filled in."""
    parts = _NAME.split(text)
    raw: dict[str, str] = {}
    for name, body in zip(parts[1::2], parts[2::2], strict=True):
        lines = [line for line in body.strip().splitlines() if not line.startswith("--")]
        raw[name] = " ".join(line.strip() for line in lines)

    def fill(match: re.Match[str]) -> str:
        name = match.group(1)
        return _FRAGMENT.sub(fill, raw[name]) if name in raw else match.group(0)

    return {name: _FRAGMENT.sub(fill, body) for name, body in raw.items()}


# queries.sql: the hot path; flow.sql: the lease path of flow-controlled queues;
# schedules.sql: the claims of due schedules
QUERIES: dict[str, str] = _load(
    "\n".join(
        (Path(__file__).parent / name).read_text("utf-8")
        for name in ("queries.sql", "flow.sql", "schedules.sql")
    )
)


class Increment:
    """`column = column + by` in a SET clause."""

    __slots__ = ("by",)

    def __init__(self, by: int = 1) -> None:
        self.by = by

    def __repr__(self) -> str:
        return f"Increment({self.by})"


@dataclass(frozen=True, slots=True)
class Insert:
    """One multi-row INSERT of `rows` (all with the same keys) into `table`."""

    table: sa.Table
    rows: Sequence[Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Update:
    """Rows matched by id and `where` (column = value), each set to its own values (a CASE on
    id; a column with one value everywhere is set plainly), plus `static` values for all of
    them (`Increment(n)` for `col = col + n`). Every row must match (`ConcurrentChange`)."""

    table: sa.Table
    rows: Sequence[Mapping[str, Any]]
    where: Mapping[str, Any] = field(default_factory=dict)
    static: Mapping[str, Any] = field(default_factory=dict)


Write = Insert | Update
Statement = tuple[str, list[Any]]  # SQL with `%s` marks and its values in order


@lru_cache(maxsize=1024)
def insert_text(table: str, names: tuple[str, ...], count: int = 1) -> str:
    """`INSERT INTO table (…) VALUES (%s, …), …` for `count` rows."""
    one = "(" + ", ".join(["%s"] * len(names)) + ")"
    return f"INSERT INTO {table} ({', '.join(names)}) VALUES " + ", ".join([one] * count)


def insert_statement(table: str, rows: Sequence[Mapping[str, Any]]) -> Statement:
    names = tuple(rows[0])
    return insert_text(table, names, len(rows)), [row[name] for row in rows for name in names]


def _all_same(values: list[Any]) -> bool:
    """One value for every row, bound once: plain values by type and equality (cheap, the hot
    path's states and times), anything else by its repr (a dict's key order counts)."""
    first = values[0]
    kind = type(first)
    if kind in _PLAIN:
        return all(type(value) is kind and value == first for value in values)
    return len({repr(value) for value in values}) == 1


def update_statement(write: Update) -> Statement:
    """`UPDATE table SET col = CASE id WHEN … END, static… WHERE id IN (…) AND where…`."""
    rows, sets, values = write.rows, [], []
    for name in sorted({name for row in rows for name in row if name != "id"}):
        pairs = [(row["id"], row[name]) for row in rows if name in row]
        if len(pairs) == len(rows) and _all_same([v for _, v in pairs]):
            sets.append(f"{name} = %s")
            values.append(pairs[0][1])
            continue
        sets.append(f"{name} = CASE id" + " WHEN %s THEN %s" * len(pairs) + f" ELSE {name} END")
        values.extend(item for pair in pairs for item in pair)
    for name, value in write.static.items():
        if isinstance(value, Increment):
            sets.append(f"{name} = {name} + {int(value.by)}")
        else:
            sets.append(f"{name} = %s")
            values.append(value)
    ids = [row["id"] for row in rows]
    sql = f"UPDATE {write.table.name} SET {', '.join(sets)} WHERE id IN ({marks(len(ids))})"
    values.extend(ids)
    for name, value in write.where.items():
        sql += f" AND {name} = %s"
        values.append(value)
    return sql, values


def write_statement(write: Write) -> Statement:
    if isinstance(write, Update):
        return update_statement(write)
    return insert_statement(write.table.name, write.rows)


def require_matched(write: Write, matched: int) -> None:
    """An UPDATE's rows are conditional on their state: fewer matches is a concurrent change."""
    if isinstance(write, Update) and matched != len(write.rows):
        raise ConcurrentChange(f"{write.table.name}: {matched} of {len(write.rows)} rows matched")


def marks(count: int) -> str:
    return ", ".join(["%s"] * count)


_PARAM = re.compile(r"(?<![:\w]):(\w+)|\{rows:(\w+)\}")


@dataclass(frozen=True, slots=True)
class Compiled:
    """A named query in `%s` form for one shape of its list parameters: the SQL, and for each
    mark the parameter it takes (with its index inside a list or row list)."""

    sql: str
    order: tuple[tuple[str, int, int], ...]  # (name, index in the list or -1, index in a row)

    def values(self, params: Mapping[str, Any]) -> list[Any]:
        out = []
        for name, index, column in self.order:
            value = params[name]
            if index >= 0:
                value = value[index]
                if column >= 0:
                    value = value[column]
            out.append(value)
        return out


Layout = tuple[tuple[str, int, int], ...]  # (parameter, list length or -1, row width)


def layout(params: Mapping[str, Any]) -> Layout:
    """What the SQL of a query depends on: each parameter, and the shape of a list one."""
    return tuple(
        (name, len(value), len(value[0]) if value and isinstance(value[0], tuple) else 0)
        if isinstance(value, list | tuple)
        else (name, -1, 0)
        for name, value in params.items()
    )


@lru_cache(maxsize=1024)
def compile_query(name: str, shape: Layout, fragments: Fragments) -> Compiled:
    """Query `name` with `%s` marks for parameters of `shape` (`layout`): a list parameter
    becomes one mark per item, a row list (`{rows:x}`) one `(%s, …)` per row, after `VALUES`
    when the dialect wants it (`fragments.values`); `{fragment}`s filled in."""
    sizes = {param: (length, width) for param, length, width in shape}
    order: list[tuple[str, int, int]] = []

    def mark(match: re.Match[str]) -> str:
        plain, rows = match.group(1), match.group(2)
        if rows is not None:
            length, width = sizes[rows]
            order.extend((rows, i, j) for i in range(length) for j in range(width))
            return fragments.values + ", ".join(["(" + marks(width) + ")"] * length)
        length, _ = sizes[plain]
        if length >= 0:
            order.extend((plain, i, -1) for i in range(length))
            return marks(length)
        order.append((plain, -1, -1))
        return "%s"

    sql = _PARAM.sub(mark, QUERIES[name])
    sql = _FRAGMENT.sub(lambda m: getattr(fragments, m.group(1)), sql)
    return Compiled(sql.replace("%s", fragments.mark), tuple(order))


@dataclass(frozen=True, slots=True)
class Fragments:
    """A dialect's pieces of SQL (see `queries.sql`) and its parameter mark."""

    for_update: str
    skip_locked: str
    least: str
    clock: str
    values: str  # before a list of row values: "" or "VALUES "
    mark: str  # "%s" or "?"
