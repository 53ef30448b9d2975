"""The audit log's typed operations (`agentcall.orbit.domain.audit`): an entry's row, the
rows of a task's operator write or submit, the entries written in their own transaction (for
actions that have no task transaction to join), a keyset page newest first, and the retention
sweep (the same 90-day policy and batching as `store.retention`)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.audit import (
    MAX_DETAIL_CHARS,
    AuditEntry,
    AuditPosition,
    AuditQuery,
    Origin,
    Source,
    audit_entry,
)
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store.connector import HotConnection, write_all
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import audit_log

Row = dict[str, Any]
c = audit_log.c


def entry_row(entry: AuditEntry, now: datetime) -> Row:
    """The row of `entry` at `now` (the database clock of its transaction)."""
    detail = dumps(dict(entry.detail)) if entry.detail else None
    if detail is not None and len(detail) > MAX_DETAIL_CHARS:
        detail = dumps({"truncated": detail[: MAX_DETAIL_CHARS - 40]})
    task_id = entry.target_id if entry.target_kind == "task" else None
    return {
        "id": entry.id or new_id(),
        "namespace_id": entry.namespace_id,
        "token_id": entry.actor_token_id,
        "actor_name": entry.actor_name,
        "action": entry.action,
        "target_kind": entry.target_kind,
        "target_id": entry.target_id,
        "task_id": task_id,
        "queue_id": None,
        "handler": None,
        "origin": entry.origin.value if entry.origin else None,
        "remote_addr": (entry.remote_addr or "")[:64] or None,
        "request_id": entry.request_id,
        "detail": detail,
        "created_at": now,
    }


def task_row(
    principal: Principal,
    action: str,
    task: Task,
    request_id: str | None,
    now: datetime,
    source: Source | None = None,
    detail: Mapping[str, JsonValue] | None = None,
) -> Row:
    """The audit row of an action on one task: the entry's, with the task's queue and
    handler (no business payload)."""
    src = source or Source(Origin.API)
    entry = audit_entry(
        principal, action, "task", task.id, detail, request_id=request_id, source=src
    )
    row = entry_row(entry, now)
    row["queue_id"], row["handler"] = task.queue_id, task.handler
    return row


def row_entry(row: Any) -> AuditEntry:
    detail = json.loads(row.detail) if row.detail else {}
    return AuditEntry(
        actor_token_id=row.token_id,
        actor_name=row.actor_name,
        action=row.action,
        target_kind=row.target_kind or ("task" if row.task_id else ""),
        target_id=row.target_id or row.task_id,
        namespace_id=row.namespace_id,
        origin=Origin(row.origin) if row.origin else None,
        remote_addr=row.remote_addr,
        request_id=row.request_id,
        detail=detail,
        at=row.created_at,
        id=row.id,
    )


async def insert_entries(conn: HotConnection, entries: Sequence[AuditEntry], now: datetime) -> None:
    """Write `entries` at `now` inside the caller's transaction (the action's own, so the
    entry commits with the change or not at all)."""
    if entries:
        await write_all(conn, [Insert(audit_log, [entry_row(entry, now) for entry in entries])])


def row_matches(row: Row, query: AuditQuery) -> bool:
    """`matches` on a row held in memory (the twin's)."""
    return (
        row["namespace_id"] == query.namespace_id
        and query.action in (None, row["action"])
        and query.actor in (None, row["token_id"])
        and query.target in (None, row["target_id"])
        and (query.since is None or row["created_at"] >= query.since)
        and (query.until is None or row["created_at"] < query.until)
    )


def matches(query: AuditQuery) -> list[sa.ColumnElement[bool]]:
    where = [c.namespace_id == query.namespace_id]
    if query.action is not None:
        where.append(c.action == query.action)
    if query.actor is not None:
        where.append(c.token_id == query.actor)
    if query.target is not None:
        where.append(c.target_id == query.target)
    if query.since is not None:
        where.append(c.created_at >= query.since)
    if query.until is not None:
        where.append(c.created_at < query.until)
    return where


async def page(
    conn: AsyncConnection, query: AuditQuery, after: AuditPosition | None, limit: int
) -> list[AuditEntry]:
    """Up to `limit` entries matching `query`, newest first by (created_at, id), after
    `after`."""
    where = matches(query)
    if after is not None:
        where.append(
            sa.or_(
                c.created_at < after.at,
                sa.and_(c.created_at == after.at, c.id < after.entry_id),
            )
        )
    select = sa.select(audit_log).where(*where).order_by(c.created_at.desc(), c.id.desc())
    rows = (await conn.execute(select.limit(limit))).all()
    return [row_entry(row) for row in rows]


async def count_expired(conn: AsyncConnection, cutoff: datetime) -> int:
    query = sa.select(sa.func.count()).select_from(audit_log).where(c.created_at <= cutoff)
    return int((await conn.execute(query)).scalar_one())


async def delete_expired_batch(conn: AsyncConnection, cutoff: datetime, limit: int) -> int:
    """Delete up to `limit` entries written at or before `cutoff`; return how many went."""
    ids = [
        row.id
        for row in await conn.execute(sa.select(c.id).where(c.created_at <= cutoff).limit(limit))
    ]
    if not ids:
        return 0
    result = await conn.execute(audit_log.delete().where(c.id.in_(ids)))
    return int(result.rowcount)
