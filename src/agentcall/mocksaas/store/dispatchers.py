"""Dispatchers: identity, secret, authorization, page size and discovery log head."""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from typing import Any

from agentcall.mocksaas.errors import Conflict, NotFound


@dataclass(frozen=True)
class Dispatcher:
    dispatcher_id: str
    secret: str
    authorized: bool
    page_size: int | None
    head: int
    created_at: str

    def public(self) -> dict[str, Any]:
        return {
            "dispatcher_id": self.dispatcher_id,
            "secret": self.secret,
            "authorized": self.authorized,
            "discovery_page_size": self.page_size,
            "head": self.head,
            "created_at": self.created_at,
        }


def _row(row: sqlite3.Row) -> Dispatcher:
    return Dispatcher(
        row["dispatcher_id"],
        row["secret"],
        bool(row["authorized"]),
        row["page_size"],
        row["head"],
        row["created_at"],
    )


def insert(conn: sqlite3.Connection, d: Dispatcher) -> Dispatcher:
    try:
        conn.execute(
            "INSERT INTO dispatchers (dispatcher_id, secret, authorized, page_size, head,"
            " created_at) VALUES (?, ?, ?, ?, 0, ?)",
            (d.dispatcher_id, d.secret, int(d.authorized), d.page_size, d.created_at),
        )
    except sqlite3.IntegrityError as exc:
        raise Conflict(f"dispatcher {d.dispatcher_id} already exists") from exc
    return d


def find(conn: sqlite3.Connection, dispatcher_id: str) -> Dispatcher | None:
    row = conn.execute(
        "SELECT * FROM dispatchers WHERE dispatcher_id = ?", (dispatcher_id,)
    ).fetchone()
    return _row(row) if row else None


def get(conn: sqlite3.Connection, dispatcher_id: str) -> Dispatcher:
    found = find(conn, dispatcher_id)
    if found is None:
        raise NotFound(f"dispatcher {dispatcher_id} is unknown")
    return found


def all_ids(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT dispatcher_id FROM dispatchers ORDER BY rowid")]


def list_all(conn: sqlite3.Connection) -> list[Dispatcher]:
    return [_row(r) for r in conn.execute("SELECT * FROM dispatchers ORDER BY rowid")]


def update(
    conn: sqlite3.Connection, dispatcher_id: str, authorized: bool | None, page_size: int | None
) -> Dispatcher:
    get(conn, dispatcher_id)
    if authorized is not None:
        conn.execute(
            "UPDATE dispatchers SET authorized = ? WHERE dispatcher_id = ?",
            (int(authorized), dispatcher_id),
        )
    if page_size is not None:
        conn.execute(
            "UPDATE dispatchers SET page_size = ? WHERE dispatcher_id = ?",
            (page_size, dispatcher_id),
        )
    return get(conn, dispatcher_id)


def next_event_id(conn: sqlite3.Connection, dispatcher_id: str) -> int:
    """Reserve the next discovery event id of this dispatcher (in the caller's transaction)."""
    conn.execute("UPDATE dispatchers SET head = head + 1 WHERE dispatcher_id = ?", (dispatcher_id,))
    return int(
        conn.execute(
            "SELECT head FROM dispatchers WHERE dispatcher_id = ?", (dispatcher_id,)
        ).fetchone()[0]
    )


PURGED_TABLES = (
    "faults",
    "results",
    "outbox",
    "admin_requests",
    "quotas",
    "events",
    "tasks",
    "sip_snapshots",
    "dispatchers",
)


def purge(conn: sqlite3.Connection, dispatcher_id: str) -> None:
    """Forget everything about a dispatcher (admin clean-up)."""
    for table in PURGED_TABLES:
        conn.execute(f"DELETE FROM {table} WHERE dispatcher_id = ?", (dispatcher_id,))
