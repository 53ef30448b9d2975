"""Durable outbox of everything the SaaS publishes (retried with the same body)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class OutgoingMessage:
    dispatcher_id: str
    exchange: str
    routing_key: str
    kind: str
    ref: str | None
    body: bytes


@dataclass(frozen=True)
class OutboxRow:
    id: int
    message: OutgoingMessage
    state: str
    attempts: int
    last_error: str | None


def add(conn: sqlite3.Connection, messages: Sequence[OutgoingMessage], at: str) -> list[int]:
    ids: list[int] = []
    for m in messages:
        cur = conn.execute(
            "INSERT INTO outbox (dispatcher_id, exchange, routing_key, kind, ref, body, state,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, 'pending', ?)",
            (m.dispatcher_id, m.exchange, m.routing_key, m.kind, m.ref, m.body, at),
        )
        assert cur.lastrowid is not None
        ids.append(cur.lastrowid)
    return ids


def _row(r: sqlite3.Row) -> OutboxRow:
    msg = OutgoingMessage(
        r["dispatcher_id"], r["exchange"], r["routing_key"], r["kind"], r["ref"], bytes(r["body"])
    )
    return OutboxRow(r["id"], msg, r["state"], r["attempts"], r["last_error"])


def pending(conn: sqlite3.Connection, limit: int = 1000) -> list[OutboxRow]:
    rows = conn.execute(
        "SELECT * FROM outbox WHERE state = 'pending' ORDER BY id LIMIT ?", (limit,)
    )
    return [_row(r) for r in rows]


def states(conn: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    marks = ",".join("?" * len(ids))
    rows = conn.execute(f"SELECT id, state FROM outbox WHERE id IN ({marks})", tuple(ids))
    return {int(r[0]): str(r[1]) for r in rows}


def mark(conn: sqlite3.Connection, outcomes: Sequence[tuple[int, str | None]], at: str) -> None:
    """``(id, None)`` = confirmed; ``(id, error)`` = still pending, attempt counted."""
    for row_id, error in outcomes:
        if error is None:
            conn.execute(
                "UPDATE outbox SET state = 'confirmed', attempts = attempts + 1,"
                " confirmed_at = ?, last_error = NULL WHERE id = ?",
                (at, row_id),
            )
        else:
            conn.execute(
                "UPDATE outbox SET attempts = attempts + 1, last_error = ? WHERE id = ?",
                (error[:500], row_id),
            )


def list_for(conn: sqlite3.Connection, dispatcher_id: str, limit: int) -> list[OutboxRow]:
    rows = conn.execute(
        "SELECT * FROM outbox WHERE dispatcher_id = ? ORDER BY id DESC LIMIT ?",
        (dispatcher_id, limit),
    )
    return [_row(r) for r in rows]


def route_of_command(conn: sqlite3.Connection, dispatcher_id: str, command_id: str) -> str | None:
    """Routing key a ``call.execute`` with this command_id was published on."""
    row = conn.execute(
        "SELECT routing_key FROM outbox WHERE dispatcher_id = ? AND ref = ?"
        " AND kind = 'call.execute' ORDER BY id LIMIT 1",
        (dispatcher_id, command_id),
    ).fetchone()
    return str(row[0]) if row else None
