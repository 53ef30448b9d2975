"""The dispatcher id a state file belongs to (table ``state_identity``, one row)."""

from __future__ import annotations

import sqlite3
from datetime import datetime


def read(conn: sqlite3.Connection) -> tuple[str, str] | None:
    """``(dispatcher_id, created_at)`` of the file, or ``None`` before it is written."""
    row = conn.execute("SELECT dispatcher_id, created_at FROM state_identity").fetchone()
    return (str(row[0]), str(row[1])) if row else None


def write(conn: sqlite3.Connection, dispatcher_id: str, now: datetime) -> None:
    conn.execute(
        "INSERT INTO state_identity (singleton, dispatcher_id, created_at) VALUES (1, ?, ?)",
        (dispatcher_id, now.isoformat(timespec="seconds")),
    )
