"""Bulk operations (docs/orbit/bulk.md) behave the same on SQLite, MariaDB and the in-memory
twin: the bulk use cases run over `SqlBulkStore` or `MemoryBulk`, and the task writes over the
backend's task store. A start snapshots exactly the tasks its filter matches and is idempotent
by its key; a claim is one server's; the batches act on every matched task once, skip a task
that changed since the snapshot, and finish with done + skipped = matched."""

from __future__ import annotations

from typing import Any

import pytest

from agentcall.orbit.domain.bulk import BulkState, Outcome, parse_bulk
from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store.bulk_ports import BulkStore
from agentcall.orbit.store.bulk_store import SqlBulkStore
from agentcall.orbit.store.memory_bulk import MemoryBulk
from agentcall.orbit.usecases.bulk_batch import claim_next, run_batch
from agentcall.orbit.usecases.bulk_reads import bulk_tasks
from agentcall.orbit.usecases.bulk_start import preview_bulk, start_bulk
from tests.integration.orbit.store_behaviour.backends import Backend, new_key, submitted
from tests.integration.orbit.store_behaviour.memory_backend import MemoryBackend
from tests.integration.orbit.store_behaviour.sql_backend import SqlBackend

pytestmark = pytest.mark.integration


def bulk_store(backend: Backend) -> BulkStore:
    if isinstance(backend, MemoryBackend):
        return MemoryBulk(backend.store)
    assert isinstance(backend, SqlBackend)
    return SqlBulkStore(backend.db)


def cancel_body(principal: Principal, **filters: str) -> dict[str, Any]:
    (queue_id,) = principal.queue_ids
    return {"filter": {"queue_id": queue_id, **filters}, "action": "cancel", "reason": "done"}


async def claimed(bulks: BulkStore, server_id: str, operation_id: str) -> bool:
    """Whether `server_id` gets `operation_id` among what it can claim now (the SQL suite
    shares one database, so other tests' running operations may come first)."""
    while (got := await claim_next(bulks, server_id, 30)) is not None:
        if got == operation_id:
            return True
    return False


async def test_a_start_snapshots_what_the_filter_matches_and_replays_its_key(
    backend: Backend,
) -> None:
    principal = await backend.tenant()
    wanted = {await submitted(backend, principal, business_key="order-1") for _ in range(3)}
    await submitted(backend, principal, business_key="other")
    bulks = bulk_store(backend)
    request = parse_bulk(cancel_body(principal, business_key_prefix="order-"))
    preview = await preview_bulk(bulks, principal, request)
    assert (preview.matched, {t.id for t in preview.sample}) == (3, wanted)
    key = new_key()
    first = await start_bulk(bulks, principal, request, key, "r" * 32)
    again = await start_bulk(bulks, principal, request, key, "r" * 32)
    assert (first.status, again.status, again.deduplicated) == (201, 200, True)
    assert again.operation.id == first.operation.id
    items = await bulk_tasks(bulks, principal, first.operation.id, None, None, 10)
    assert {item.task_id for item in items} == wanted


async def test_a_claim_is_one_servers_and_the_batches_skip_a_task_that_changed(
    backend: Backend,
) -> None:
    principal = await backend.tenant()
    ids = [await submitted(backend, principal, business_key="batch") for _ in range(3)]
    bulks = bulk_store(backend)
    request = parse_bulk(cancel_body(principal, business_key="batch"))
    started = await start_bulk(bulks, principal, request, new_key(), "r" * 32)
    operation_id = started.operation.id
    server_a, server_b = new_key(), new_key()
    assert await claimed(bulks, server_a, operation_id)
    assert not await claimed(bulks, server_b, operation_id)
    changed = await backend.get(principal, ids[0])  # changed after the snapshot:
    await backend.cancel(
        principal, changed.id, CancelRequest(changed.revision, "meanwhile"), new_key()
    )
    for _ in range(10):  # a batch of 3 is one step; a store that never stops fails below
        if (await run_batch(bulks, backend.task_store, operation_id, server_a, 30)).stop:
            break
    op = await bulks.load(operation_id)
    assert op is not None and op.state is BulkState.SUCCEEDED
    assert (op.progress.done, op.progress.skipped, op.progress.failed) == (2, 1, 0)
    skipped = await bulk_tasks(bulks, principal, operation_id, Outcome.SKIPPED, None, 10)
    assert [item.task_id for item in skipped] == [ids[0]]
    for task_id in ids[1:]:
        assert (await backend.get(principal, task_id)).state is TaskState.CANCELLED
