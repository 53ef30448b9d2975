"""One SQLite file, one connection, one worker thread (WAL, ``synchronous=FULL``).

Every access is a plain function ``fn(conn, *args)`` run on the worker thread, so all
writes are serialised and each :meth:`Database.write` is one transaction: it commits
as a whole or not at all. ``synchronous=FULL`` makes a commit durable before the caller
ACKs a delivery or originates a call (a lost commit could mean a double dial).
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import sqlite3
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import IO, Any, Concatenate, ParamSpec, TypeVar
from urllib.parse import quote

from agentcall.dispatcher.errors import DispatcherError
from agentcall.dispatcher.store import identity
from agentcall.dispatcher.store.guard import Guard, StateFileLost

T = TypeVar("T")
P = ParamSpec("P")


class StoreError(DispatcherError):
    """The state database cannot be opened or migrated.

    Fix: check that DISPATCHER_STATE_DB points at a writable file on a local disk and that
    it was written by this or an older version of the dispatcher.
    """


class StateLocked(StoreError):
    """Another D process holds this state database (D-NOTE-8).

    Fix: run one D per state file — stop the other ``dispatcher run`` or give this one its
    own DISPATCHER_STATE_DB (and its own DISPATCHER_ID).
    """


class StateMissing(StoreError):
    """The state database does not exist and this start was not told to create it.

    Fix: on the first start of a dispatcher id run ``dispatcher init-state``; if the file
    was lost, restore it (``dispatcher init-state --restore <copy>``), see docs/dispatcher.md.
    """


class StateForeign(StoreError):
    """The state database belongs to another dispatcher id.

    Fix: point DISPATCHER_STATE_DB at this dispatcher's own file (one file per id).
    """


def rescued_copies(path: Path) -> list[Path]:
    """The copies a D wrote beside ``path`` when it lost it, oldest first."""
    if not path.parent.is_dir():
        return []
    found = path.parent.glob(f"{path.name}.rescued-*")
    return sorted(p for p in found if not p.name.endswith(("-wal", "-shm", "-journal")))


def missing_message(path: Path) -> str:
    """What to do about a state file that is not there (named in the refusal)."""
    rescued = rescued_copies(path)
    if rescued:
        return (
            f"state database {path} does not exist, but a copy rescued by the dispatcher"
            f" that lost it is at {rescued[-1]}: run dispatcher init-state --restore"
            f" {rescued[-1]}"
        )
    if not path.parent.is_dir():
        return (
            f"state database {path} does not exist and neither does its directory"
            f" {path.parent}: check DISPATCHER_STATE_DB (a moved volume, a typo?); on the"
            " first start of this dispatcher run dispatcher init-state"
        )
    return (
        f"state database {path} does not exist: on the first start of this dispatcher run"
        " dispatcher init-state; if the file was lost, restore it from a backup with"
        " dispatcher init-state --restore <copy> (see docs/dispatcher.md, the state file)"
    )


def lock_path(path: Path) -> Path:
    """The lock file beside the state database (``state.sqlite`` → ``state.sqlite.lock``)."""
    return path.with_name(path.name + ".lock")


def take_lock(path: Path, create: bool = True) -> IO[bytes]:
    """Hold an exclusive, non-blocking ``flock`` on the state database's lock file for the
    life of the process (the kernel drops it when the process dies, also on SIGKILL)."""
    try:
        if create:
            path.parent.mkdir(parents=True, exist_ok=True)
        held = lock_path(path).open("ab")
    except OSError as exc:
        raise StoreError(
            f"cannot write the lock file {lock_path(path)}: {exc.strerror or exc}; the"
            f" directory {path.parent} must exist and be writable by the service user"
        ) from None
    try:
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        held.close()
        raise StateLocked(
            f"another dispatcher process uses the state database {path} (lock"
            f" {lock_path(path).name} is held); run one dispatcher per state file"
        ) from None
    return held


class Database:
    """Async facade over a single sqlite3 connection owned by a dedicated thread.

    One process per state file (D-NOTE-8): :meth:`open` takes the file's lock first and
    refuses with :class:`StateLocked` when another process holds it.
    """

    def __init__(self, path: Path, create: bool = True) -> None:
        self.path = path
        self.create = create
        self.lost: str | None = None  # why the state file is lost (see store.guard)
        self._guard: Guard | None = None
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sqlite")
        self._conn: sqlite3.Connection | None = None
        # Jobs that run before any queued one (see write_first); touched by both threads:
        # deque append/popleft are atomic.
        self._first: deque[tuple[Callable[[], Any], Future[Any]]] = deque()
        self._lock: IO[bytes] | None = None

    @classmethod
    async def open(
        cls, path: Path, *, dispatcher_id: str | None = None, create: bool = True
    ) -> Database:
        """Open (and migrate) the state file. ``create=False`` refuses a missing file
        (:class:`StateMissing`); with ``dispatcher_id`` a file of another id is refused
        (:class:`StateForeign`), and a file without an owner yet is given this one."""
        db = cls(path, create)
        try:
            if not create and not path.exists():
                raise StateMissing(missing_message(path))
            db._lock = take_lock(path, create)
            await db._run(lambda: db._connect(dispatcher_id))
        except BaseException:
            await db.close()
            raise
        return db

    def _connect(self, dispatcher_id: str | None) -> None:
        target = f"file:{quote(str(self.path))}?mode={'rwc' if self.create else 'rw'}"
        try:
            if self.create:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(target, uri=True, isolation_level=None, check_same_thread=False)
            self._conn = conn
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=FULL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute("PRAGMA busy_timeout=5000")
            migrate(conn)
            if dispatcher_id is not None:
                transact(conn, _claim, self.path, dispatcher_id)
            self._guard = Guard(self.path)
        except (sqlite3.Error, OSError) as exc:
            raise StoreError(
                f"cannot open state database {self.path}: {exc}; it must be a file on a"
                f" local disk in a directory ({self.path.parent}) writable by the service user"
            ) from exc

    async def _run(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._pool, self._after_first(fn))

    def _after_first(self, fn: Callable[[], T]) -> Callable[[], T]:
        def job() -> T:
            self._run_first()
            return fn()

        return job

    def _run_first(self) -> None:
        """On the database thread: run every job queued by ``write_first``, in order."""
        while self._first:
            fn, future = self._first.popleft()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn())
            except BaseException as exc:  # handed to the waiting caller
                future.set_exception(exc)

    async def read(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kw: P.kwargs
    ) -> T:
        """Run ``fn(conn, …)`` without a write transaction."""
        return await self._run(lambda: fn(self._require(), *args, **kw))

    async def write(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kw: P.kwargs
    ) -> T:
        """Run ``fn(conn, …)`` inside one ``BEGIN IMMEDIATE … COMMIT`` transaction."""
        return await self._run(lambda: self._guarded(fn, *args, **kw))

    async def write_first(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kw: P.kwargs
    ) -> T:
        """Like :meth:`write`, but runs before every job still queued (right after the one
        in progress): for short transactions on a latency-critical path, e.g. marking a
        round of executions ``dialing`` while large admission batches wait."""
        future: Future[T] = Future()
        self._first.append((lambda: self._guarded(fn, *args, **kw), future))
        self._pool.submit(self._run_first)
        return await asyncio.wrap_future(future)

    def _guarded(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kw: P.kwargs
    ) -> T:
        """One transaction, then a check of the state file: nothing is written to a file
        known lost, and a commit that landed in one raises before its caller acts on it."""
        if self.lost is not None:
            raise StateFileLost(self.lost)
        result = transact(self._require(), fn, *args, **kw)
        self.check()
        return result

    def check(self) -> None:
        """On the database thread: raise :class:`StateFileLost` once the file is lost
        (the first time, after writing a rescued copy of the state beside it)."""
        if self.lost is None and self._guard is not None:
            problem = self._guard.problem()
            if problem is not None:
                rescued = self._rescue()
                kept = f"its last state is rescued at {rescued}" if rescued else "no rescued copy"
                self.lost = f"{problem} (state database {self.path}); {kept}"
        if self.lost is not None:
            raise StateFileLost(self.lost)

    def _rescue(self) -> Path | None:
        """Copy the state the open connection still reads into ``<file>.rescued-<time>``
        (written under a hidden name first, so a copy with that name is always whole)."""
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = self.path.with_name(f"{self.path.name}.rescued-{stamp}")
        partial = self.path.with_name(f".{self.path.name}.rescuing-{stamp}")
        try:
            copy = sqlite3.connect(partial)
            try:
                self._require().backup(copy)
                copy.execute("PRAGMA journal_mode=DELETE")  # one self-contained file
            finally:
                copy.close()
            os.rename(partial, target)
            _sync_directory(target.parent)
        except (sqlite3.Error, OSError):
            return None
        return target

    async def watch(self, interval_s: float = 1.0) -> None:
        """Check the state file every ``interval_s`` until it is lost (then raise)."""
        while True:
            await self._run(self.check)
            await asyncio.sleep(interval_s)

    def _require(self) -> sqlite3.Connection:
        if self._conn is None:
            raise StoreError("state database is closed")
        return self._conn

    async def close(self) -> None:
        conn, self._conn = self._conn, None
        if conn is not None:
            await self._run(conn.close)
        self._pool.shutdown(wait=True)
        guard, self._guard = self._guard, None
        if guard is not None:
            guard.close()
        lock, self._lock = self._lock, None
        if lock is not None:
            lock.close()


def transact(
    conn: sqlite3.Connection,
    fn: Callable[Concatenate[sqlite3.Connection, P], T],
    *args: P.args,
    **kw: P.kwargs,
) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn, *args, **kw)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


def _sync_directory(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _claim(conn: sqlite3.Connection, path: Path, dispatcher_id: str) -> None:
    owner = identity.read(conn)
    if owner is None:
        identity.write(conn, dispatcher_id, datetime.now(UTC))
    elif owner[0] != dispatcher_id:
        raise StateForeign(
            f"state database {path} belongs to dispatcher {owner[0]} (created {owner[1]}),"
            f" not to DISPATCHER_ID={dispatcher_id}: point DISPATCHER_STATE_DB at this"
            " dispatcher's own file"
        )


def _migration_files() -> list[tuple[int, str, str]]:
    folder = resources.files("agentcall.dispatcher.store") / "migrations"
    found = []
    for entry in folder.iterdir():
        if entry.name.endswith(".sql"):
            number = int(entry.name.split("_", 1)[0])
            found.append((number, entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def migrate(conn: sqlite3.Connection) -> int:
    """Apply numbered migrations not yet applied, each in its own transaction."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS schema_migrations"
        " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)"
    )
    done = {row[0] for row in conn.execute("SELECT version FROM schema_migrations")}
    files = _migration_files()
    newest = max((n for n, _, _ in files), default=0)
    if done and max(done) > newest:
        raise StoreError(f"state database has migration {max(done)}; this build knows {newest}")
    for number, name, sql in files:
        if number not in done:
            _apply(conn, number, name, sql)
    return newest


def _apply(conn: sqlite3.Connection, number: int, name: str, sql: str) -> None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in _statements(sql):
            conn.execute(statement)
        conn.execute(
            "INSERT INTO schema_migrations VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ','now'))",
            (number, name),
        )
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def _statements(sql: str) -> list[str]:
    """Split a migration on ``;`` at line ends (migrations contain no triggers)."""
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [part.strip() for part in "\n".join(lines).split(";\n") if part.strip()]
