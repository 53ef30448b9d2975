"""Submit on every store: idempotency by key and content digest (O-SUB-1, O-SUB-2, O-NOTE-1),
one transaction with its event (O-SUB-4), nothing kept for a refused request (O-NOTE-6)."""

from __future__ import annotations

import json

import pytest

from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.errors import IdempotencyConflict, InvalidArgument, NotFound
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.times import format_time
from tests.integration.orbit.store_behaviour.backends import (
    Backend,
    Event,
    later,
    new_key,
    submit_body,
)

pytestmark = pytest.mark.integration


async def test_first_submit_is_201_and_its_replay_200_with_the_first_receipt(
    backend: Backend,
) -> None:
    """O-SUB-1, O-NOTE-1: the replay answers the first receipt, byte for byte."""
    principal = await backend.tenant()
    key = new_key()
    first = await backend.submit(principal, submit_body(principal), key)
    again = await backend.submit(principal, submit_body(principal), key)
    assert (first.status, first.deduplicated) == (201, False)
    assert (again.status, again.deduplicated) == (200, True)
    assert again.task_text == first.task_text
    view = json.loads(first.task_text)
    assert view["state"] == "WAITING" and view["revision"] == "1"
    task = await backend.get(principal, view["id"])
    assert (task.state, task.revision, task.attempt_count) == (TaskState.WAITING, 1, 0)
    assert task.available_at == task.created_at  # O-NOTE-4: acceptance time by default
    assert await backend.events(task.id) == [Event(1, "ACCEPTED", None, "WAITING")]


async def test_same_key_other_content_is_an_idempotency_conflict(backend: Backend) -> None:
    """O-SUB-1: 409 IDEMPOTENCY_CONFLICT, and the first task stays the only one."""
    principal = await backend.tenant()
    key = new_key()
    await backend.submit(principal, submit_body(principal), key)
    with pytest.raises(IdempotencyConflict):
        await backend.submit(principal, submit_body(principal, payload={"n": 2}), key)
    page = await backend.page(principal, None, None, 10)
    assert len(page.items) == 1


async def test_equal_numbers_have_one_digest(backend: Backend) -> None:
    """O-SUB-2: 1 and 1.0 are the same content; defaults given or omitted are too."""
    principal = await backend.tenant()
    key = new_key()
    first = await backend.submit(principal, submit_body(principal, payload={"n": 1}), key)
    same = submit_body(principal, payload={"n": 1.0}, recovery_safety="RECONCILE_ONLY")
    again = await backend.submit(principal, same, key)
    assert again.deduplicated and again.task_text == first.task_text


async def test_another_key_makes_another_task(backend: Backend) -> None:
    principal = await backend.tenant()
    one = await backend.submit(principal, submit_body(principal), new_key())
    two = await backend.submit(principal, submit_body(principal), new_key())
    assert json.loads(one.task_text)["id"] != json.loads(two.task_text)["id"]
    assert two.status == 201


async def test_a_key_is_scoped_to_its_namespace(backend: Backend) -> None:
    """O-SUB-1: the same key in another namespace is another identity."""
    one, other = await backend.tenant(), await backend.tenant()
    key = new_key()
    first = await backend.submit(one, submit_body(one), key)
    second = await backend.submit(other, submit_body(other), key)
    assert second.status == 201
    assert json.loads(first.task_text)["id"] != json.loads(second.task_text)["id"]
    with pytest.raises(NotFound):  # O-API-1: another namespace's task looks absent
        await backend.get(other, json.loads(first.task_text)["id"])


async def test_the_replay_keeps_the_first_receipt_after_the_task_changed(
    backend: Backend,
) -> None:
    """O-SUB-1: a replay returns the first receipt snapshot, even after a cancel."""
    principal = await backend.tenant()
    key = new_key()
    first = await backend.submit(principal, submit_body(principal), key)
    task_id = json.loads(first.task_text)["id"]
    await backend.cancel(principal, task_id, CancelRequest(1, "replaced"), new_key())
    again = await backend.submit(principal, submit_body(principal), key)
    assert again.deduplicated and json.loads(again.task_text)["state"] == "WAITING"
    assert (await backend.get(principal, task_id)).state is TaskState.CANCELLED


async def test_a_refused_submit_keeps_nothing_and_leaves_its_key_free(backend: Backend) -> None:
    """O-NOTE-6: a start deadline already past is refused; the key then accepts content."""
    principal = await backend.tenant()
    key = new_key()
    past = "2001-01-01T00:00:00Z"
    with pytest.raises(InvalidArgument):
        await backend.submit(principal, submit_body(principal, start_deadline_at=past), key)
    assert (await backend.page(principal, None, None, 10)).items == []
    accepted = await backend.submit(principal, submit_body(principal, payload={"n": 3}), key)
    assert accepted.status == 201


async def test_available_at_in_the_future_is_kept(backend: Backend) -> None:
    principal = await backend.tenant()
    at = later(await backend.now(), 3_600_000).replace(microsecond=0)
    body = submit_body(principal, available_at=format_time(at))
    receipt = await backend.submit(principal, body, new_key())
    task = await backend.get(principal, json.loads(receipt.task_text)["id"])
    assert task.available_at == at and task.available_at > task.created_at
