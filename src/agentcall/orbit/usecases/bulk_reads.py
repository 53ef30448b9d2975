"""GET /v1/bulk-operations[/{id}[/tasks]] (docs/orbit/bulk.md): an operation with
its progress, the namespace's operations newest first, and an operation's matched tasks with
their outcomes (SKIPPED and FAILED ones with the reason). Visible to a token that reads the
operation's queue; others get NOT_FOUND, as for tasks."""

from __future__ import annotations

from datetime import datetime

from agentcall.orbit.domain.bulk import BulkOperation, Outcome
from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.bulk import Item
from agentcall.orbit.store.bulk_ports import BulkStore


async def get_bulk(store: BulkStore, principal: Principal, operation_id: str) -> BulkOperation:
    principal.require(Permission.READ)
    return visible(principal, await store.load(operation_id))


def visible(principal: Principal, op: BulkOperation | None) -> BulkOperation:
    if op is None or op.namespace_id != principal.namespace_id:
        raise NotFound("bulk operation not found")
    if op.queue_id not in principal.queue_ids:
        raise NotFound("bulk operation not found")
    return op


async def list_bulk(
    store: BulkStore, principal: Principal, after: tuple[datetime, str] | None, limit: int
) -> list[BulkOperation]:
    principal.require(Permission.READ)
    return await store.list_operations(principal.namespace_id, principal.queue_ids, after, limit)


async def bulk_tasks(
    store: BulkStore,
    principal: Principal,
    operation_id: str,
    outcome: Outcome | None,
    after_seq: int | None,
    limit: int,
) -> list[Item]:
    principal.require(Permission.READ)
    visible(principal, await store.load(operation_id))  # its namespace and queue never change
    return await store.item_page(operation_id, outcome, after_seq, limit)
