"""The attempt history of a task (GET /v1/tasks/{id}/attempts and /attempts/{attempt_id}):
each read one transaction, visible only within the token's namespace and queues."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store import attempts
from agentcall.orbit.usecases.operations import Operations


async def attempt_page(
    ops: Operations, principal: Principal, task_id: str, after: int, limit: int
) -> list[Any]:
    """Up to `limit` attempts of the task numbered after `after`, in order."""
    db = ops.db

    async def once() -> list[Any]:
        async with db.read() as conn:
            await _visible(conn, principal, task_id)
            return await attempts.attempt_page(conn, task_id, after, limit)

    return await db.retrying(once)


async def attempt_with_evidence(
    ops: Operations, principal: Principal, task_id: str, attempt_id: str
) -> tuple[Any, list[Any]]:
    """The attempt and its evidence items; NotFound when the task or attempt is not there."""
    db = ops.db

    async def once() -> tuple[Any, list[Any]]:
        async with db.read() as conn:
            await _visible(conn, principal, task_id)
            row = await attempts.attempt(conn, task_id, attempt_id)
            if row is None:
                raise NotFound("attempt not found")
            return row, list(await attempts.evidence(conn, attempt_id))

    return await db.retrying(once)


async def _visible(conn: AsyncConnection, principal: Principal, task_id: str) -> None:
    row = await attempts.task_scope(conn, task_id)
    if row is None:
        raise NotFound("task not found")
    principal.require_visible(row.namespace_id, row.queue_id)
