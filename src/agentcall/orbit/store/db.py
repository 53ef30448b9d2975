"""The database handle: engine creation, dialect differences, transactions and the clock.

Dialect differences live here only:
- SQLite: WAL, `synchronous=FULL`, foreign keys on; one writer at a time in this process (an
  asyncio lock) and `BEGIN IMMEDIATE` for writes, so writers never deadlock on lock upgrades;
  other processes wait on `busy_timeout`. The clock is `strftime('%f')` (milliseconds).
- MySQL/MariaDB: READ COMMITTED, utf8mb4, `UTC_TIMESTAMP(6)` as the clock.
Transient failures (deadlock, lock wait timeout, "database is locked") are retried a few times
as a whole transaction by `Database.retrying`; anything else surfaces as `Unavailable`.

A lost connection (the server restarted, was killed, or dropped the session) is never used
again, and neither is any connection opened before it: `Database.retrying` notes the time of
every failure that looks like a lost connection (`lost_at`), and every pool checks it when a
connection is taken (the SQLAlchemy pools through a checkout hook, the driver connections of
`agentcall.orbit.store.driver_pool` and the kept lane connections of `KeptWriter` by their opening
time). So once the database is back, the first transaction gets a fresh connection instead
of each pooled dead one failing a request in turn. A connection that sat idle for more than
`PING_IDLE_S` is pinged before it is used (one round trip, only after a quiet second: under
load connections are reused within milliseconds and never pinged), so that a restart during
a quiet spell fails no request either.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from asyncmy import errors as asyncmy_errors
from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agentcall.orbit.domain.errors import SetupError, Unavailable
from agentcall.orbit.store.connector import HotConnection, fetch
from agentcall.orbit.store.driver_pool import DriverPool
from agentcall.orbit.store.engines import mysql_engine, sqlite_engine
from agentcall.orbit.store.sql import ConcurrentChange

T = TypeVar("T")
DEFAULT_URL = "sqlite+aiosqlite:///var/orbit.db"
_MYSQL_DUPLICATE, _MYSQL_DEADLOCK, _MYSQL_LOCK_WAIT = 1062, 1213, 1205
KEEP_S = 600.0  # a kept connection is renewed after this (below the pool's recycle, 1 h)
PING_IDLE_S = 1.0  # a connection idle for longer is pinged before use
# client errors of MySQL/MariaDB drivers that mean the session is gone: server gone away, lost
# connection during a query, commands out of sync, connection killed, server shutdown in
# progress, and asyncmy's own "Not connected" (0) on a connection it already closed
_MYSQL_LOST = frozenset({0, 1053, 1927, 2006, 2013, 2014, 2045, 2055, 4031})


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
        self.lost_at = 0.0  # monotonic time of the last lost connection (see the module doc)
        if dialect is Dialect.MYSQL:
            # kept: the submit groups' lanes and the execution batcher's lease rounds
            self._drivers = DriverPool(engine.url, engine.dialect, keep=8)
            for pooled in (engine, reader):
                if pooled is not None:
                    _discard_older_than_loss(pooled, self)

    @classmethod
    def open(cls, url: str, *, pool_size: int = 20) -> Database:
        parsed = make_url(url)
        if parsed.drivername == "sqlite+aiosqlite":
            return cls(sqlite_engine(parsed), Dialect.SQLITE)
        if parsed.drivername == "mysql+asyncmy":
            return cls(
                mysql_engine(parsed, pool_size),
                Dialect.MYSQL,
                mysql_engine(parsed, pool_size, autocommit=True),
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

    @property
    def shared(self) -> bool:
        """Several server processes may share this database (MySQL/MariaDB); a SQLite file has
        one (its single writer)."""
        return self.dialect is Dialect.MYSQL

    def write_lanes(self, wanted: int) -> int:
        """How many write transactions of one kind may run at once: one on SQLite (a single
        writer), else `wanted`."""
        return 1 if self.dialect is Dialect.SQLITE else wanted

    @property
    def commits_with_writes(self) -> bool:
        """Whether `hot_write` runs on a driver session that can send its COMMIT with its last
        writes (MySQL/MariaDB; on SQLite it is `write()`)."""
        return self._drivers is not None

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        """One write transaction; commits on success, rolls back on any exception."""
        async with self._writer():
            async with self.engine.connect() as conn, _kept_cancellation(conn):
                if self.dialect is Dialect.SQLITE:
                    await conn.execution_options(orbit_begin="BEGIN IMMEDIATE")
                async with conn.begin():
                    yield conn

    @contextlib.asynccontextmanager
    async def hot_write(self) -> AsyncIterator[HotConnection]:
        """A write transaction for `agentcall.orbit.store.connector` statements only: `write()` on
        SQLite; on MySQL/MariaDB a dedicated driver connection
        (`agentcall.orbit.store.driver_pool`)."""
        if self._drivers is None:
            async with self.write() as conn:
                yield conn
        else:
            async with self._drivers.transaction() as session:
                yield session

    @contextlib.asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        async with self.engine.connect() as conn, _kept_cancellation(conn), conn.begin():
            yield conn

    @contextlib.asynccontextmanager
    async def single_read(self) -> AsyncIterator[AsyncConnection]:
        """For one-statement reads (token lookup, get, list page): on MySQL/MariaDB an
        autocommit connection (no BEGIN/COMMIT/reset round trips); elsewhere `read()`."""
        if self._reader is None:
            async with self.read() as conn:
                yield conn
        else:
            async with self._reader.connect() as conn, _kept_cancellation(conn):
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
        ((value,),) = await fetch(conn, "now", {})
        assert isinstance(value, datetime)
        return value

    async def now_and_fetch(
        self, conn: HotConnection, name: str, params: Mapping[str, Any]
    ) -> tuple[datetime, list[Any]]:
        """`now(conn)` and the rows of query `name`; on MySQL/MariaDB in one statement,
        `clock_and_<name>` (the clock in front of every row, one row of NULLs when none
        matched): one round trip less, the clock still read once inside the transaction."""
        if self.dialect is not Dialect.MYSQL:
            return await self.now(conn), await fetch(conn, name, params)
        rows = await fetch(conn, "clock_and_" + name, params)
        now = rows[0][0]
        assert isinstance(now, datetime)
        return now, [row[1:] for row in rows if row[1] is not None]

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
            except (sa.exc.DBAPIError, OSError, asyncmy_errors.Error) as exc:
                self.note_failure(exc)
                if self.is_transient(exc) and attempt + 1 < attempts:
                    await asyncio.sleep(0.005 * (attempt + 1))
                    continue
                raise Unavailable("the database is unavailable; retry with the same key") from exc
        raise AssertionError("unreachable")

    def note_failure(self, exc: BaseException) -> None:
        """After a lost connection no connection opened before now is used again."""
        if self.dialect is Dialect.MYSQL and is_lost_connection(exc):
            self.lost_at = time.monotonic()
            if self._drivers is not None:
                self._drivers.lost_at = self.lost_at


class KeptWriter:
    """Write transactions on connections kept between them, for a batcher's lanes: on
    MySQL/MariaDB no pool checkout, return and reset per transaction (about a third of a small
    transaction's CPU); `db.write()` on SQLite. A connection whose transaction failed goes
    back to the pool, rolled back (as after `db.write()`), and is not kept; a kept one is
    renewed after `KEEP_S`. One connection is kept per transaction running at once."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._idle: list[tuple[AsyncConnection, float, float]] = []  # (connection, since, idle)

    @contextlib.asynccontextmanager
    async def write(self) -> AsyncIterator[AsyncConnection]:
        if self.db.dialect is not Dialect.MYSQL:
            async with self.db.write() as single:
                yield single
            return
        conn, since = await self._take()
        try:
            async with _kept_cancellation(conn), conn.begin():
                yield conn
        except BaseException:
            await _close(conn)  # rolled back by begin(): back to the pool, not kept
            raise
        self._idle.append((conn, since, time.monotonic()))

    async def _take(self) -> tuple[AsyncConnection, float]:
        while self._idle:
            conn, since, idle = self._idle.pop()
            now = time.monotonic()
            fresh = now - since <= KEEP_S and since > self.db.lost_at
            if fresh and (now - idle <= PING_IDLE_S or await self._alive(conn)):
                return conn, since
            await _close(conn)
        return await self.db.engine.connect(), time.monotonic()

    @staticmethod
    async def _alive(conn: AsyncConnection) -> bool:
        """One round trip on a kept connection that sat idle: False when it is gone."""
        try:
            driver = (await conn.get_raw_connection()).driver_connection
            assert driver is not None
            await driver.ping(reconnect=False)
        except (sa.exc.DBAPIError, OSError, asyncmy_errors.Error, AttributeError):
            return False
        return True

    async def close(self) -> None:
        while self._idle:
            await _close(self._idle.pop()[0])


@contextlib.asynccontextmanager
async def _kept_cancellation(conn: AsyncConnection) -> AsyncIterator[None]:
    """Cancelled in the middle of a statement, asyncmy leaves its connection mid-command: the
    rollback that follows fails with `InterfaceError: Cancelled during execution`, an
    ordinary exception raised while the cancellation is handled. Such a connection is
    invalidated (never handed out again) and the failure becomes the cancellation again, so
    that a loop that survives failures does not survive its own stop."""
    try:
        yield
    except BaseException as exc:
        cancelled = isinstance(exc, asyncio.CancelledError)
        task = asyncio.current_task()
        if not cancelled and (task is None or not task.cancelling()):
            raise
        with contextlib.suppress(Exception):
            await conn.invalidate()
        if cancelled:
            raise
        raise asyncio.CancelledError from exc


def is_lost_connection(exc: BaseException) -> bool:
    """The error says that the connection to MySQL/MariaDB is gone (not a refused statement)."""
    if isinstance(exc, sa.exc.DBAPIError):
        if exc.connection_invalidated:
            return True
        exc = exc.orig if exc.orig is not None else exc
    if isinstance(exc, OSError):
        return True
    if isinstance(exc, (asyncmy_errors.OperationalError, asyncmy_errors.InterfaceError)):
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        return code in _MYSQL_LOST
    return False


def is_database_failure(exc: BaseException) -> bool:
    """A failure of the database or of the way to it (a driver error, a refused, lost or
    timed-out connection, a conflicting concurrent transaction): the request may succeed
    later. Anything else reaching the edge of the server is a defect of the server."""
    failures = (
        sa.exc.DBAPIError,
        sa.exc.TimeoutError,
        sa.exc.DisconnectionError,
        OSError,
        asyncmy_errors.Error,
        ConcurrentChange,
    )
    return isinstance(exc, failures)


def _discard_older_than_loss(engine: AsyncEngine, db: Database) -> None:
    """Connections of this pool opened before the last lost connection are replaced when
    taken (SQLAlchemy reconnects the pool entry and goes on with the new connection)."""

    @event.listens_for(engine.sync_engine, "connect")
    def _opened(_dbapi_connection: Any, record: Any) -> None:
        record.info["orbit_opened"] = record.info["orbit_idle"] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkin")
    def _returned(_dbapi_connection: Any, record: Any) -> None:
        record.info["orbit_idle"] = time.monotonic()

    @event.listens_for(engine.sync_engine, "checkout")
    def _checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        if record.info.get("orbit_opened", 0.0) <= db.lost_at:
            raise sa.exc.DisconnectionError("opened before a lost connection")
        if time.monotonic() - record.info.get("orbit_idle", 0.0) > PING_IDLE_S:
            try:
                dbapi_connection.ping(False)  # runs in SQLAlchemy's greenlet, like pre_ping
            except (OSError, asyncmy_errors.Error) as exc:  # dead: SQLAlchemy reconnects
                raise sa.exc.DisconnectionError("the connection was lost while idle") from exc


async def _close(conn: AsyncConnection) -> None:
    with contextlib.suppress(Exception):  # best effort: the server rolls back a lost session
        await conn.close()


def _mysql_code(exc: sa.exc.DBAPIError) -> int | None:
    args = getattr(exc.orig, "args", ())
    return args[0] if args and isinstance(args[0], int) else None
