"""The one way the store runs its hot statements: `fetch` and `execute` a named query of
`queries.sql`, `write_all` a transition's writes, `insert_all` a group's new rows. Each
statement is written once (`agentcall.orbit.store.sql`); the connector of the connection's dialect
(`agentcall.orbit.store.mysql` on the driver connection, `agentcall.orbit.store.sqlite` through
SQLAlchemy's) turns it into its driver's SQL and runs it inside the caller's transaction. Rows come
back as named tuples, datetimes aware UTC."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.store import mysql, sqlite
from agentcall.orbit.store.driver_pool import DriverSession
from agentcall.orbit.store.sql import Write

HotConnection = AsyncConnection | DriverSession
Params = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Connector:
    """The statements of one dialect (module functions of `mysql` or `sqlite`)."""

    fetch: Callable[[Any, str, Params], Awaitable[list[Any]]]
    execute: Callable[[Any, str, Params], Awaitable[int]]
    write_all: Callable[[Any, Sequence[Write]], Awaitable[None]]
    insert_all: Callable[[Any, Sequence[Write], bool, bool], Awaitable[None]]


async def _sqlite_inserts(
    conn: AsyncConnection, inserts: Sequence[Write], one_trip: bool, commit: bool
) -> None:
    await sqlite.write_all(conn, inserts)


async def _mysql_inserts(
    conn: HotConnection, inserts: Sequence[Write], one_trip: bool, commit: bool
) -> None:
    await mysql.insert_all(conn, inserts, one_trip=one_trip, commit=commit)


MYSQL = Connector(mysql.fetch, mysql.execute, mysql.write_all, _mysql_inserts)
SQLITE = Connector(sqlite.fetch, sqlite.execute, sqlite.write_all, _sqlite_inserts)


def connector(conn: HotConnection) -> Connector:
    if isinstance(conn, DriverSession) or conn.dialect.name in ("mysql", "mariadb"):
        return MYSQL
    return SQLITE


async def fetch(conn: HotConnection, name: str, params: Params) -> list[Any]:
    """The rows of named query `name`."""
    return await connector(conn).fetch(conn, name, params)


async def execute(conn: HotConnection, name: str, params: Params) -> int:
    """Run the named write `name`; the number of rows it matched."""
    return await connector(conn).execute(conn, name, params)


async def write_all(conn: HotConnection, writes: Sequence[Write]) -> None:
    """Apply `writes` in order inside the caller's transaction, or raise ConcurrentChange when
    an UPDATE did not match all its rows (the caller rolls the whole transaction back, so the
    writes sent with it never commit). On MySQL/MariaDB they go out as one multi-statement
    round trip instead of one round trip each."""
    await connector(conn).write_all(conn, writes)


async def commit_with(conn: HotConnection, writes: Sequence[Write]) -> None:
    """`write_all`, and on a MySQL/MariaDB `hot_write` session the transaction's COMMIT in the
    same round trip (the statements run in order and stop at the first failure, so COMMIT runs
    only after all of them succeeded). Only for writes whose UPDATEs cannot come up short: rows
    this transaction read with a lock (the matched counts are still checked, but after the
    commit). Elsewhere the caller's transaction commits as usual."""
    if isinstance(conn, DriverSession):
        await mysql.write_all(conn, writes, commit=True)
    else:
        await write_all(conn, writes)


async def insert_all(
    conn: HotConnection,
    inserts: Sequence[Write],
    *,
    one_trip: bool = False,
    commit: bool = False,
) -> None:
    """The INSERTs in order, inside the caller's transaction (and UPDATEs among them, of rows
    this transaction holds locked: with `commit` they cannot come up short).

    On MySQL/MariaDB with `one_trip` (the caller's few rows: the lone submit of a quiet
    server) they go out as ONE multi-statement round trip instead of one each, and with
    `commit=True` on a `hot_write` session the transaction's COMMIT goes in the same round
    trip: the server runs the statements in order and stops at the first failure, so COMMIT
    runs only after all of them succeeded; a failure leaves the transaction open and the
    session's connection is closed, which rolls it back. On an idle 2-core machine every round
    trip also wakes two processes, so this is most of a single submit's latency after its
    clock read. Otherwise each INSERT goes as one bulk command (binary protocol, no escaping
    of payload texts) and the commit stays the session's own: measured with
    `bench/orbit_submit.py` (groups of ~5), the text script for groups of up to 4 submits cost
    0.41-0.54 ms of server CPU per submit against 0.37-0.41 ms in bulk, and fewer submits/s.
    SQLite: one after the other."""
    await connector(conn).insert_all(conn, inserts, one_trip, commit)
