"""One UPDATE for many rows: `SET col = CASE id WHEN … THEN … ELSE col END … WHERE id IN (…)`.
Drivers run an executemany UPDATE as one round trip per row; this keeps a batch of transitions
at a constant number of statements. Values are bound with the column's type (UTC times)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from orbit.workers.transitions import ConcurrentChange


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
    where: Sequence[sa.ColumnElement[bool]],
    static: Mapping[str, Any],
) -> None:
    """Update every row (matched by id and `where`) or raise ConcurrentChange."""
    if not rows:
        return
    ids = [row["id"] for row in rows]
    values = {**case_values(table, rows), **static}
    result = await conn.execute(table.update().where(table.c.id.in_(ids), *where).values(values))
    if result.rowcount != len(ids):
        raise ConcurrentChange(f"{table.name}: {result.rowcount} of {len(ids)} rows matched")
