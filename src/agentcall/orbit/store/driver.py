"""The execution kernel's hot statements on MySQL/MariaDB, as plain SQL on the driver
connection of the caller's SQLAlchemy transaction (worker-protocol.md §5 "Batching").

SQLAlchemy's expression building, compilation and async execution layer cost several times
the statements themselves (profiled: about 3 ms of server CPU per task through lease, start
and finish). The kernel's few statements are therefore written once here as `%s` SQL, with
rows returned as named tuples. Only identifiers from this module and `%s` parameters reach the
database. Driver errors are translated to SQLAlchemy's, so `Database.retrying` still sees
deadlocks and lock waits. SQLite keeps the SQLAlchemy Core path (the single-writer path)."""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from functools import cache
from typing import Any

import sqlalchemy as sa
from asyncmy import errors as asyncmy_errors
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.times import as_utc, to_naive_utc
from agentcall.orbit.store.db import Statement, insert_sql, raw_driver, run_script


class Increment:
    """`column = column + by` in a SET clause."""

    __slots__ = ("by",)

    def __init__(self, by: int = 1) -> None:
        self.by = by

    def __repr__(self) -> str:
        return f"Increment({self.by})"


async def fetch(
    conn: AsyncConnection, sql: str, values: Sequence[Any], names: tuple[str, ...]
) -> list[Any]:
    """Rows as named tuples with fields `names` (datetimes aware UTC)."""
    record = _record(names)
    rows = await execute(conn, sql, values)
    return [record._make(_result(v) for v in row) for row in rows]


async def execute(conn: AsyncConnection, sql: str, values: Sequence[Any]) -> list[tuple[Any, ...]]:
    """Run one statement; returns its rows (empty for writes); `rowcount` via `update`."""
    driver = await raw_driver(conn)
    bound = tuple(_bind(value) for value in values)
    try:
        async with driver.cursor() as cursor:
            await cursor.execute(sql, bound)
            return list(await cursor.fetchall()) if cursor.description else []
    except asyncmy_errors.Error as exc:
        raise sa.exc.DBAPIError.instance(sql, bound, exc, asyncmy_errors.Error) from exc


async def update(conn: AsyncConnection, sql: str, values: Sequence[Any]) -> int:
    """Run one UPDATE; the number of rows it matched (the MySQL dialect sets FOUND_ROWS)."""
    driver = await raw_driver(conn)
    bound = tuple(_bind(value) for value in values)
    try:
        async with driver.cursor() as cursor:
            return int(await cursor.execute(sql, bound))
    except asyncmy_errors.Error as exc:
        raise sa.exc.DBAPIError.instance(sql, bound, exc, asyncmy_errors.Error) from exc


async def insert(conn: AsyncConnection, table: str, rows: Sequence[Mapping[str, Any]]) -> None:
    """One multi-row INSERT (rows with the same keys)."""
    if not rows:
        return
    await execute(conn, *insert_sql(table, rows))


async def script(conn: AsyncConnection, statements: Sequence[Statement]) -> list[int]:
    """Several statements in one round trip, in order: a multi-statement query (asyncmy always
    negotiates CLIENT_MULTI_STATEMENTS). Returns the rows each one matched (FOUND_ROWS). The
    server stops at the first failing statement and that error is raised here; the caller's
    transaction then rolls back what the statements before it wrote."""
    if not statements:
        return []
    bound = [(sql, [_bind(value) for value in values]) for sql, values in statements]
    return await run_script(await raw_driver(conn), bound)


def bulk_update_sql(
    table: str,
    rows: Sequence[Mapping[str, Any]],
    where: Mapping[str, Any],
    static: Mapping[str, Any],
) -> Statement:
    """`UPDATE table SET col = CASE id WHEN … END, static… WHERE id IN (…) AND where…`."""
    sets: list[str] = []
    values: list[Any] = []
    columns = sorted({name for row in rows for name in row if name != "id"})
    for name in columns:
        pairs = [(row["id"], row[name]) for row in rows if name in row]
        if len(pairs) == len(rows) and len({repr(v) for _, v in pairs}) == 1:
            sets.append(f"{name} = %s")
            values.append(pairs[0][1])
            continue
        sets.append(f"{name} = CASE id" + " WHEN %s THEN %s" * len(pairs) + f" ELSE {name} END")
        values.extend(item for pair in pairs for item in pair)
    for name, value in static.items():
        if isinstance(value, Increment):
            sets.append(f"{name} = {name} + {int(value.by)}")
        else:
            sets.append(f"{name} = %s")
            values.append(value)
    ids = [row["id"] for row in rows]
    sql = f"UPDATE {table} SET {', '.join(sets)} WHERE id IN ({_marks(len(ids))})"
    values.extend(ids)
    for name, value in where.items():
        sql += f" AND {name} = %s"
        values.append(value)
    return sql, values


def _marks(count: int) -> str:
    return ", ".join(["%s"] * count)


def columns_of(table: sa.Table, prefix: str = "") -> tuple[str, ...]:
    return tuple(prefix + column.name for column in table.columns)


@cache
def _record(names: tuple[str, ...]) -> Any:
    return namedtuple("Record", names)  # noqa: PYI024 - fields come from the schema


def _bind(value: Any) -> Any:
    if not isinstance(value, datetime):
        return value
    return value.replace(tzinfo=None) if value.tzinfo is UTC else to_naive_utc(value)


def _result(value: Any) -> Any:
    """The driver returns naive datetimes, which the store keeps in UTC."""
    if not isinstance(value, datetime):
        return value
    return value.replace(tzinfo=UTC) if value.tzinfo is None else as_utc(value)


def names_of(columns: Iterable[str]) -> tuple[str, ...]:
    """Field names of a select list `a.x`, `t.y AS z` → (`x`, `z`)."""
    return tuple(column.split(" AS ")[-1].split(".")[-1] for column in columns)
