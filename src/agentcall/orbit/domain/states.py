"""Task states (O-STATE-1) and the transition table: submit and cancel, workers and leases,
retries and review all move a task along these edges only."""

from __future__ import annotations

import enum

from agentcall.orbit.domain.errors import IllegalTransition


class TaskState(enum.StrEnum):
    WAITING = "WAITING"
    LEASED = "LEASED"
    RUNNING = "RUNNING"
    NEEDS_REVIEW = "NEEDS_REVIEW"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({TaskState.SUCCEEDED, TaskState.FAILED, TaskState.CANCELLED})

_S = TaskState
TRANSITIONS: dict[TaskState, frozenset[TaskState]] = {
    # accepted and waiting for a lease; a cancel ends it at once
    _S.WAITING: frozenset({_S.LEASED, _S.CANCELLED, _S.FAILED}),
    # leased by a worker: it starts, or the lease is lost (retry or review), or the deadline hits
    # cancel of a LEASED task ends its unstarted attempt at once (docs/orbit/task-control.md §3)
    _S.LEASED: frozenset({_S.RUNNING, _S.WAITING, _S.NEEDS_REVIEW, _S.FAILED, _S.CANCELLED}),
    # a RUNNING task is CANCELLED when its worker confirms a requested cancel
    _S.RUNNING: frozenset({_S.SUCCEEDED, _S.FAILED, _S.WAITING, _S.NEEDS_REVIEW, _S.CANCELLED}),
    # a human decides (tasks:review): re-run, or settle the outcome
    _S.NEEDS_REVIEW: frozenset({_S.WAITING, _S.SUCCEEDED, _S.FAILED, _S.CANCELLED}),
    # terminal: only an operator's manual retry (tasks:review) reopens a FAILED task, see
    # agentcall.orbit.domain.review.decide_retry (docs/orbit/task-control.md §2)
    _S.SUCCEEDED: frozenset(),
    _S.FAILED: frozenset(),
    _S.CANCELLED: frozenset(),
}


def check_transition(source: TaskState, target: TaskState) -> None:
    if target not in TRANSITIONS[source]:
        raise IllegalTransition(f"a task cannot move from {source} to {target}")
