"""A worker hands an attempt back (`release`, worker-protocol.md §3.6) on every store: an
unstarted one goes back to WAITING at once, a started RECONCILE_ONLY one to NEEDS_REVIEW
(O-STATE-1: never re-run blindly), a started IDEMPOTENT one is retried within its budget; a
resend is acknowledged again and a stale token refused."""

from __future__ import annotations

import pytest

from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.protocol.messages import AttemptRef, ReleaseReason
from tests.integration.orbit.store_behaviour.backends import (
    Backend,
    ref_of,
    submitted,
    worker_peer,
)

pytestmark = pytest.mark.integration
SHUTDOWN = ReleaseReason.SHUTDOWN


async def test_an_unstarted_attempt_handed_back_is_leased_again(backend: Backend) -> None:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (first,) = await backend.lease(peer, 1)
    ack = await backend.release(peer, ref_of(first), ReleaseReason.UNSUPPORTED)
    assert ack.ok and ack.fields["task_state"] == "WAITING" and ack.ended == first.attempt_id
    again = await backend.release(peer, ref_of(first), ReleaseReason.UNSUPPORTED)
    assert again.ok and again.fields["duplicate"] is True
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision, task.attempt_count) == (TaskState.WAITING, 3, 0)
    (second,) = await backend.lease(peer, 1)
    assert second.task.id == task_id and second.number == 2


@pytest.mark.parametrize(
    ("safety", "state"),
    [("RECONCILE_ONLY", TaskState.NEEDS_REVIEW), ("IDEMPOTENT", TaskState.WAITING)],
)
async def test_a_started_attempt_handed_back_follows_the_recovery_safety(
    backend: Backend, safety: str, state: TaskState
) -> None:
    principal = await backend.tenant()
    retry = {"max_attempts": 2, "initial_delay_ms": 1, "max_delay_ms": 1}
    task_id = await submitted(backend, principal, recovery_safety=safety, retry=retry)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    await backend.start(peer, ref_of(grant))
    stale = await backend.release(peer, AttemptRef(grant.attempt_id, "d" * 32), SHUTDOWN)
    assert (stale.ok, stale.code) == (False, "LEASE_LOST")
    ack = await backend.release(peer, ref_of(grant), SHUTDOWN)
    assert ack.ok and ack.fields["task_state"] == state.value
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision, task.attempt_count) == (state, 4, 1)
    assert (await backend.events(task_id))[-1].to_state == state.value
