"""SIP snapshots and tenant quotas."""

from __future__ import annotations

import json
import sqlite3
from datetime import datetime
from typing import Any

from agentcall.mocksaas.domain.quota import Quota


def put_sip(conn: sqlite3.Connection, dispatcher_id: str, build: Any) -> dict[str, Any]:
    """Store the next SIP revision; ``build(revision) -> body`` makes the body."""
    row = conn.execute(
        "SELECT revision FROM sip_snapshots WHERE dispatcher_id = ?", (dispatcher_id,)
    ).fetchone()
    revision = (row[0] if row else 0) + 1
    body: dict[str, Any] = build(revision)
    conn.execute(
        "INSERT INTO sip_snapshots (dispatcher_id, revision, body) VALUES (?, ?, ?)"
        " ON CONFLICT (dispatcher_id) DO UPDATE SET revision = excluded.revision,"
        " body = excluded.body",
        (dispatcher_id, revision, json.dumps(body)),
    )
    return body


def get_sip(conn: sqlite3.Connection, dispatcher_id: str) -> dict[str, Any] | None:
    row = conn.execute(
        "SELECT body FROM sip_snapshots WHERE dispatcher_id = ?", (dispatcher_id,)
    ).fetchone()
    return json.loads(row[0]) if row else None


def put_quota(
    conn: sqlite3.Connection,
    dispatcher_id: str,
    tenant_id: str,
    tenant_key: str,
    max_calls: int | None,
    valid_for_s: int,
    valid_until: datetime | None,
) -> Quota:
    row = conn.execute(
        "SELECT quota_revision FROM quotas WHERE dispatcher_id = ? AND tenant_id = ?",
        (dispatcher_id, tenant_id),
    ).fetchone()
    revision = (row[0] if row else 0) + 1
    conn.execute(
        "INSERT INTO quotas (dispatcher_id, tenant_id, tenant_key, quota_revision,"
        " max_concurrent_calls, valid_for_s, valid_until) VALUES (?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (dispatcher_id, tenant_id) DO UPDATE SET tenant_key = excluded.tenant_key,"
        " quota_revision = excluded.quota_revision,"
        " max_concurrent_calls = excluded.max_concurrent_calls,"
        " valid_for_s = excluded.valid_for_s, valid_until = excluded.valid_until",
        (
            dispatcher_id,
            tenant_id,
            tenant_key,
            revision,
            max_calls,
            valid_for_s,
            valid_until.isoformat() if valid_until else None,
        ),
    )
    quota = get_quota(conn, dispatcher_id, tenant_id)
    assert quota is not None
    return quota


def get_quota(conn: sqlite3.Connection, dispatcher_id: str, tenant_id: str) -> Quota | None:
    row = conn.execute(
        "SELECT * FROM quotas WHERE dispatcher_id = ? AND tenant_id = ?", (dispatcher_id, tenant_id)
    ).fetchone()
    if row is None:
        return None
    until = datetime.fromisoformat(row["valid_until"]) if row["valid_until"] else None
    return Quota(
        row["tenant_id"],
        row["tenant_key"],
        row["quota_revision"],
        row["max_concurrent_calls"],
        row["valid_for_s"],
        until,
    )
