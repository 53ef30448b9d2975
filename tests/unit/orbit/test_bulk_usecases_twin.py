"""The bulk use cases (docs/orbit/bulk.md) against the in-memory twin of the bulk store:
a start snapshots the twin's matching tasks and is idempotent by its key, a claim is held by
one server until it lapses, and the batches cancel every matched task and finish."""

from __future__ import annotations

from typing import Any

import pytest

from agentcall.orbit.domain.bulk import BulkState, Outcome, parse_bulk
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.store.memory_bulk import MemoryBulk
from agentcall.orbit.usecases.bulk_batch import claim_next, run_batch
from agentcall.orbit.usecases.bulk_reads import bulk_tasks
from agentcall.orbit.usecases.bulk_start import preview_bulk, start_bulk
from tests.support.orbit_twin import TwinOrbit, twin_orbit

pytestmark = pytest.mark.unit
A, B = "a" * 32, "b" * 32


def cancel_body(twin: TwinOrbit, **filters: str) -> dict[str, Any]:
    return {
        "filter": {"queue_id": twin.queues["q"], **filters},
        "action": "cancel",
        "reason": "not needed",
    }


async def test_a_start_snapshots_the_matching_tasks_and_replays_its_key() -> None:
    twin = await twin_orbit(("q",))
    wanted = await twin.stock("q", 3, business_key="order-1")
    await twin.stock("q", 2, business_key="other")
    bulks = MemoryBulk(twin.store)
    request = parse_bulk(cancel_body(twin, business_key_prefix="order-"))
    preview = await preview_bulk(bulks, twin.principal, request)
    assert preview.matched == 3
    first = await start_bulk(bulks, twin.principal, request, "key-1", "r" * 32)
    again = await start_bulk(bulks, twin.principal, request, "key-1", "r" * 32)
    assert (first.status, again.status, again.deduplicated) == (201, 200, True)
    assert again.operation.id == first.operation.id
    items = await bulk_tasks(bulks, twin.principal, first.operation.id, None, None, 10)
    assert sorted(item.task_id for item in items) == sorted(wanted)


async def test_a_claim_is_one_servers_until_it_lapses() -> None:
    twin = await twin_orbit(("q",))
    await twin.stock("q", 1)
    bulks = MemoryBulk(twin.store)
    request = parse_bulk(cancel_body(twin, state="WAITING"))
    started = await start_bulk(bulks, twin.principal, request, "key-1", "r" * 32)
    assert await claim_next(bulks, A, 30) == started.operation.id
    assert await claim_next(bulks, B, 30) is None
    twin.clock.advance(30_001)
    assert await claim_next(bulks, B, 30) == started.operation.id


async def test_the_batches_cancel_every_matched_task_and_finish() -> None:
    twin = await twin_orbit(("q",))
    ids = await twin.stock("q", 3)
    bulks = MemoryBulk(twin.store)
    request = parse_bulk(cancel_body(twin, state="WAITING"))
    started = await start_bulk(bulks, twin.principal, request, "key-1", "r" * 32)
    operation_id = started.operation.id
    assert await claim_next(bulks, A, 30) == operation_id
    step = await run_batch(bulks, twin.store, operation_id, A, 30)
    assert step.stop and sorted(step.changed) == sorted(ids)
    op = await bulks.load(operation_id)
    assert op is not None and op.state is BulkState.SUCCEEDED
    assert op.progress.done == 3
    done = await bulk_tasks(bulks, twin.principal, operation_id, Outcome.DONE, None, 10)
    assert len(done) == 3
    assert all(twin.store.state.tasks[i].state is TaskState.CANCELLED for i in ids)
