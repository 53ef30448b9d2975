"""``Database.write_first``: a short transaction overtakes the queued ones, never the one
in progress, and commits like any other write (real SQLite file)."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from agentcall.dispatcher.store.db import Database

pytestmark = [pytest.mark.integration]


def _log(conn: sqlite3.Connection, name: str, gate: threading.Event | None = None) -> str:
    if gate is not None:
        gate.wait(5)
    conn.execute("CREATE TABLE IF NOT EXISTS t (name TEXT)")
    conn.execute("INSERT INTO t VALUES (?)", (name,))
    return name


def _fail(conn: sqlite3.Connection) -> None:
    conn.execute("CREATE TABLE IF NOT EXISTS t (name TEXT)")
    conn.execute("INSERT INTO t VALUES ('rolled back')")
    raise ValueError("boom")


def _names(conn: sqlite3.Connection) -> list[str]:
    return [row[0] for row in conn.execute("SELECT name FROM t ORDER BY rowid")]


async def test_write_first_overtakes_queued_writes_and_rolls_back_alone(tmp_path: Path) -> None:
    db = await Database.open(tmp_path / "d.sqlite")
    try:
        gate = threading.Event()
        running = asyncio.ensure_future(db.write(_log, "in progress", gate))
        queued = [asyncio.ensure_future(db.write(_log, f"queued-{i}")) for i in range(3)]
        await asyncio.sleep(0.05)
        first = asyncio.ensure_future(db.write_first(_log, "first"))
        failing = asyncio.ensure_future(db.write_first(_fail))
        await asyncio.sleep(0.05)
        gate.set()
        assert await first == "first"
        with pytest.raises(ValueError):
            await failing
        await asyncio.gather(running, *queued)
        names = await db.read(_names)
        assert names == ["in progress", "first", "queued-0", "queued-1", "queued-2"]
    finally:
        await db.close()
