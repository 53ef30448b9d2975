"""The MySQL/MariaDB connector: the store's statements as plain `%s` SQL on the asyncmy driver
connection, either a `DriverSession` of `Database.hot_write` or the one under a SQLAlchemy
transaction (read directly, without the greenlet hop of `get_raw_connection()`).

SQLAlchemy's expression building, compilation and async execution layer cost several times
the statements themselves (profiled: 0.6-0.75 ms CPU per statement against 0.1-0.2 ms on the
driver; about 3 ms of server CPU per task through lease, start and finish). Only identifiers
of `agentcall.orbit.store.sql` and `%s` parameters reach the database. Driver errors are translated
to SQLAlchemy's, so duplicate and transient detection (`Database.retrying`) is unchanged."""

from __future__ import annotations

import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from asyncmy import errors as asyncmy_errors
from asyncmy.constants import FIELD_TYPE
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.times import to_naive_utc
from agentcall.orbit.store.driver_pool import DriverSession
from agentcall.orbit.store.rows import record
from agentcall.orbit.store.sql import (
    Fragments,
    Insert,
    Statement,
    Write,
    compile_query,
    insert_text,
    layout,
    require_matched,
    write_statement,
)
from agentcall.orbit.store.types import UtcDateTime

HotConnection = AsyncConnection | DriverSession
# asyncmy raises AttributeError when a statement is sent on a connection it already closed
# (its transport is gone), as SQLAlchemy's own asyncmy adapter notes
DRIVER_ERRORS = (asyncmy_errors.Error, AttributeError)
FRAGMENTS = Fragments(
    " FOR UPDATE", " FOR UPDATE SKIP LOCKED", "LEAST", "UTC_TIMESTAMP(6)", "", "%s"
)
# The driver's column types whose values come back as naive datetimes (the store keeps UTC).
_TIME_TYPES = frozenset({FIELD_TYPE.DATETIME, FIELD_TYPE.TIMESTAMP})
_TIMES: dict[tuple[str, tuple[str, ...]], tuple[int, ...]] = {}
# Queries sent as plain text even where the connection prepares statements: the attempts of a
# batch of starts or results (`IN (:ids)`) make a text of their own for every batch size (up
# to 128), too many for the statement cache, so preparing them would cost one more round trip
# nearly every time.
_AS_TEXT = frozenset({"live_attempts", "clocked_live_attempts"})


async def driver_of(conn: HotConnection) -> Any:
    if isinstance(conn, DriverSession):
        if conn.ended:
            raise RuntimeError("this transaction was committed with its last writes")
        return conn.driver
    return await raw_driver(conn)


async def raw_driver(conn: AsyncConnection) -> Any:
    """The asyncmy connection under `conn` (`checked_out_driver`, else awaited)."""
    driver = checked_out_driver(conn)
    if driver is None:
        driver = (await conn.get_raw_connection()).driver_connection
    assert driver is not None
    return driver


def checked_out_driver(conn: AsyncConnection) -> Any | None:
    """The driver connection of a connection that holds one (inside a transaction): read
    directly, without the greenlet hop of `get_raw_connection()` (~30 µs per statement on
    this machine); None when only that call can tell (not started, closed, invalidated)."""
    sync = conn.sync_connection
    if sync is None or sync.closed or sync.invalidated or not sync.in_transaction():
        return None
    return sync.connection.driver_connection


async def fetch(conn: HotConnection, name: str, params: Mapping[str, Any]) -> list[Any]:
    """The rows of query `name` as named tuples (datetimes aware UTC).

    A `DriverSession`'s connection runs a statement with parameters as a prepared statement
    (the driver's cache of `driver_pool.STATEMENT_CACHE`), except the queries of `_AS_TEXT`."""
    compiled = compile_query(name, layout(params), FRAGMENTS)
    bound = tuple(_bind(value) for value in compiled.values(params))
    driver = await driver_of(conn)
    try:
        async with driver.cursor() as cursor:
            if name in _AS_TEXT:
                await cursor.execute(cursor.mogrify(compiled.sql, bound))
            else:
                await cursor.execute(compiled.sql, bound)
            rows = await cursor.fetchall()
            description = cursor.description or ()
    except DRIVER_ERRORS as exc:
        raise translated(compiled.sql, bound, exc) from exc
    make = record(tuple(column[0] for column in description))._make
    times = [index for index, column in enumerate(description) if column[1] in _TIME_TYPES]
    return aware_rows(rows, times, make)


def aware_rows(
    rows: Sequence[Sequence[Any]], times: Sequence[int], make: Callable[[Iterable[Any]], Any]
) -> list[Any]:
    """The driver's rows made records, the datetimes of the columns `times` aware UTC (the
    driver's are naive, in UTC as the store keeps them); NULLs stay None."""
    if not times:
        return [make(row) for row in rows]
    made = []
    for row in rows:  # only the datetime columns change (hot path: attempts, leases)
        values = list(row)
        for index in times:
            if isinstance(value := values[index], datetime):
                values[index] = value.replace(tzinfo=UTC)
        made.append(make(values))
    return made


async def execute(conn: HotConnection, name: str, params: Mapping[str, Any]) -> int:
    """Run write `name`; the rows it matched (the MySQL dialect sets FOUND_ROWS)."""
    compiled = compile_query(name, layout(params), FRAGMENTS)
    return await _execute(conn, compiled.sql, compiled.values(params))


async def _execute(conn: HotConnection, sql: str, values: Sequence[Any]) -> int:
    bound = tuple(_bind(value) for value in values)
    driver = await driver_of(conn)
    try:
        async with driver.cursor() as cursor:
            return int(await cursor.execute(sql, bound))
    except DRIVER_ERRORS as exc:
        raise translated(sql, bound, exc) from exc


async def write_all(conn: HotConnection, writes: Sequence[Write], *, commit: bool = False) -> None:
    """The writes as ONE multi-statement round trip, then every UPDATE must have matched all
    its rows (`ConcurrentChange`; the caller's transaction rolls back). With `commit` on a
    `hot_write` session the COMMIT goes in the same round trip (see `connector.commit_with`:
    only for UPDATEs of rows the transaction holds locked, which cannot come up short)."""
    writes = [write for write in writes if write.rows]
    if not writes:
        return
    statements = [write_statement(w) for w in writes]
    ends = commit and isinstance(conn, DriverSession)
    if ends:
        statements.append(("COMMIT", []))
    counts = await run_script(await driver_of(conn), statements)
    if ends:
        assert isinstance(conn, DriverSession)
        conn.ended = True
    for write, matched in zip(writes, counts[: len(writes)], strict=True):
        require_matched(write, matched)


async def insert_all(
    conn: HotConnection, inserts: Sequence[Write], *, one_trip: bool, commit: bool
) -> None:
    """See `agentcall.orbit.store.connector.insert_all`."""
    inserts = [insert for insert in inserts if insert.rows]
    if not one_trip:
        for insert in inserts:
            if isinstance(insert, Insert):
                await _insert_bulk(conn, insert)
            else:
                require_matched(insert, await _execute(conn, *write_statement(insert)))
        return
    if not inserts:
        return
    statements = [write_statement(i) for i in inserts]
    ends = commit and isinstance(conn, DriverSession)
    if ends:
        statements.append(("COMMIT", []))
    counts = await run_script(await driver_of(conn), statements)
    if ends:
        assert isinstance(conn, DriverSession)
        conn.ended = True
    for write, matched in zip(inserts, counts[: len(inserts)], strict=True):
        require_matched(write, matched)


async def _insert_bulk(conn: HotConnection, insert: Insert) -> None:
    """One INSERT for many rows: the driver sends them as one statement (a multi-row INSERT,
    or one bulk command in the binary protocol, no escaping of payload texts)."""
    rows = insert.rows
    # columns that are NULL in every row are left out (they default to NULL): the bulk
    # command needs a concrete type for each column it sends
    names = tuple(
        key
        for key, value in rows[0].items()
        if value is not None or any(row[key] is not None for row in rows)
    )
    sql = insert_text(insert.table.name, names)
    values = _bound_rows(insert.table, names, rows)
    driver = await driver_of(conn)
    try:
        async with driver.cursor() as cursor:
            await cursor.executemany(sql, values)
    except DRIVER_ERRORS as exc:
        raise translated(sql, values, exc) from exc


async def run_script(driver: Any, statements: Sequence[Statement]) -> list[int]:
    """Several statements in one round trip, in order: a multi-statement query (asyncmy always
    negotiates CLIENT_MULTI_STATEMENTS). Returns the rows each one matched (FOUND_ROWS). The
    server stops at the first failing statement and that error is raised here, as
    SQLAlchemy's; the caller's transaction then rolls back what the statements before it
    wrote. Always sent as text: a connection that prepares statements would first try to
    prepare the script, which the server refuses (one wasted round trip per script)."""
    sql = ";\n".join(text for text, _ in statements)
    bound = _script_values(statements)
    try:
        async with driver.cursor() as cursor:
            counts = [int(await cursor.execute(cursor.mogrify(sql, bound)))]
            while await cursor.nextset():
                counts.append(int(cursor.rowcount))
    except DRIVER_ERRORS as exc:
        raise translated(sql, bound, exc) from exc
    if len(counts) != len(statements):
        raise sa.exc.InterfaceError(
            sql, bound, RuntimeError(f"{len(counts)} results for {len(statements)} statements")
        )
    return counts


def translated(sql: str, bound: Any, exc: Exception) -> sa.exc.StatementError:
    """A driver error as SQLAlchemy's (duplicate, transient and lost-connection detection are
    shared); an AttributeError of a closed connection as asyncmy's "Not connected"."""
    if isinstance(exc, AttributeError):
        exc = asyncmy_errors.InterfaceError(0, f"Not connected ({exc})")
    return sa.exc.DBAPIError.instance(sql, bound, exc, asyncmy_errors.Error)


def _bound_rows(
    table: sa.Table, names: tuple[str, ...], rows: Sequence[Mapping[str, Any]]
) -> list[list[Any]]:
    """Values in `names` order; only the datetime columns are converted (naive UTC)."""
    key = (table.name, names)
    times = _TIMES.get(key)
    if times is None:
        times = tuple(
            i for i, name in enumerate(names) if isinstance(table.c[name].type, UtcDateTime)
        )
        _TIMES[key] = times
    pick = operator.itemgetter(*names)
    bound = []
    naive: dict[datetime, datetime] = {}  # a group's rows share most of their times
    for row in rows:
        values = list(pick(row)) if len(names) > 1 else [pick(row)]
        for index in times:
            value = values[index]
            if value is not None:
                converted = naive.get(value)
                if converted is None:
                    converted = naive[value] = to_naive_utc(value)
                values[index] = converted
        bound.append(values)
    return bound


def _script_values(statements: Sequence[Statement]) -> tuple[Any, ...]:
    """The values of a script in order, each datetime as its text (naive UTC, to the
    microsecond), which the column reads back exactly: the driver escapes a datetime at about
    eight times the cost of a string (2.4 µs against 0.3 here), and the rows of a batch share
    most of their times, so each distinct one is written out once."""
    texts: dict[datetime, str] = {}
    bound = []
    for _, values in statements:
        for value in values:
            if isinstance(value, datetime):
                text = texts.get(value)
                if text is None:
                    text = texts[value] = _bind(value).isoformat(" ", "microseconds")
                value = text
            bound.append(value)
    return tuple(bound)


def _bind(value: Any) -> Any:
    if not isinstance(value, datetime):
        return value
    return value.replace(tzinfo=None) if value.tzinfo is UTC else to_naive_utc(value)
