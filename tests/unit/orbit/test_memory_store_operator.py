"""The operator writes' port (`OperatorTransaction`, `OperatorWrite`) in the small: the typed
write refuses an inconsistent item, the pure row builder gives each move its columns, the SQL
writer sends the conditional statements before the journal rows, and the in-memory twin
applies a write whole or not at all, with the same row values as the SQL store."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from agentcall.orbit.domain.attempts import AttemptState, TaskFacts
from agentcall.orbit.domain.cancel import OPERATION, CancelRequest, cancel_digest
from agentcall.orbit.domain.evidence import EvidenceItem, EvidenceKind
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt
from agentcall.orbit.domain.review import parse_retry
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.strictjson import read_json
from agentcall.orbit.domain.submit import OPERATION as SUBMIT
from agentcall.orbit.domain.submit import parse_submit, submit_digest
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Principal, authenticate, generate_secret
from agentcall.orbit.domain.transitions import operator_task_row
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.memory import ManualClock, MemoryStore
from agentcall.orbit.store.memory_state import apply_task_values
from agentcall.orbit.store.operator_writes import operator_writes
from agentcall.orbit.store.ports import (
    ConcurrentChange,
    LiveAttempt,
    OperatorMove,
    OperatorTransaction,
    OperatorWrite,
)
from agentcall.orbit.store.sql import Insert, Update
from agentcall.orbit.usecases.retry import retry_task

pytestmark = pytest.mark.unit

T0 = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
NOTE = EvidenceItem("operator.log", EvidenceKind.NOTE, None, None, None, None, None, '"seen"')


async def _tenant(store: MemoryStore) -> Principal:
    record = await store.init(f"ns-{len(store.state.namespaces)}", "q", generate_secret())
    return authenticate(record, T0)


async def _task(store: MemoryStore, principal: Principal) -> Task:
    (queue_id,) = principal.queue_ids
    body = {"queue_id": queue_id, "handler": "h", "handler_version": "v1", "payload": 1}
    request = parse_submit(read_json(json.dumps({**body, "payload_version": "v1"}).encode()))
    scope = Scope(principal.namespace_id, SUBMIT, "", f"k{len(store.state.tasks)}")
    receipt = await store.submit(
        PendingSubmit(principal, request, scope, submit_digest(request), "r")
    )
    task = await store.load_task(json.loads(receipt.task_text)["id"])
    assert task is not None
    return task


def _cancel(
    principal: Principal,
    task: Task,
    move: OperatorMove = OperatorMove.CANCEL_WAITING,
    *,
    done: Task | None = None,
    attempt: LiveAttempt | None = None,
    evidence: tuple[EvidenceItem, ...] = (),
) -> OperatorWrite:
    """A cancel of `task` as read, by default to CANCELLED at the next revision."""
    done = done or replace(task, state=TaskState.CANCELLED, revision=task.revision + 1)
    scope = Scope(principal.namespace_id, OPERATION, task.id, "key")
    receipt = StoredReceipt(cancel_digest(CancelRequest(task.revision, "r")), 200, "{}")
    detail = {"reason": "r"}
    return OperatorWrite(
        move, task, done, detail, scope, receipt, principal, OPERATION, "r", attempt, evidence
    )


def _live(task: Task) -> LiveAttempt:
    """The task's LEASED attempt as a cancel reads it."""
    facts = TaskFacts(
        task.recovery_safety,
        task.retry,
        task.attempt_count,
        task.deadline_at,
        task.start_deadline_at,
        cancel_requested=False,
    )
    return LiveAttempt(
        "a" * 32,
        task.id,
        task.namespace_id,
        task.queue_id,
        1,
        AttemptState.LEASED,
        "0" * 64,
        "conn",
        T0,
        T0,
        None,
        None,
        None,
        0,
        task.state,
        task.revision,
        False,
        facts,
    )


async def test_an_operator_write_refuses_an_item_that_does_not_fit() -> None:
    store = MemoryStore(ManualClock(T0))
    principal = await _tenant(store)
    task = await _task(store, principal)
    with pytest.raises(ValueError, match="next revision"):
        _cancel(principal, task, done=replace(task, revision=task.revision + 2))
    with pytest.raises(ValueError, match="needs its attempt"):
        _cancel(principal, task, OperatorMove.CANCEL_LEASE)
    with pytest.raises(ValueError, match="needs its attempt"):
        _cancel(principal, task, OperatorMove.RESOLVE, evidence=(NOTE,))


@pytest.mark.parametrize(
    ("move", "state", "completed", "cleared"),
    [
        (OperatorMove.CANCEL_WAITING, "CANCELLED", True, True),
        (OperatorMove.CANCEL_LEASE, "CANCELLED", True, True),
        (OperatorMove.REQUEST_CANCEL, None, False, False),
        (OperatorMove.RETRY, "WAITING", False, True),
        (OperatorMove.RESOLVE, "SUCCEEDED", True, True),
    ],
)
async def test_each_move_sets_its_columns(
    move: OperatorMove, state: str | None, completed: bool, cleared: bool
) -> None:
    store = MemoryStore(ManualClock(T0))
    task = await _task(store, await _tenant(store))
    done = replace(task, state=TaskState(state) if state else task.state, revision=2)
    row = operator_task_row(move, done, T0)
    assert row.get("state") == state
    assert ("completed_at" in row and row["completed_at"] is not None) is completed
    assert ("current_attempt_id" in row) is cleared and row.get("current_attempt_id") is None
    assert row["updated_at"] == T0
    moved = apply_task_values(task, row)  # the twin takes every column the SQL store writes
    assert moved.updated_at == T0


async def test_the_sql_writer_sends_the_conditions_before_the_journal() -> None:
    store = MemoryStore(ManualClock(T0))
    principal = await _tenant(store)
    task = replace(await _task(store, principal), state=TaskState.LEASED, revision=2)
    attempt = _live(task)
    write = _cancel(principal, task, OperatorMove.CANCEL_LEASE, attempt=attempt, evidence=(NOTE,))
    conditional, rest = operator_writes(T0, write)
    assert [(type(w).__name__, w.table.name) for w in conditional] == [
        ("Insert", "idempotency_records"),
        ("Update", "task_attempts"),
        ("Update", "tasks"),
    ]
    assert [(type(w).__name__, w.table.name) for w in rest] == [
        ("Insert", "task_events"),
        ("Insert", "audit_log"),
        ("Insert", "task_attempt_evidence"),
        ("Update", "task_attempts"),
    ]
    ended, moved = conditional[1], conditional[2]
    assert isinstance(ended, Update) and isinstance(moved, Update)
    assert ended.where == {"state": "LEASED"}
    assert moved.where == {"state": "LEASED", "revision": 2}
    assert moved.rows[0]["revision"] == 3
    event = rest[0]
    assert isinstance(event, Insert)
    assert (event.rows[0]["revision"], event.rows[0]["kind"]) == (3, "CANCELLED")


async def test_a_stale_write_on_the_twin_leaves_nothing() -> None:
    store = MemoryStore(ManualClock(T0))
    principal = await _tenant(store)
    task = await _task(store, principal)
    before = store.state.copy()
    stale = replace(task, revision=task.revision - 1)

    async def step(tx: OperatorTransaction) -> None:
        now, _ = await tx.clock_and_receipt(Scope("", "", "", ""))
        await tx.apply_operator_write(now, _cancel(principal, stale))

    with pytest.raises(ConcurrentChange):
        await store.operator_write(Scope("", "", "", ""), step, lambda stored: None)
    assert store.state.tasks == before.tasks
    assert store.state.receipts == before.receipts and store.state.audits == before.audits
    assert store.state.events == before.events


async def test_the_product_retry_runs_on_the_twin() -> None:
    clock = ManualClock(T0)
    store = MemoryStore(clock)
    principal = await _tenant(store)
    task = await _task(store, principal)
    failed = replace(task, state=TaskState.FAILED, revision=2, error_code="HANDLER_FAILED")
    store.state.tasks[task.id] = failed
    request = parse_retry({"expected_revision": "2", "reason": "again"})
    written = await retry_task(store, principal, task.id, request, "k", "r")
    assert json.loads(written.task_text)["state"] == "WAITING"
    again = await store.load_task(task.id)
    assert again is not None
    assert (again.state, again.revision, again.error_code) == (TaskState.WAITING, 3, None)
    assert again.retry.max_attempts == 1  # attempt count (0) + 1, the column the SQL store sets
    assert again.available_at == again.updated_at and again.available_at > T0
