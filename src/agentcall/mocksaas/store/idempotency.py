"""Admin requests made idempotent by a key: what the first one stored and answered."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass


@dataclass(frozen=True)
class StoredRequest:
    fingerprint: str
    outbox_ids: list[int]
    command_ids: list[str]


def find(conn: sqlite3.Connection, dispatcher_id: str, key: str) -> StoredRequest | None:
    row = conn.execute(
        "SELECT fingerprint, outbox_ids, command_ids FROM admin_requests"
        " WHERE dispatcher_id = ? AND idempotency_key = ?",
        (dispatcher_id, key),
    ).fetchone()
    if row is None:
        return None
    return StoredRequest(str(row[0]), list(json.loads(row[1])), list(json.loads(row[2])))


def save(
    conn: sqlite3.Connection, dispatcher_id: str, key: str, stored: StoredRequest, at: str
) -> None:
    conn.execute(
        "INSERT INTO admin_requests (dispatcher_id, idempotency_key, fingerprint, outbox_ids,"
        " command_ids, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        (
            dispatcher_id,
            key,
            stored.fingerprint,
            json.dumps(stored.outbox_ids),
            json.dumps(stored.command_ids),
            at,
        ),
    )
