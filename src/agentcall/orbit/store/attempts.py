"""A task's attempts as the Task API reads them (`GET /v1/tasks/{id}/attempts[/{attempt_id}]`)
and the last one, which a resolution's operator evidence is recorded on."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.store.tables import task_attempt_evidence, task_attempts, tasks

a, ev = task_attempts.c, task_attempt_evidence.c


async def task_scope(conn: AsyncConnection, task_id: str) -> Any | None:
    """The task's `namespace_id` and `queue_id` (who may see it), None when there is none."""
    query = sa.select(tasks.c.namespace_id, tasks.c.queue_id).where(tasks.c.id == task_id)
    return (await conn.execute(query)).first()


async def attempt_page(conn: AsyncConnection, task_id: str, after: int, limit: int) -> list[Any]:
    """Up to `limit` attempts numbered after `after`, in order."""
    query = (
        sa.select(task_attempts)
        .where(a.task_id == task_id, a.number > after)
        .order_by(a.number)
        .limit(limit)
    )
    return list(await conn.execute(query))


async def attempt(conn: AsyncConnection, task_id: str, attempt_id: str) -> Any | None:
    query = sa.select(task_attempts).where(a.id == attempt_id, a.task_id == task_id)
    return (await conn.execute(query)).first()


async def evidence(conn: AsyncConnection, attempt_id: str) -> list[Any]:
    """The attempt's evidence items in the order they were recorded."""
    query = sa.select(task_attempt_evidence).where(ev.attempt_id == attempt_id).order_by(ev.seq)
    return list(await conn.execute(query))


async def last_attempt_id(conn: AsyncConnection, task_id: str) -> str | None:
    query = sa.select(a.id).where(a.task_id == task_id).order_by(a.number.desc()).limit(1)
    found = (await conn.execute(query)).scalar()
    return None if found is None else str(found)
