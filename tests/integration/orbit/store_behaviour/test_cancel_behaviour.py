"""Cancel with revision on every store (O-CAN-1, docs/orbit/task-control.md §3): the
expected revision must match, a replay of the key answers the first receipt, a new key on a
cancelled task is a STATE_CONFLICT, and a live attempt is ended or asked to stop."""

from __future__ import annotations

import json

import pytest

from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.errors import IdempotencyConflict, StateConflict
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.protocol.messages import ResultOutcome
from tests.integration.orbit.store_behaviour.backends import (
    Backend,
    Event,
    new_key,
    ref_of,
    result_of,
    submitted,
    worker_peer,
)

pytestmark = pytest.mark.integration


async def test_a_waiting_task_cancels_once_and_replays(backend: Backend) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    key = new_key()
    first = await backend.cancel(principal, task_id, CancelRequest(1, "replaced"), key)
    assert (first.status, first.deduplicated, first.tell_worker) == (200, False, None)
    view = json.loads(first.task_text)
    assert (view["state"], view["revision"]) == ("CANCELLED", "2")
    assert "cancel_requested_at" in view and "completed_at" in view
    again = await backend.cancel(principal, task_id, CancelRequest(1, "replaced"), key)
    assert again.deduplicated and again.task_text == first.task_text
    with pytest.raises(IdempotencyConflict):
        await backend.cancel(principal, task_id, CancelRequest(1, "other reason"), key)
    with pytest.raises(StateConflict):
        await backend.cancel(principal, task_id, CancelRequest(2, "replaced"), new_key())
    assert (await backend.events(task_id))[-1] == Event(2, "CANCELLED", "WAITING", "CANCELLED")


async def test_a_stale_revision_is_a_state_conflict_and_changes_nothing(
    backend: Backend,
) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    key = new_key()
    with pytest.raises(StateConflict):
        await backend.cancel(principal, task_id, CancelRequest(7, "stale"), key)
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision) == (TaskState.WAITING, 1)
    done = await backend.cancel(principal, task_id, CancelRequest(1, "stale"), key)
    assert not done.deduplicated  # O-NOTE-6: the refused request did not take the key


async def test_a_leased_task_cancels_and_its_start_is_refused(backend: Backend) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    done = await backend.cancel(principal, task_id, CancelRequest(2, "no longer"), new_key())
    assert done.tell_worker == grant.attempt_id
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision, task.current_attempt_id) == (
        TaskState.CANCELLED,
        3,
        None,
    )
    refused = await backend.start(peer, ref_of(grant))
    assert (refused.ok, refused.code) == (False, "LEASE_LOST")
    assert await backend.lease(peer, 1) == []


async def test_a_running_task_is_asked_to_stop_and_its_confirmation_cancels(
    backend: Backend,
) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    early = await backend.start(peer, ref_of(grant))
    assert early.ok
    unasked = await backend.finish(peer, result_of(grant, ResultOutcome.CANCELLED))
    assert (unasked.ok, unasked.code) == (False, "INVALID_MESSAGE")
    asked = await backend.cancel(principal, task_id, CancelRequest(3, "stop it"), new_key())
    assert asked.tell_worker == grant.attempt_id
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision) == (TaskState.RUNNING, 4)
    assert task.cancel_requested_at is not None
    with pytest.raises(StateConflict):  # asked once: the worker decides the end
        await backend.cancel(principal, task_id, CancelRequest(4, "again"), new_key())
    (status,) = await backend.heartbeat(peer, [ref_of(grant)])
    assert status["status"] == "cancel_requested"
    confirmed = await backend.finish(peer, result_of(grant, ResultOutcome.CANCELLED))
    assert confirmed.ok and confirmed.fields["task_state"] == "CANCELLED"
    kinds = [event.kind for event in await backend.events(task_id)]
    assert kinds == ["ACCEPTED", "LEASED", "STARTED", "CANCEL_REQUESTED", "CANCELLED"]
