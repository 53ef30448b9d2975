"""One UPDATE for many rows: `SET col = CASE id WHEN … THEN … ELSE col END … WHERE id IN (…)`.
Drivers run an executemany UPDATE as one round trip per row; this keeps a batch of transitions
at a constant number of statements. `where` holds column = value conditions, `static` values
set on every row (`Increment(n)` for `col = col + n`). On MySQL/MariaDB the statement is plain
SQL on the driver (`orbit.workers.driver`); on SQLite it is SQLAlchemy Core, values bound with
the column's type (UTC times)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from orbit.workers import driver
from orbit.workers.driver import Increment
from orbit.workers.transitions import ConcurrentChange

__all__ = ["Increment", "bulk_update", "case_values"]


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
    if matched != len(ids):
        raise ConcurrentChange(f"{table.name}: {matched} of {len(ids)} rows matched")
