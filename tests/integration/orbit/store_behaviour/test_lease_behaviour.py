"""Leasing, start and result on every store (worker-protocol.md §4-§5, O-STATE-1): which
tasks lease and in what order, revisions and events of each move, and the lease-token fence
(a stale token or another namespace's connection changes nothing)."""

from __future__ import annotations

import json

import pytest

from agentcall.orbit.domain.evidence import WorkerError
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.times import format_time, milliseconds
from agentcall.orbit.protocol.messages import AttemptRef, ResultOutcome
from tests.integration.orbit.store_behaviour.backends import (
    Backend,
    Event,
    later,
    new_key,
    ref_of,
    result_of,
    submit_body,
    submitted,
    worker_peer,
)

pytestmark = pytest.mark.integration


async def test_a_lease_moves_the_task_once_with_its_event(backend: Backend) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 5)
    assert grant.task.id == task_id and grant.number == 1
    assert grant.lease_expires_at == grant.leased_at + milliseconds(15_000)
    assert grant.attempt_deadline_at == grant.leased_at + milliseconds(30_000)
    assert await backend.lease(peer, 5) == []  # leased once only
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision, task.current_attempt_id) == (
        TaskState.LEASED,
        2,
        grant.attempt_id,
    )
    assert await backend.events(task_id) == [
        Event(1, "ACCEPTED", None, "WAITING"),
        Event(2, "LEASED", "WAITING", "LEASED"),
    ]


async def test_leases_go_oldest_ready_first_up_to_the_limit(backend: Backend) -> None:
    principal = await backend.tenant()
    ids = [await submitted(backend, principal, payload=n) for n in range(3)]
    peer = worker_peer(principal)
    first = await backend.lease(peer, 2)
    assert [grant.task.id for grant in first] == ids[:2]
    assert [grant.task.id for grant in await backend.lease(peer, 2)] == ids[2:]


async def test_only_ready_tasks_of_served_handlers_lease(backend: Backend) -> None:
    principal = await backend.tenant()
    at = later(await backend.now(), 10_000)
    ready_later = await submitted(backend, principal, available_at=format_time(at))
    await submitted(backend, principal, handler="other.work")
    peer = worker_peer(principal)
    assert await backend.lease(peer, 5) == []
    backend.advance(10_001)
    assert [grant.task.id for grant in await backend.lease(peer, 5)] == [ready_later]


async def test_start_then_success_moves_task_and_attempt(backend: Backend) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    started = await backend.start(peer, ref_of(grant))
    assert started.ok and started.fields["task_state"] == "RUNNING"
    assert started.fields["task_revision"] == "3" and started.fields["duplicate"] is False
    again = await backend.start(peer, ref_of(grant))
    assert again.ok and again.fields["duplicate"] is True
    running = await backend.get(principal, task_id)
    assert (running.state, running.revision, running.attempt_count) == (TaskState.RUNNING, 3, 1)
    done = await backend.finish(peer, result_of(grant, result_text='{"n":9007199254740993}'))
    assert done.ok and done.fields["task_state"] == "SUCCEEDED"
    assert done.fields["task_revision"] == "4" and done.ended == grant.attempt_id
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision, task.current_attempt_id) == (TaskState.SUCCEEDED, 4, None)
    assert task.result_text == '{"n":9007199254740993}' and task.completed_at is not None
    assert [event.kind for event in await backend.events(task_id)] == [
        "ACCEPTED",
        "LEASED",
        "STARTED",
        "SUCCEEDED",
    ]


async def test_a_resent_result_is_a_duplicate_and_another_a_conflict(backend: Backend) -> None:
    principal = await backend.tenant()
    await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    await backend.start(peer, ref_of(grant))
    result = result_of(grant)
    assert (await backend.finish(peer, result)).ok
    resent = await backend.finish(peer, result)
    assert resent.ok and resent.fields["duplicate"] is True
    other = await backend.finish(peer, result_of(grant, ResultOutcome.NEEDS_REVIEW))
    assert (other.ok, other.code) == (False, "RESULT_CONFLICT")


@pytest.mark.parametrize("which", ["stale token", "other namespace", "unknown attempt"])
async def test_the_fence_refuses_and_changes_nothing(backend: Backend, which: str) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    ref, asking = ref_of(grant), peer
    if which == "stale token":
        ref = AttemptRef(grant.attempt_id, "f" * 32)
    elif which == "other namespace":
        asking = worker_peer(await backend.tenant())
    else:
        ref = AttemptRef("0" * 32, grant.lease_token)
    code = "LEASE_LOST" if which == "stale token" else "ATTEMPT_NOT_FOUND"
    refused = await backend.start(asking, ref)
    assert (refused.ok, refused.code) == (False, code)
    finished = await backend.finish(asking, result_of(grant, lease_token=ref.lease_token))
    assert not finished.ok
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision) == (TaskState.LEASED, 2)


async def test_a_result_before_the_start_is_refused(backend: Backend) -> None:
    principal = await backend.tenant()
    await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    refused = await backend.finish(peer, result_of(grant))
    assert (refused.ok, refused.code) == (False, "INVALID_MESSAGE")


async def test_a_handler_failure_fails_the_task_with_its_message(backend: Backend) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    await backend.start(peer, ref_of(grant))
    error = WorkerError("E_BAD", "the input is broken", False)
    ack = await backend.finish(peer, result_of(grant, ResultOutcome.FAILED, error=error))
    assert ack.ok and ack.fields["task_state"] == "FAILED"
    task = await backend.get(principal, task_id)
    assert (task.state, task.error_code) == (TaskState.FAILED, "HANDLER_FAILED")
    assert task.error_message == "the input is broken"
    assert json.loads(task.attempt_error_text or "") == {
        "code": "E_BAD",
        "message": "the input is broken",
        "retryable": False,
    }


async def test_a_retryable_failure_requeues_within_the_budget(backend: Backend) -> None:
    """O-STATE-1: an IDEMPOTENT task is retried within its attempt budget, then fails."""
    principal = await backend.tenant()
    retry = {"max_attempts": 2, "initial_delay_ms": 1, "max_delay_ms": 1}
    body = submit_body(principal, recovery_safety="IDEMPOTENT", retry=retry)
    receipt = await backend.submit(principal, body, new_key())
    task_id = json.loads(receipt.task_text)["id"]
    peer = worker_peer(principal)
    error = WorkerError("E_BUSY", "try again", True)
    numbers, states = [], []
    for _ in range(2):
        (grant,) = await backend.lease(peer, 1)
        numbers.append(grant.number)
        await backend.start(peer, ref_of(grant))
        ack = await backend.finish(peer, result_of(grant, ResultOutcome.FAILED, error=error))
        states.append(ack.fields["task_state"])
    assert numbers == [1, 2] and states == ["WAITING", "FAILED"]
    task = await backend.get(principal, task_id)
    assert (task.state, task.attempt_count, task.error_code) == (
        TaskState.FAILED,
        2,
        "ATTEMPTS_EXHAUSTED",
    )
    kinds = [event.kind for event in await backend.events(task_id)]
    assert kinds == ["ACCEPTED", "LEASED", "STARTED", "REQUEUED", "LEASED", "STARTED", "FAILED"]
    assert [event.revision for event in await backend.events(task_id)] == list(range(1, 8))
