"""Search a queue's tasks (`GET /v1/tasks` with a filter, docs/orbit/search.md): one
short read, keyset-paged on (created_at DESC, id DESC), with the visibility rules of the plain
list (the token must see the queue)."""

from __future__ import annotations

from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.search import TaskFilter
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store import search
from agentcall.orbit.store.db import Database
from agentcall.orbit.usecases.operations import Page


async def search_tasks(
    db: Database, principal: Principal, where: TaskFilter, after: Position | None, limit: int
) -> Page:
    principal.require(Permission.READ)
    principal.require_queue(where.queue_id)

    async def once() -> Page:
        async with db.single_read() as conn:
            rows = await search.search_page(conn, where, after, limit + 1)
        if len(rows) <= limit:
            return Page(rows, None)
        last = rows[limit - 1]
        position = Position(where.queue_id, where.state, last.created_at, last.id, where.digest())
        return Page(rows[:limit], position)

    return await db.retrying(once)
