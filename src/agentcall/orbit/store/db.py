"""The database handle: engine creation, dialect differences, transactions and the clock.

Dialect differences live here only:
- SQLite: WAL, `synchronous=FULL`, foreign keys on; one writer at a time in this process (an
  asyncio lock) and `BEGIN IMMEDIATE` for writes, so writers never deadlock on lock upgrades;
  other processes wait on `busy_timeout`. The clock is `strftime('%f')` (milliseconds).
- MySQL/MariaDB: READ COMMITTED, utf8mb4, `UTC_TIMESTAMP(6)` as the clock.
Transient failures (deadlock, lock wait timeout, "database is locked") are retried a few times
as a whole transaction by `Database.retrying`; anything else surfaces as `Unavailable`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import operator
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

import sqlalchemy as sa
from asyncmy import errors as asyncmy_errors
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine

from agentcall.orbit.domain.errors import SetupError, Unavailable
from agentcall.orbit.domain.times import as_utc, to_naive_utc
from agentcall.orbit.store.driver_pool import DriverPool, DriverSession
from agentcall.orbit.store.types import UtcDateTime

T = TypeVar("T")
DEFAULT_URL = "sqlite+aiosqlite:///var/orbit.db"
_MYSQL_DUPLICATE, _MYSQL_DEADLOCK, _MYSQL_LOCK_WAIT = 1062, 1213, 1205
MYSQL_CLOCK = "UTC_TIMESTAMP(6)"  # the database clock on MySQL/MariaDB
_MYSQL_NOW = sa.text(f"SELECT {MYSQL_CLOCK}")


class Dialect(enum.StrEnum):
    SQLITE = "sqlite"
    MYSQL = "mysql"


class Database:
    def __init__(
        self, engine: AsyncEngine, dialect: Dialect, reader: AsyncEngine | None = None
    ) -> None:
        self.engine = engine
        self.dialect = dialect
        self._reader = reader
        self._write_lock = asyncio.Lock() if dialect is Dialect.SQLITE else None
        self._drivers: DriverPool | None = None
        if dialect is Dialect.MYSQL:
            self._drivers = DriverPool(engine.url, engine.dialect)

    @classmethod
    def open(cls, url: str, *, pool_size: int = 20) -> Database:
        parsed = make_url(url)
        if parsed.drivername == "sqlite+aiosqlite":
            return cls(_sqlite_engine(parsed), Dialect.SQLITE)
        if parsed.drivername == "mysql+asyncmy":
            return cls(
                _mysql_engine(parsed, pool_size),
                Dialect.MYSQL,
                _mysql_engine(parsed, pool_size, autocommit=True),
            )
        raise SetupError(
            f"unsupported database URL scheme {parsed.drivername!r}: use sqlite+aiosqlite:///PATH "
            "or mysql+asyncmy://USER:PASSWORD@HOST:PORT/DATABASE"
        )

    async def close(self) -> None:
        if self._drivers is not None:
            await self._drivers.close()
        await self.engine.dispose()
        if self._reader is not None:
            await self._reader.dispose()

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """One write transaction; commits on success, rolls back on any exception."""
        async with self._writer():
            async with self.engine.connect() as conn:
                if self.dialect is Dialect.SQLITE:
                    await conn.execution_options(orbit_begin="BEGIN IMMEDIATE")
                async with conn.begin():
                    yield conn

    @contextlib.asynccontextmanager
    async def hot_write(self) -> AsyncIterator[HotConnection]:
        """A write transaction for `hot_execute*` statements only: `write()` on SQLite; on
        MySQL/MariaDB a dedicated driver connection (`orbit.store.driver_pool`)."""
        if self._drivers is None:
            async with self.write() as conn:
                yield conn
        else:
            async with self._drivers.transaction() as session:
                yield session

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn, conn.begin():
            yield conn

    @contextlib.asynccontextmanager
    async def single_read(self) -> AsyncIterator[AsyncConnection]:
        """For one-statement reads (token lookup, get, list page): on MySQL/MariaDB an
        autocommit connection (no BEGIN/COMMIT/reset round trips); elsewhere `read()`."""
        if self._reader is None:
            async with self.read() as conn:
                yield conn
        else:
            async with self._reader.connect() as conn:
                yield conn

    @contextlib.asynccontextmanager
    async def _writer(self) -> AsyncIterator[None]:
        if self._write_lock is None:
            yield
        else:
            async with self._write_lock:
                yield

    async def now(self, conn: HotConnection) -> datetime:
        """The database clock, aware UTC: the authority for acceptance times."""
        if self.dialect is Dialect.MYSQL:
            (value,), = await hot_execute(conn, _MYSQL_NOW, {})
            assert isinstance(value, datetime)
            return value
        assert isinstance(conn, AsyncConnection)
        query = sa.text("SELECT strftime('%Y-%m-%dT%H:%M:%f', 'now')")
        text = (await conn.execute(query)).scalar_one()
        return datetime.fromisoformat(str(text)).replace(tzinfo=UTC)

    def is_duplicate(self, exc: BaseException) -> bool:
        if not isinstance(exc, sa.exc.IntegrityError):
            return False
        if self.dialect is Dialect.MYSQL:
            return _mysql_code(exc) == _MYSQL_DUPLICATE
        return "UNIQUE constraint failed" in str(exc.orig)

    def is_transient(self, exc: BaseException) -> bool:
        if not isinstance(exc, sa.exc.DBAPIError):
            return False
        if self.dialect is Dialect.MYSQL:
            return _mysql_code(exc) in (_MYSQL_DEADLOCK, _MYSQL_LOCK_WAIT)
        return "database is locked" in str(exc.orig)

    async def retrying(self, operation: Callable[[], Awaitable[T]], attempts: int = 4) -> T:
        """Run a whole transaction again on transient lock failures; map driver errors to
        Unavailable (the outcome of a failed commit is unknown to the caller)."""
        for attempt in range(attempts):
            try:
                return await operation()
            except (sa.exc.DBAPIError, OSError) as exc:
                if self.is_transient(exc) and attempt + 1 < attempts:
                    await asyncio.sleep(0.005 * (attempt + 1))
                    continue
                raise Unavailable("the database is unavailable; retry with the same key") from exc
        raise AssertionError("unreachable")


# ---- the hot path ------------------------------------------------------------------------
# On MySQL/MariaDB, SQLAlchemy's async execution layer costs several times the statement
# itself (measured: 0.6-0.75 ms CPU per statement against 0.1-0.2 ms on the driver). The few
# statements of every submit and token lookup therefore run on the driver connection of the
# same SQLAlchemy transaction, with SQL compiled once from the same Core statements. Driver
# errors are translated to SQLAlchemy's, so duplicate/transient detection is unchanged.

HotStatement = sa.Insert | sa.Update | sa.Select[Any] | sa.TextClause
_COMPILED: dict[tuple[int, tuple[str, ...]], tuple[str, tuple[str, ...]]] = {}


HotConnection = AsyncConnection | DriverSession


async def _driver(conn: HotConnection) -> tuple[Any, sa.Dialect]:
    if isinstance(conn, DriverSession):
        if conn.ended:
            raise RuntimeError("this transaction was committed with its last writes")
        return conn.driver, conn.dialect
    return await raw_driver(conn), conn.dialect


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


Statement = tuple[str, Sequence[Any]]  # `%s` SQL and its values, bound for the driver


def insert_sql(table: str, rows: Sequence[Mapping[str, Any]]) -> Statement:
    """`INSERT INTO table (…) VALUES (…), (…)` for rows with the same keys."""
    names = tuple(rows[0])
    one = "(" + ", ".join(["%s"] * len(names)) + ")"
    sql = f"INSERT INTO {table} ({', '.join(names)}) VALUES " + ", ".join([one] * len(rows))
    return sql, [row[name] for row in rows for name in names]


async def run_script(driver: Any, statements: Sequence[Statement]) -> list[int]:
    """Several statements in one round trip, in order: a multi-statement query (asyncmy always
    negotiates CLIENT_MULTI_STATEMENTS). Returns the rows each one matched (FOUND_ROWS). The
    server stops at the first failing statement and that error is raised here, as
    SQLAlchemy's; the caller's transaction then rolls back what the statements before it
    wrote."""
    sql = ";\n".join(text for text, _ in statements)
    bound = tuple(value for _, values in statements for value in values)
    try:
        async with driver.cursor() as cursor:
            counts = [int(await cursor.execute(sql, bound))]
            while await cursor.nextset():
                counts.append(int(cursor.rowcount))
    except asyncmy_errors.Error as exc:
        raise sa.exc.DBAPIError.instance(sql, bound, exc, asyncmy_errors.Error) from exc
    if len(counts) != len(statements):
        raise sa.exc.InterfaceError(sql, bound, RuntimeError(
            f"{len(counts)} results for {len(statements)} statements"))  # fmt: skip
    return counts


def _on_driver(conn: HotConnection) -> bool:
    return isinstance(conn, DriverSession) or conn.dialect.name in ("mysql", "mariadb")


async def hot_execute(
    conn: HotConnection, statement: HotStatement, params: Mapping[str, Any]
) -> list[tuple[Any, ...]]:
    """Execute a prebuilt Core statement; rows as tuples (datetimes aware UTC)."""
    if not _on_driver(conn):
        assert isinstance(conn, AsyncConnection)
        result = await conn.execute(statement, dict(params))
        return [tuple(row) for row in result.all()] if result.returns_rows else []
    driver, dialect = await _driver(conn)
    sql, names = _compiled(dialect, statement, params)
    values = tuple(_bind(params[name]) for name in names)
    try:
        async with driver.cursor() as cursor:
            await cursor.execute(sql, values)
            rows = await cursor.fetchall() if cursor.description else ()
    except asyncmy_errors.Error as exc:
        raise sa.exc.DBAPIError.instance(sql, values, exc, asyncmy_errors.Error) from exc
    return [tuple(_result(value) for value in row) for row in rows]


async def hot_execute_many(
    conn: HotConnection, statement: sa.Insert, rows: Sequence[Mapping[str, Any]]
) -> None:
    """One prebuilt INSERT for many rows (all with the same keys): on MySQL/MariaDB the
    driver sends them as one statement (a multi-row INSERT, or one bulk command)."""
    if not rows:
        return
    if not _on_driver(conn):
        assert isinstance(conn, AsyncConnection)
        await conn.execute(statement, [dict(row) for row in rows])
        return
    driver, dialect = await _driver(conn)
    # columns that are NULL in every row are left out (they default to NULL): the bulk
    # command needs a concrete type for each column it sends
    first = rows[0]
    present = {key: None for key, value in first.items()
               if value is not None or any(row[key] is not None for row in rows)}  # fmt: skip
    sql, names = _compiled(dialect, statement, present)
    values = _bound_rows(statement, names, rows)
    try:
        async with driver.cursor() as cursor:
            await cursor.executemany(sql, values)
    except asyncmy_errors.Error as exc:
        raise sa.exc.DBAPIError.instance(sql, values, exc, asyncmy_errors.Error) from exc


@dataclass(frozen=True, slots=True)
class InsertRows:
    """A prebuilt INSERT and its rows (all with the same keys), for `hot_insert_all`."""

    statement: sa.Insert
    rows: Sequence[Mapping[str, Any]]


async def hot_insert_all(
    conn: HotConnection, inserts: Sequence[InsertRows], *, one_trip: bool = False,
    commit: bool = False,
) -> None:  # fmt: skip
    """The INSERTs in order, inside the caller's transaction.

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
    inserts = [insert for insert in inserts if insert.rows]
    if not inserts or not _on_driver(conn) or not one_trip:
        for insert in inserts:
            await hot_execute_many(conn, insert.statement, insert.rows)
        return
    driver, _ = await _driver(conn)
    statements: list[Statement] = []
    for insert in inserts:
        sql, values = insert_sql(insert.statement.table.name, insert.rows)
        statements.append((sql, [_bind(value) for value in values]))
    ends = commit and isinstance(conn, DriverSession)
    if ends:
        statements.append(("COMMIT", []))
    await run_script(driver, statements)
    if ends:
        assert isinstance(conn, DriverSession)
        conn.ended = True


def _compiled(
    dialect: sa.Dialect, statement: HotStatement, params: Mapping[str, Any]
) -> tuple[str, tuple[str, ...]]:
    key = (id(statement), tuple(params))
    found = _COMPILED.get(key)
    if found is None:
        compiled = statement.compile(dialect=dialect, column_keys=list(params))
        found = (str(compiled), tuple(compiled.positiontup or ()))
        _COMPILED[key] = found
    return found


_TIMES: dict[tuple[int, tuple[str, ...]], tuple[int, ...]] = {}


def _bound_rows(
    statement: sa.Insert, names: tuple[str, ...], rows: Sequence[Mapping[str, Any]]
) -> list[list[Any]]:
    """Values in statement order; only the datetime columns are converted (naive UTC)."""
    key = (id(statement), names)
    times = _TIMES.get(key)
    if times is None:
        columns = statement.table.c
        times = tuple(i for i, name in enumerate(names)
                      if isinstance(columns[name].type, UtcDateTime))  # fmt: skip
        _TIMES[key] = times
    pick = operator.itemgetter(*names)
    bound = []
    naive: dict[datetime, datetime] = {}  # a group's rows share most of their times
    for row in rows:
        values = list(pick(row))
        for index in times:
            value = values[index]
            if value is not None:
                converted = naive.get(value)
                if converted is None:
                    converted = naive[value] = to_naive_utc(value)
                values[index] = converted
        bound.append(values)
    return bound


def _bind(value: Any) -> Any:
    return to_naive_utc(value) if isinstance(value, datetime) else value


def _result(value: Any) -> Any:
    return as_utc(value) if isinstance(value, datetime) else value


def _mysql_code(exc: sa.exc.DBAPIError) -> int | None:
    args = getattr(exc.orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None


def _sqlite_engine(url: sa.URL) -> AsyncEngine:
    if url.database and url.database != ":memory:":
        Path(url.database).parent.mkdir(parents=True, exist_ok=True)
    engine = create_async_engine(url, pool_size=8, max_overflow=8)

    @event.listens_for(engine.sync_engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        for pragma in ("journal_mode=WAL", "synchronous=FULL", "foreign_keys=ON",
                       "busy_timeout=10000"):  # fmt: skip
            cursor.execute(f"PRAGMA {pragma}")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def _begin(conn: sa.Connection) -> None:
        conn.exec_driver_sql(conn.get_execution_options().get("orbit_begin", "BEGIN"))

    return engine


def _mysql_engine(url: sa.URL, pool_size: int, *, autocommit: bool = False) -> AsyncEngine:
    if "charset" not in url.query:
        url = url.update_query_dict({"charset": "utf8mb4"})
    if autocommit:  # never inside a transaction, so nothing to reset on return
        half = max(2, pool_size // 2)
        return create_async_engine(
            url, pool_size=half, max_overflow=half, pool_recycle=3600,
            isolation_level="AUTOCOMMIT", pool_reset_on_return=None,
        )  # fmt: skip
    engine = create_async_engine(
        url,
        pool_size=pool_size,
        max_overflow=pool_size,
        pool_recycle=3600,
        isolation_level="READ COMMITTED",
        pool_reset_on_return=None,  # see _reset below
    )

    @event.listens_for(engine.sync_engine, "reset")
    def _reset(dbapi_connection: Any, _record: Any, state: Any) -> None:
        """SQLAlchemy rolls back on return to the pool even after a commit (one more round
        trip per transaction); roll back only when the server says a transaction is open."""
        if not state.asyncio_safe or state.terminate_only or state.transaction_was_reset:
            return
        if dbapi_connection.driver_connection.get_transaction_status():
            dbapi_connection.rollback()

    return engine
