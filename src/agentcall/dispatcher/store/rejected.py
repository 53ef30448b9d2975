"""Rejected-input log: what was refused and why, redacted (D-MQ-5, D-DISC-4, D-DISC-9).

Only the source, a reason code, a short detail written by the D (no payload values), and
the size and SHA-256 of the raw input are kept, so an operator can match a dead letter
without the log holding phone numbers, transcripts or secrets.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from agentcall.dispatcher.store.codec import iso, sha256_hex


def record(
    conn: sqlite3.Connection,
    *,
    source: str,
    reason: str,
    detail: str,
    raw: bytes | None,
    now: datetime,
) -> None:
    conn.execute(
        "INSERT INTO rejected_inputs (at, source, reason, detail, size_bytes, sha256)"
        " VALUES (?,?,?,?,?,?)",
        (
            iso(now),
            source[:300],
            reason[:100],
            detail[:500],
            None if raw is None else len(raw),
            None if raw is None else sha256_hex(raw),
        ),
    )


def latest(conn: sqlite3.Connection, limit: int = 20) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT at, source, reason, detail, size_bytes, sha256 FROM rejected_inputs"
        " ORDER BY id DESC LIMIT ?",
        (limit,),
    )
    keys = ("at", "source", "reason", "detail", "size_bytes", "sha256")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def count(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT count(*) FROM rejected_inputs").fetchone()[0])
