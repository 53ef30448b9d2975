"""Keyset listing on every store (O-LST-1, O-NOTE-2): newest first on (created_at, id),
pages without gaps or repeats, a next position only when another row exists."""

from __future__ import annotations

import json

import pytest

from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import TaskSummary
from tests.integration.orbit.store_behaviour.backends import Backend, new_key, submit_body

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(("count", "limit"), [(7, 3), (6, 3), (3, 3), (1, 5), (0, 2)])
async def test_pages_walk_every_task_once_newest_first(
    backend: Backend, count: int, limit: int
) -> None:
    """O-LST-1, O-NOTE-2: also when the last page is exactly full, it has no next position."""
    principal = await backend.tenant()
    for n in range(count):
        await backend.submit(principal, submit_body(principal, payload=n), new_key())
    seen: list[TaskSummary] = []
    after: Position | None = None
    pages = 0
    while True:
        page = await backend.page(principal, None, after, limit)
        pages += 1
        assert len(page.items) <= limit
        seen.extend(page.items)
        if page.next_position is None:
            break
        assert len(page.items) == limit
        after = page.next_position
    assert len(seen) == count
    assert len({item.id for item in seen}) == count
    keys = [(item.created_at, item.id) for item in seen]
    assert keys == sorted(keys, reverse=True)
    assert pages == max(1, -(-count // limit))


async def test_the_state_filter_and_its_position(backend: Backend) -> None:
    principal = await backend.tenant()
    ids = []
    for n in range(5):
        receipt = await backend.submit(principal, submit_body(principal, payload=n), new_key())
        ids.append(json.loads(receipt.task_text)["id"])
    for task_id in ids[1::2]:
        await backend.cancel(principal, task_id, CancelRequest(1, "not needed"), new_key())
    first = await backend.page(principal, TaskState.WAITING, None, 2)
    assert first.next_position is not None and first.next_position.state is TaskState.WAITING
    rest = await backend.page(principal, TaskState.WAITING, first.next_position, 2)
    waiting = [item.id for item in [*first.items, *rest.items]]
    assert rest.next_position is None
    assert sorted(waiting) == sorted(ids[0::2])
    cancelled = await backend.page(principal, TaskState.CANCELLED, None, 10)
    assert sorted(item.id for item in cancelled.items) == sorted(ids[1::2])
    assert all(item.revision == 2 for item in cancelled.items)
