"""GET /v1/bulk-operations[/{id}[/tasks]] (docs/orbit/bulk-operations.md): an operation with
its progress, the namespace's operations newest first, and an operation's matched tasks with
their outcomes (SKIPPED and FAILED ones with the reason). Visible to a token that reads the
operation's queue; others get NOT_FOUND, as for tasks."""

from __future__ import annotations

from datetime import datetime

from agentcall.orbit.domain.bulk import BulkOperation, Outcome
from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store import bulk
from agentcall.orbit.store.bulk import Item
from agentcall.orbit.store.db import Database


async def get_bulk(db: Database, principal: Principal, operation_id: str) -> BulkOperation:
    principal.require(Permission.READ)

    async def once() -> BulkOperation:
        async with db.single_read() as conn:
            return visible(principal, await bulk.load_operation(conn, operation_id))

    return await db.retrying(once)


def visible(principal: Principal, op: BulkOperation | None) -> BulkOperation:
    if op is None or op.namespace_id != principal.namespace_id:
        raise NotFound("bulk operation not found")
    if op.queue_id not in principal.queue_ids:
        raise NotFound("bulk operation not found")
    return op


async def list_bulk(
    db: Database, principal: Principal, after: tuple[datetime, str] | None, limit: int
) -> list[BulkOperation]:
    principal.require(Permission.READ)

    async def once() -> list[BulkOperation]:
        async with db.single_read() as conn:
            return await bulk.list_operations(
                conn, principal.namespace_id, principal.queue_ids, after, limit
            )

    return await db.retrying(once)


async def bulk_tasks(
    db: Database,
    principal: Principal,
    operation_id: str,
    outcome: Outcome | None,
    after_seq: int | None,
    limit: int,
) -> list[Item]:
    principal.require(Permission.READ)

    async def once() -> list[Item]:
        async with db.single_read() as conn:
            visible(principal, await bulk.load_operation(conn, operation_id))
            return await bulk.item_page(conn, operation_id, outcome, after_seq, limit)

    return await db.retrying(once)
