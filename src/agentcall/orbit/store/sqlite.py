"""The SQLite connector: the store's statements through the SQLAlchemy connection's driver
(`exec_driver_sql`: no expression compilation), with `?` marks. Values are stored as
SQLAlchemy's SQLite types store them: datetimes as fixed-width ISO text in UTC
(`UtcDateTime`), which sorts correctly; every column whose name ends in `_at` is such a time
and comes back aware UTC. The single writer needs no row locks, so `{for_update}` and
`{skip_locked}` are empty. Writes run one statement after the other."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from functools import cache, lru_cache
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.times import to_naive_utc
from agentcall.orbit.store.rows import record
from agentcall.orbit.store.sql import (
    Fragments,
    Insert,
    Write,
    compile_query,
    insert_text,
    layout,
    require_matched,
    write_statement,
)

FRAGMENTS = Fragments("", "", "MIN", "strftime('%Y-%m-%d %H:%M:%f', 'now')", "VALUES ", "?")


@lru_cache(maxsize=1024)
def _question(sql: str) -> str:
    return sql.replace("%s", "?")


async def fetch(conn: AsyncConnection, name: str, params: Mapping[str, Any]) -> list[Any]:
    compiled = compile_query(name, layout(params), FRAGMENTS)
    result = await conn.exec_driver_sql(compiled.sql, _bound(compiled.values(params)))
    names = tuple(result.keys())
    make, times = record(names)._make, _times(names)
    rows = []
    for row in result.all():
        values = list(row)
        for index in times:
            if values[index] is not None:
                values[index] = _time(values[index])
        rows.append(make(values))
    return rows


async def execute(conn: AsyncConnection, name: str, params: Mapping[str, Any]) -> int:
    compiled = compile_query(name, layout(params), FRAGMENTS)
    result = await conn.exec_driver_sql(compiled.sql, _bound(compiled.values(params)))
    return int(result.rowcount)


async def write_all(conn: AsyncConnection, writes: Sequence[Write]) -> None:
    for write in writes:
        if not write.rows:
            continue
        if isinstance(write, Insert):
            await _insert(conn, write)
            continue
        sql, values = write_statement(write)
        result = await conn.exec_driver_sql(_question(sql), _bound(values))
        require_matched(write, int(result.rowcount))


async def insert_all(conn: AsyncConnection, inserts: Sequence[Insert]) -> None:
    for insert in inserts:
        if insert.rows:
            await _insert(conn, insert)


async def _insert(conn: AsyncConnection, insert: Insert) -> None:
    names = tuple(insert.rows[0])
    sql = _question(insert_text(insert.table.name, names))
    await conn.exec_driver_sql(sql, [_bound([row[n] for n in names]) for row in insert.rows])


def _bound(values: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(_bind(value) if isinstance(value, datetime) else value for value in values)


def _bind(value: datetime) -> str:
    """As SQLAlchemy's SQLite DATETIME stores it: `YYYY-MM-DD HH:MM:SS.ffffff`, UTC."""
    return to_naive_utc(value).isoformat(" ", "microseconds")


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


@cache
def _times(names: tuple[str, ...]) -> tuple[int, ...]:
    return tuple(index for index, name in enumerate(names) if name.endswith("_at"))
