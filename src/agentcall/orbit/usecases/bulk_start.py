"""POST /v1/bulk-operations and its preview (docs/orbit/bulk.md).

Preview: how many tasks the filter matches now (counted up to `MAX_MATCHED`) and the newest
`SAMPLE_SIZE` of them, one short read. Start: one write transaction that reads the snapshot
(every matching task's id and revision, newest first) and stores it with the operation; the
engine (`agentcall.orbit.assembly.bulk_runner`) then acts on it in batches. The Idempotency-Key
names the operation: the same key with the same request answers the operation it started
(200), with another request IDEMPOTENCY_CONFLICT."""

from __future__ import annotations

from dataclasses import dataclass

from agentcall.orbit.domain.bulk import (
    MAX_MATCHED,
    SAMPLE_SIZE,
    BulkAction,
    BulkOperation,
    BulkRequest,
)
from agentcall.orbit.domain.errors import IdempotencyConflict
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.search import filter_json
from agentcall.orbit.domain.task import TaskSummary
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store.bulk import NewOperation
from agentcall.orbit.store.bulk_ports import BulkStore

PERMISSION = {
    BulkAction.CANCEL: Permission.CANCEL,
    BulkAction.RETRY: Permission.REVIEW,
    BulkAction.RESOLVE: Permission.REVIEW,
}


@dataclass(frozen=True, slots=True)
class Preview:
    matched: int  # at most MAX_MATCHED
    more: bool  # more than MAX_MATCHED match (a start would be refused)
    sample: list[TaskSummary]


@dataclass(frozen=True, slots=True)
class Started:
    status: int  # 201 started, 200 the key's operation again
    deduplicated: bool
    operation: BulkOperation


def check_access(principal: Principal, request: BulkRequest) -> None:
    principal.require(Permission.READ)
    principal.require(PERMISSION[request.action])
    principal.require_queue(request.where.queue_id)


async def preview_bulk(store: BulkStore, principal: Principal, request: BulkRequest) -> Preview:
    check_access(principal, request)
    count, sample = await store.preview(request, MAX_MATCHED, SAMPLE_SIZE)
    return Preview(min(count, MAX_MATCHED), count > MAX_MATCHED, sample)


async def start_bulk(
    store: BulkStore, principal: Principal, request: BulkRequest, key: str, request_id: str
) -> Started:
    check_access(principal, request)
    new = NewOperation(
        new_id(), principal.namespace_id, principal.token_id, key, request_id, request
    )
    operation, existing = await store.start(new)
    if existing:
        return _replay(operation, request)
    return Started(201, False, operation)


def _replay(found: BulkOperation, request: BulkRequest) -> Started:
    same = (
        found.action is request.action
        and found.body == request.body
        and filter_json(found.filter) == filter_json(request.where)
    )
    if not same:
        raise IdempotencyConflict(
            "this Idempotency-Key started another bulk operation; use a new key"
        )
    return Started(200, True, found)
