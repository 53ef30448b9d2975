"""Durable outbox of results (D-MQ-4, D-ID-3).

A row is ``pending`` until the broker confirmed it with no mandatory return, then
``delivered``. A body above 8,388,608 bytes is stored ``blocked_payload_too_large`` with
its size and SHA-256 and is never published, truncated, split or dropped.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from agentcall.dispatcher.domain.states import OutboxState
from agentcall.dispatcher.store.codec import dumps, from_iso, iso, sha256_hex

MAX_BODY_BYTES = 8_388_608


@dataclass(frozen=True)
class OutboxRow:
    seq: int
    event_id: str
    event_type: str
    routing_key: str
    body: bytes


def enqueue(
    conn: sqlite3.Connection,
    *,
    event_id: str,
    event_type: str,
    routing_key: str,
    body: dict[str, Any],
    now: datetime,
) -> OutboxState:
    """Store an event once; a second call with the same event_id keeps the first body."""
    raw = dumps(body)
    state = (
        OutboxState.PENDING if len(raw) <= MAX_BODY_BYTES else OutboxState.BLOCKED_PAYLOAD_TOO_LARGE
    )
    conn.execute(
        "INSERT INTO outbox (event_id, event_type, routing_key, body, size_bytes, sha256, state,"
        " created_at) VALUES (?,?,?,?,?,?,?,?) ON CONFLICT (event_id) DO NOTHING",
        (event_id, event_type, routing_key, raw, len(raw), sha256_hex(raw), state.value, iso(now)),
    )
    return state


def pending(conn: sqlite3.Connection, limit: int, after_seq: int = 0) -> list[OutboxRow]:
    rows = conn.execute(
        "SELECT seq, event_id, event_type, routing_key, body FROM outbox"
        " WHERE state = 'pending' AND seq > ? ORDER BY seq LIMIT ?",
        (after_seq, limit),
    )
    return [OutboxRow(*row) for row in rows]


def mark_delivered(conn: sqlite3.Connection, seqs: Iterable[int], now: datetime) -> None:
    conn.executemany(
        "UPDATE outbox SET state = 'delivered', attempts = attempts + 1, delivered_at = ?"
        " WHERE seq = ? AND state = 'pending'",
        [(iso(now), seq) for seq in seqs],
    )


def mark_failed(conn: sqlite3.Connection, failures: Iterable[tuple[int, str]]) -> None:
    conn.executemany(
        "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE seq = ?",
        [(error[:300], seq) for seq, error in failures],
    )


# One statement, so one snapshot: the three numbers always add up. Each count is served
# by an index (the event_id one, outbox_pending, outbox_blocked), never by reading the
# bodies, so /status stays cheap however long the outbox grows.
_COUNTS = (
    "SELECT (SELECT count(*) FROM outbox),"
    " (SELECT count(*) FROM outbox WHERE state = 'pending'),"
    " (SELECT count(*) FROM outbox WHERE state = 'blocked_payload_too_large')"
)


def counts(conn: sqlite3.Connection) -> dict[str, int]:
    """Rows by state; ``delivered`` is the rest (the table's CHECK allows no fourth state)."""
    total, waiting, blocked_ = conn.execute(_COUNTS).fetchone()
    return {
        OutboxState.PENDING.value: waiting,
        OutboxState.DELIVERED.value: total - waiting - blocked_,
        OutboxState.BLOCKED_PAYLOAD_TOO_LARGE.value: blocked_,
    }


def blocked(conn: sqlite3.Connection, limit: int = 20) -> list[dict[str, Any]]:
    rows = conn.execute(
        "SELECT event_id, event_type, size_bytes, sha256 FROM outbox"
        " WHERE state = 'blocked_payload_too_large' ORDER BY seq LIMIT ?",
        (limit,),
    )
    keys = ("event_id", "event_type", "size_bytes", "sha256")
    return [dict(zip(keys, row, strict=True)) for row in rows]


def oldest_pending(conn: sqlite3.Connection) -> datetime | None:
    """When the oldest row still waiting for the broker was stored (None: no backlog)."""
    row = conn.execute(
        "SELECT created_at FROM outbox WHERE state = 'pending' ORDER BY seq LIMIT 1"
    ).fetchone()
    return from_iso(row[0]) if row else None
