"""Agent version immutability (D-CFG-2): one content digest per agent_version_id, forever."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from agentcall.dispatcher.store.codec import iso


def remember(conn: sqlite3.Connection, agent_version_id: str, sha256: str, now: datetime) -> bool:
    """True if the digest is new or equal to the one first seen; False on a content change."""
    conn.execute(
        "INSERT INTO agent_versions (agent_version_id, content_sha256, first_seen_at)"
        " VALUES (?,?,?) ON CONFLICT (agent_version_id) DO NOTHING",
        (agent_version_id, sha256, iso(now)),
    )
    row = conn.execute(
        "SELECT content_sha256 FROM agent_versions WHERE agent_version_id = ?", (agent_version_id,)
    ).fetchone()
    return bool(row[0] == sha256)
