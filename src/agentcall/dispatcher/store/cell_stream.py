"""The position ``(boot_id, seq)`` of the last applied event of the cell's stream."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from agentcall.dispatcher.store.codec import iso


def load_position(conn: sqlite3.Connection) -> tuple[str | None, int]:
    row = conn.execute("SELECT boot_id, last_seq FROM cell_stream WHERE id = 1").fetchone()
    return (row[0], int(row[1])) if row else (None, 0)


def save_position(conn: sqlite3.Connection, boot_id: str, seq: int, now: datetime) -> None:
    conn.execute(
        "UPDATE cell_stream SET boot_id = ?, last_seq = ?, updated_at = ? WHERE id = 1",
        (boot_id, seq, iso(now)),
    )
