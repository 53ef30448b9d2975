"""Inbox of call.execute decisions by command_id (D-CMD-1: a redelivery never dials again)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from datetime import datetime

from agentcall.dispatcher.domain.states import InboxDecision
from agentcall.dispatcher.store.codec import iso


def known_commands(conn: sqlite3.Connection, command_ids: Iterable[str]) -> set[str]:
    ids = list(command_ids)
    found: set[str] = set()
    for start in range(0, len(ids), 500):
        chunk = ids[start : start + 500]
        marks = ",".join("?" * len(chunk))
        rows = conn.execute(f"SELECT command_id FROM inbox WHERE command_id IN ({marks})", chunk)
        found.update(row[0] for row in rows)
    return found


def record(
    conn: sqlite3.Connection,
    *,
    command_id: str,
    task_id: str,
    decision: InboxDecision,
    reason_code: str | None,
    execution_id: str | None,
    result_event_id: str | None,
    now: datetime,
) -> None:
    conn.execute(
        "INSERT INTO inbox (command_id, task_id, decision, reason_code, execution_id,"
        " result_event_id, received_at) VALUES (?,?,?,?,?,?,?)",
        (command_id, task_id, decision.value, reason_code, execution_id, result_event_id, iso(now)),
    )


def decision_counts(conn: sqlite3.Connection) -> dict[str, int]:
    rows = conn.execute("SELECT decision, count(*) FROM inbox GROUP BY decision")
    return {decision: count for decision, count in rows}
