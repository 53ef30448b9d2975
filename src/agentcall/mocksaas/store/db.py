"""One SQLite connection driven from a single worker thread.

Store functions are plain synchronous functions ``fn(conn, *args)``; :meth:`Database.run`
runs one of them inside ``BEGIN IMMEDIATE … COMMIT`` (rolled back on any error) on the
worker thread, so the event loop never blocks on disk and transactions never interleave.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from agentcall.mocksaas.errors import ConfigurationError

T = TypeVar("T")


def connect(path: Path) -> sqlite3.Connection:
    """Open (and create) the state file with WAL and the schema applied."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    except (OSError, sqlite3.Error) as exc:
        raise ConfigurationError(f"--db {path}: cannot open ({exc})") from exc
    conn.row_factory = sqlite3.Row
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=5000")
    conn.executescript(
        resources.files("agentcall.mocksaas.store").joinpath("schema.sql").read_text()
    )
    return conn


def in_transaction(conn: sqlite3.Connection, fn: Callable[..., T], *args: Any) -> T:
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = fn(conn, *args)
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")
    return result


class Database:
    """Async facade: ``await db.run(store_function, arg, …)``."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="mocksaas-db")
        self._conn = self._executor.submit(connect, path).result()

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, in_transaction, self._conn, fn, *args)

    def close(self) -> None:
        self._executor.submit(self._conn.close).result()
        self._executor.shutdown(wait=True)
