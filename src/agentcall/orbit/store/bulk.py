"""One UPDATE for many rows: `SET col = CASE id WHEN … THEN … ELSE col END … WHERE id IN (…)`.
Drivers run an executemany UPDATE as one round trip per row; this keeps a batch of transitions
at a constant number of statements. `where` holds column = value conditions, `static` values
set on every row (`Increment(n)` for `col = col + n`). On MySQL/MariaDB the statement is plain
SQL on the driver (`orbit.store.driver`); on SQLite it is SQLAlchemy Core, values bound with
the column's type (UTC times).

`write_all` applies the writes of one transition batch (CASE updates and multi-row inserts)
together: on MySQL/MariaDB in one round trip, then checks that every UPDATE matched all its
rows; on SQLite one statement after the other."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.execution.transitions import ConcurrentChange
from agentcall.orbit.store import driver
from agentcall.orbit.store.db import Statement, insert_sql
from agentcall.orbit.store.driver import Increment

__all__ = ["Increment", "Insert", "Update", "bulk_update", "case_values", "write_all"]


def case_values(table: sa.Table, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """SET clauses for per-row values; a column set to one value everywhere stays a literal."""
    key = table.c.id
    columns = sorted({name for row in rows for name in row if name != "id"})
    values: dict[str, Any] = {}
    for name in columns:
        column = table.c[name]
        pairs = [(row["id"], row[name]) for row in rows if name in row]
        distinct = {repr(value) for _, value in pairs}
        if len(pairs) == len(rows) and len(distinct) == 1:
            values[name] = sa.bindparam(None, pairs[0][1], type_=column.type)
            continue
        whens = [
            (key == sa.bindparam(None, row_id, type_=key.type),
             sa.bindparam(None, value, type_=column.type))
            for row_id, value in pairs
        ]  # fmt: skip
        values[name] = sa.case(*whens, else_=column)
    return values


async def bulk_update(
    conn: AsyncConnection,
    table: sa.Table,
    rows: Sequence[Mapping[str, Any]],
    *,
    where: Mapping[str, Any],
    static: Mapping[str, Any],
) -> None:
    """Update every row (matched by id and `where`) or raise ConcurrentChange."""
    if not rows:
        return
    ids = [row["id"] for row in rows]
    if conn.dialect.name in ("mysql", "mariadb"):
        sql, values = driver.bulk_update_sql(table.name, rows, where, static)
        matched = await driver.update(conn, sql, values)
    else:
        conditions = [table.c[name] == value for name, value in where.items()]
        sets = {**case_values(table, rows), **{
            name: table.c[name] + value.by if isinstance(value, Increment) else value
            for name, value in static.items()}}  # fmt: skip
        result = await conn.execute(table.update().where(table.c.id.in_(ids), *conditions)
                                    .values(sets))  # fmt: skip
        matched = result.rowcount
    _require_matched(table, matched, len(ids))


def _require_matched(table: sa.Table, matched: int, expected: int) -> None:
    """An UPDATE's rows are conditional on their state: fewer matches is a concurrent change."""
    if matched != expected:
        raise ConcurrentChange(f"{table.name}: {matched} of {expected} rows matched")


@dataclass(frozen=True, slots=True)
class Update:
    """`bulk_update(table, rows, where=…, static=…)` as data, for `write_all`."""

    table: sa.Table
    rows: Sequence[Mapping[str, Any]]
    where: Mapping[str, Any] = field(default_factory=dict)
    static: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Insert:
    """One multi-row INSERT (rows with the same keys), for `write_all`."""

    table: sa.Table
    rows: Sequence[Mapping[str, Any]]


async def write_all(conn: AsyncConnection, writes: Sequence[Update | Insert]) -> None:
    """Apply `writes` in order inside the caller's transaction, or raise ConcurrentChange when
    an UPDATE did not match all its rows (the caller rolls the whole transaction back, so the
    writes sent with it never commit). On MySQL/MariaDB they go out as one multi-statement
    round trip (`driver.script`) instead of one round trip each."""
    writes = [write for write in writes if write.rows]
    if conn.dialect.name not in ("mysql", "mariadb"):
        for write in writes:
            if isinstance(write, Update):
                await bulk_update(conn, write.table, write.rows, where=write.where,
                                  static=write.static)  # fmt: skip
            else:
                await conn.execute(write.table.insert(), [dict(row) for row in write.rows])
        return
    counts = await driver.script(conn, [_statement(write) for write in writes])
    for write, matched in zip(writes, counts, strict=True):
        if isinstance(write, Update):
            _require_matched(write.table, matched, len(write.rows))


def _statement(write: Update | Insert) -> Statement:
    if isinstance(write, Update):
        return driver.bulk_update_sql(write.table.name, write.rows, write.where, write.static)
    return insert_sql(write.table.name, write.rows)
