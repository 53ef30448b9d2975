"""POST /v1/tasks/{id}:cancel request rules and the cancel decision (O-CAN-1;
WAITING, LEASED and RUNNING tasks, docs/orbit/task-control.md §3)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from datetime import datetime

from agentcall.orbit.domain.canonical import Digest, digest
from agentcall.orbit.domain.errors import InvalidArgument, StateConflict
from agentcall.orbit.domain.fields import ObjectReader
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.numbers import parse_decimal_uint64
from agentcall.orbit.domain.states import TaskState, check_transition
from agentcall.orbit.domain.task import Task, cancelled

CANCEL_FIELDS = frozenset({"expected_revision", "reason"})
MAX_REASON_CHARS = 1024
OPERATION = "tasks.cancel"


@dataclass(frozen=True, slots=True)
class CancelRequest:
    expected_revision: int
    reason: str


def parse_cancel(body: JsonValue) -> CancelRequest:
    fields = ObjectReader(body, CANCEL_FIELDS)
    revision_text = fields.raw("expected_revision", required=True)
    if not isinstance(revision_text, str):
        raise InvalidArgument('must be a decimal string such as "1"', "expected_revision")
    revision = parse_decimal_uint64(revision_text, "expected_revision", nonzero=True)
    reason = fields.string("reason", required=True, max_chars=MAX_REASON_CHARS)
    assert reason is not None
    if not reason.strip():
        raise InvalidArgument("must not be blank", "reason")
    return CancelRequest(revision, reason)


def cancel_digest(request: CancelRequest) -> Digest:
    return digest(
        OPERATION, {"expected_revision": str(request.expected_revision), "reason": request.reason}
    )


class CancelMode(enum.StrEnum):
    NOW = "NOW"  # WAITING: CANCELLED at once
    END_LEASE = "END_LEASE"  # LEASED: the unstarted attempt ends CANCELLED, so does the task
    REQUEST = "REQUEST"  # RUNNING: record cancel_requested_at and tell the worker


_MODES = {
    TaskState.WAITING: CancelMode.NOW,
    TaskState.LEASED: CancelMode.END_LEASE,
    TaskState.RUNNING: CancelMode.REQUEST,
}


@dataclass(frozen=True, slots=True)
class CancelPlan:
    mode: CancelMode
    revision: int  # the task's new revision


def plan_cancel(
    state: TaskState, revision: int, request: CancelRequest, *, requested: bool = False
) -> CancelPlan:
    """What a cancel does to a task in `state` at `revision` (`requested`: a cancel of the
    running attempt was already recorded), or StateConflict naming why it cannot."""
    mode = _MODES.get(state)
    if mode is None:
        hint = "; resolve or retry it (tasks:review)" if state is TaskState.NEEDS_REVIEW else ""
        raise StateConflict(f"a {state} task cannot be cancelled{hint}")
    if revision != request.expected_revision:
        raise StateConflict(
            f"expected_revision {request.expected_revision} does not match revision {revision}"
        )
    if requested:
        raise StateConflict("cancellation was already requested; the worker decides the end")
    if mode is not CancelMode.REQUEST:
        check_transition(state, TaskState.CANCELLED)
    return CancelPlan(mode, revision + 1)


def apply_cancel(task: Task, plan: CancelPlan, now: datetime) -> Task:
    """The task as the cancel leaves it."""
    if plan.mode is CancelMode.REQUEST:
        return replace(task, revision=plan.revision, cancel_requested_at=now, updated_at=now)
    return replace(cancelled(task, plan.revision, now), current_attempt_id=None)
