"""Heartbeats and the sweeper on every store, on the store's clock (worker-protocol.md
§3.5, §6; O-STATE-1): a renewed lease outlives its first term, a lost lease of a started
RECONCILE_ONLY task goes to NEEDS_REVIEW, an unstarted one goes back to WAITING, an
IDEMPOTENT one is retried within its budget, deadlines fail WAITING tasks and late starts."""

from __future__ import annotations

import pytest

from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.execution.acks import Grant, Peer
from agentcall.orbit.protocol.messages import AttemptRef
from tests.integration.orbit.store_behaviour.backends import (
    Backend,
    later,
    ref_of,
    result_of,
    submitted,
    worker_peer,
)

pytestmark = pytest.mark.integration


async def _running(backend: Backend, **fields: object) -> tuple[str, Peer, Grant, str]:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal, **fields)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    assert (await backend.start(peer, ref_of(grant))).ok
    return task_id, peer, grant, principal.namespace_id


async def _ended_here(backend: Backend, grant: Grant) -> list[str]:
    """The reasons the sweep gave for this attempt (other tests' attempts may end too)."""
    report = await backend.sweep()
    return [why for _, attempt_id, why in report.cancels if attempt_id == grant.attempt_id]


async def test_a_heartbeat_renews_the_lease(backend: Backend) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    await backend.start(peer, ref_of(grant))
    backend.advance(10_000)
    (status,) = await backend.heartbeat(peer, [ref_of(grant)])
    assert status["status"] == "ok" and "lease_expires_at" in status
    backend.advance(10_000)  # past the first term (15 s), within the renewed one
    assert await _ended_here(backend, grant) == []
    assert (await backend.get(principal, task_id)).state is TaskState.RUNNING
    backend.advance(6_000)
    assert await _ended_here(backend, grant) == ["lease_lost"]


async def test_a_heartbeat_with_a_stale_token_is_lost_and_renews_nothing(
    backend: Backend,
) -> None:
    _, peer, grant, _ = await _running(backend)
    (status,) = await backend.heartbeat(peer, [AttemptRef(grant.attempt_id, "e" * 32)])
    assert status == {"attempt_id": grant.attempt_id, "status": "lost"}
    backend.advance(15_001)
    assert await _ended_here(backend, grant) == ["lease_lost"]


async def test_a_lost_reconcile_only_task_goes_to_review(backend: Backend) -> None:
    """O-STATE-1: never re-run blindly; a late result is refused."""
    task_id, peer, grant, _ = await _running(backend)
    backend.advance(14_000)
    assert await _ended_here(backend, grant) == []
    backend.advance(1_001)
    assert await _ended_here(backend, grant) == ["lease_lost"]
    late = await backend.finish(peer, result_of(grant))
    assert (late.ok, late.code) == (False, "LEASE_LOST")
    (status,) = await backend.heartbeat(peer, [ref_of(grant)])
    assert status["status"] == "lost"
    events = await backend.events(task_id)
    assert (events[-1].kind, events[-1].revision) == ("NEEDS_REVIEW", 4)


async def test_review_carries_the_lost_attempt_code(backend: Backend) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    await backend.start(peer, ref_of(grant))
    backend.advance(15_001)
    await backend.sweep()
    task = await backend.get(principal, task_id)
    assert (task.state, task.error_code, task.current_attempt_id) == (
        TaskState.NEEDS_REVIEW,
        "ATTEMPT_LOST",
        None,
    )


async def test_an_unstarted_lease_that_expires_goes_back_to_waiting(backend: Backend) -> None:
    """The handler provably never ran: the task is handed on, whatever its safety."""
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (first,) = await backend.lease(peer, 1)
    backend.advance(15_001)
    assert await _ended_here(backend, first) == ["lease_lost"]
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision, task.attempt_count) == (TaskState.WAITING, 3, 0)
    (second,) = await backend.lease(peer, 1)
    assert second.number == 2 and second.task.id == task_id
    late = await backend.start(peer, ref_of(first))
    assert (late.ok, late.code) == (False, "LEASE_LOST")


async def test_an_idempotent_task_is_retried_after_a_lost_lease(backend: Backend) -> None:
    retry = {"max_attempts": 2, "initial_delay_ms": 1, "max_delay_ms": 1}
    task_id, peer, grant, _ = await _running(backend, recovery_safety="IDEMPOTENT", retry=retry)
    backend.advance(15_001)
    await _ended_here(backend, grant)
    (second,) = await backend.lease(peer, 1)
    assert second.task.id == task_id and second.number == 2
    await backend.start(peer, ref_of(second))
    backend.advance(15_001)
    await _ended_here(backend, second)
    events = await backend.events(task_id)
    assert [event.kind for event in events][-3:] == ["LEASED", "STARTED", "FAILED"]
    assert await backend.lease(peer, 1) == []


async def test_the_attempt_deadline_times_out_a_heartbeating_attempt(backend: Backend) -> None:
    task_id, peer, grant, _ = await _running(backend)
    for _ in range(2):
        backend.advance(10_000)
        (status,) = await backend.heartbeat(peer, [ref_of(grant)])
        assert status["status"] == "ok"
    backend.advance(10_001)  # 30 s: the attempt's deadline (retry.attempt_timeout_ms)
    assert await _ended_here(backend, grant) == ["attempt_timeout"]
    events = await backend.events(task_id)
    assert events[-1].kind == "NEEDS_REVIEW"


async def test_a_closed_connection_keeps_its_leases_for_the_grace_only(backend: Backend) -> None:
    _, peer, grant, _ = await _running(backend)
    await backend.disconnect(peer)
    backend.advance(4_000)
    assert await _ended_here(backend, grant) == []
    backend.advance(1_001)
    assert await _ended_here(backend, grant) == ["lease_lost"]


async def test_a_waiting_task_past_its_start_deadline_fails(backend: Backend) -> None:
    principal = await backend.tenant()
    deadline = later(await backend.now(), 5_000)
    task_id = await submitted(backend, principal, start_deadline_at=format_time(deadline))
    backend.advance(5_001)
    await backend.sweep()
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision, task.error_code) == (
        TaskState.FAILED,
        2,
        "START_DEADLINE_EXCEEDED",
    )
    assert task.completed_at is not None
    assert (await backend.events(task_id))[-1].kind == "FAILED"


async def test_a_start_after_the_start_deadline_fails_the_task(backend: Backend) -> None:
    principal = await backend.tenant()
    deadline = later(await backend.now(), 5_000)
    task_id = await submitted(backend, principal, start_deadline_at=format_time(deadline))
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    backend.advance(5_001)
    refused = await backend.start(peer, ref_of(grant))
    assert (refused.ok, refused.code) == (False, "START_DEADLINE_EXCEEDED")
    task = await backend.get(principal, task_id)
    assert (task.state, task.error_code, task.attempt_count) == (
        TaskState.FAILED,
        "START_DEADLINE_EXCEEDED",
        0,
    )
