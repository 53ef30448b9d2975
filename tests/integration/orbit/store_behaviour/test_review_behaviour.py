"""Retry and resolve on every store (docs/orbit/task-control.md §2): a FAILED or NEEDS_REVIEW
task is retried to WAITING with one more attempt; a NEEDS_REVIEW task is resolved with an
outcome (and evidence on its last attempt); the expected revision must match, a replay of the
key answers the first receipt, other content under it is an IDEMPOTENCY_CONFLICT, a refused
request keeps nothing (O-NOTE-6), and every other state is a STATE_CONFLICT."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentcall.orbit.domain.errors import IdempotencyConflict, StateConflict
from agentcall.orbit.domain.evidence import WorkerError
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.review import ResolveRequest, RetryRequest, parse_resolve, parse_retry
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.execution.acks import Grant, Peer
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

FAILED_BY_HANDLER = WorkerError("E_BAD", "the handler gave up", False)
UNSURE = WorkerError("E_UNSURE", "the outcome is unknown", None)


def retry(revision: int, reason: str = "fixed upstream") -> RetryRequest:
    return parse_retry({"expected_revision": str(revision), "reason": reason})


def resolve(revision: int, **fields: JsonValue) -> ResolveRequest:
    body: dict[str, JsonValue] = {"expected_revision": str(revision), "reason": "checked"}
    if "outcome" not in fields:
        body.update(outcome="succeeded", result={"paid": True})
    body.update(fields)
    return parse_resolve(body)


async def _ended(
    backend: Backend, outcome: ResultOutcome, error: WorkerError
) -> tuple[Principal, str, Peer, Grant]:
    """A task whose one attempt ended with `outcome` (revision 4: accepted, leased, started,
    ended)."""
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    assert (await backend.start(peer, ref_of(grant))).ok
    assert (await backend.finish(peer, result_of(grant, outcome, error=error))).ok
    return principal, task_id, peer, grant


@pytest.mark.parametrize(
    ("outcome", "error", "state"),
    [
        (ResultOutcome.FAILED, FAILED_BY_HANDLER, "FAILED"),
        (ResultOutcome.NEEDS_REVIEW, UNSURE, "NEEDS_REVIEW"),
    ],
)
async def test_a_retry_reopens_the_task_once_and_replays(
    backend: Backend, outcome: ResultOutcome, error: WorkerError, state: str
) -> None:
    principal, task_id, peer, _ = await _ended(backend, outcome, error)
    assert (await backend.get(principal, task_id)).state.value == state
    key = new_key()
    first = await backend.retry(principal, task_id, retry(4), key)
    assert (first.status, first.deduplicated, first.tell_worker) == (200, False, None)
    view = json.loads(first.task_text)
    assert (view["state"], view["revision"], view["retry"]["max_attempts"]) == ("WAITING", "5", 2)
    assert "error" not in view and "completed_at" not in view
    again = await backend.retry(principal, task_id, retry(4), key)
    assert again.deduplicated and again.task_text == first.task_text
    with pytest.raises(IdempotencyConflict):
        await backend.retry(principal, task_id, retry(4, "other reason"), key)
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision, task.error_code, task.retry.max_attempts) == (
        TaskState.WAITING,
        5,
        None,
        2,
    )
    assert (await backend.events(task_id))[-1] == Event(5, "RETRIED", state, "WAITING")
    (grant,) = await backend.lease(peer, 1)  # the one more attempt
    assert grant.number == 2


async def test_a_stale_retry_is_a_state_conflict_and_keeps_nothing(backend: Backend) -> None:
    principal, task_id, _, _ = await _ended(backend, ResultOutcome.FAILED, FAILED_BY_HANDLER)
    key = new_key()
    with pytest.raises(StateConflict):
        await backend.retry(principal, task_id, retry(3), key)
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision) == (TaskState.FAILED, 4)
    assert [e.kind for e in await backend.events(task_id)][-1] == "FAILED"
    done = await backend.retry(principal, task_id, retry(4), key)
    assert not done.deduplicated  # O-NOTE-6: the refused request did not take the key


async def test_a_resolution_settles_the_outcome_once_and_replays(backend: Backend) -> None:
    principal, task_id, _, _ = await _ended(backend, ResultOutcome.NEEDS_REVIEW, UNSURE)
    key = new_key()
    first = await backend.resolve(principal, task_id, resolve(4), key)
    assert (first.status, first.deduplicated) == (200, False)
    view = json.loads(first.task_text)
    assert (view["state"], view["revision"], view["result"]) == ("SUCCEEDED", "5", {"paid": True})
    again = await backend.resolve(principal, task_id, resolve(4), key)
    assert again.deduplicated and again.task_text == first.task_text
    with pytest.raises(IdempotencyConflict):
        await backend.resolve(principal, task_id, resolve(4, outcome="succeeded", result=1), key)
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision, task.result_text) == (
        TaskState.SUCCEEDED,
        5,
        '{"paid":true}',
    )
    assert task.completed_at is not None and task.error_code is None
    assert (await backend.events(task_id))[-1] == Event(5, "RESOLVED", "NEEDS_REVIEW", "SUCCEEDED")


async def test_a_failed_resolution_keeps_the_operators_error_and_evidence(
    backend: Backend,
) -> None:
    principal, task_id, _, grant = await _ended(backend, ResultOutcome.NEEDS_REVIEW, UNSURE)
    note = {"key": "call-log", "kind": "note", "data": {"seen": "no charge"}}
    error = {"code": "NOT_CHARGED", "message": "the bank shows no charge"}
    request = resolve(4, outcome="failed", error=error, evidence=[note])
    key = new_key()
    done = await backend.resolve(principal, task_id, request, key)
    view = json.loads(done.task_text)
    assert (view["state"], view["error"]["code"]) == ("FAILED", "NOT_CHARGED")
    task = await backend.get(principal, task_id)
    assert (task.state, task.error_code, task.error_message) == (
        TaskState.FAILED,
        "NOT_CHARGED",
        "the bank shows no charge",
    )
    assert await backend.evidence_keys(grant.attempt_id) == ["operator.call-log"]
    again = await backend.resolve(principal, task_id, request, key)
    assert again.deduplicated and again.task_text == done.task_text
    assert await backend.evidence_keys(grant.attempt_id) == ["operator.call-log"]
    assert (await backend.events(task_id))[-1] == Event(5, "RESOLVED", "NEEDS_REVIEW", "FAILED")


async def test_a_stale_resolution_is_a_state_conflict_and_keeps_nothing(backend: Backend) -> None:
    principal, task_id, _, grant = await _ended(backend, ResultOutcome.NEEDS_REVIEW, UNSURE)
    note = {"key": "call-log", "kind": "note", "data": {"seen": "no charge"}}
    key = new_key()
    with pytest.raises(StateConflict):
        await backend.resolve(principal, task_id, resolve(5, evidence=[note]), key)
    task = await backend.get(principal, task_id)
    assert (task.state, task.revision) == (TaskState.NEEDS_REVIEW, 4)
    assert await backend.evidence_keys(grant.attempt_id) == []
    done = await backend.resolve(principal, task_id, resolve(4), key)
    assert not done.deduplicated


async def _waiting(backend: Backend) -> tuple[Principal, str, int]:
    principal = await backend.tenant()
    return principal, await submitted(backend, principal), 1


async def _succeeded(backend: Backend) -> tuple[Principal, str, int]:
    principal = await backend.tenant()
    task_id = await submitted(backend, principal)
    peer = worker_peer(principal)
    (grant,) = await backend.lease(peer, 1)
    assert (await backend.start(peer, ref_of(grant))).ok
    assert (await backend.finish(peer, result_of(grant))).ok
    return principal, task_id, 4


async def _failed(backend: Backend) -> tuple[Principal, str, int]:
    principal, task_id, _, _ = await _ended(backend, ResultOutcome.FAILED, FAILED_BY_HANDLER)
    return principal, task_id, 4


@pytest.mark.parametrize(
    ("make", "operation"),
    [
        (_waiting, "retry"),
        (_succeeded, "retry"),
        (_waiting, "resolve"),
        (_succeeded, "resolve"),
        (_failed, "resolve"),
    ],
)
async def test_other_states_are_a_state_conflict_and_change_nothing(
    backend: Backend, make: Any, operation: str
) -> None:
    principal, task_id, revision = await make(backend)
    before = await backend.get(principal, task_id)
    with pytest.raises(StateConflict):
        if operation == "retry":
            await backend.retry(principal, task_id, retry(revision), new_key())
        else:
            await backend.resolve(principal, task_id, resolve(revision), new_key())
    assert await backend.get(principal, task_id) == before
