"""Authoritative task status of the SaaS and the control each change publishes.

Rules (contract §3.4, D-CTL-*): ``stopped`` is irreversible; ``paused`` and
``running`` alternate; ``finished`` ends a task without a control action (the
contract has none) and may still be stopped so its queue can be retired;
``removed`` is only ever reached through queue retirement after ``stopped``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from agentcall.mocksaas.errors import IllegalTransition


class TaskStatus(enum.StrEnum):
    RUNNING = "running"
    PAUSED = "paused"
    STOPPED = "stopped"
    FINISHED = "finished"
    REMOVED = "removed"


class ControlAction(enum.StrEnum):
    PAUSE = "pause"
    RESUME = "resume"
    STOP = "stop"


class QueueState(enum.StrEnum):
    ACTIVE = "active"
    RETIRED = "retired"


_ALLOWED: dict[TaskStatus, frozenset[TaskStatus]] = {
    TaskStatus.RUNNING: frozenset({TaskStatus.PAUSED, TaskStatus.STOPPED, TaskStatus.FINISHED}),
    TaskStatus.PAUSED: frozenset({TaskStatus.RUNNING, TaskStatus.STOPPED, TaskStatus.FINISHED}),
    TaskStatus.FINISHED: frozenset({TaskStatus.STOPPED}),
    TaskStatus.STOPPED: frozenset({TaskStatus.REMOVED}),
    TaskStatus.REMOVED: frozenset(),
}

_CONTROL_FOR: dict[TaskStatus, ControlAction] = {
    TaskStatus.PAUSED: ControlAction.PAUSE,
    TaskStatus.RUNNING: ControlAction.RESUME,
    TaskStatus.STOPPED: ControlAction.STOP,
}

ADMIN_SETTABLE = frozenset(
    {TaskStatus.RUNNING, TaskStatus.PAUSED, TaskStatus.STOPPED, TaskStatus.FINISHED}
)


@dataclass(frozen=True)
class StatusChange:
    """What a requested status change does: a new event or only a re-published control."""

    new_status: TaskStatus
    appends_event: bool
    control: ControlAction | None


def plan_status_change(current: TaskStatus, requested: TaskStatus) -> StatusChange:
    """Decide a status change; raises :class:`IllegalTransition` when not allowed.

    Setting the current status again appends no event but re-publishes the matching
    control (controls are not deduplicated, D-CTL-1).
    """
    if requested not in ADMIN_SETTABLE:
        raise IllegalTransition(f"status {requested.value!r} cannot be set by the admin")
    if current is TaskStatus.REMOVED:
        raise IllegalTransition("the task was removed (queue retired)")
    if requested is current:
        return StatusChange(current, appends_event=False, control=_CONTROL_FOR.get(current))
    if requested not in _ALLOWED[current]:
        raise IllegalTransition(f"{current.value} -> {requested.value} is not allowed")
    return StatusChange(requested, appends_event=True, control=_CONTROL_FOR.get(requested))


def can_publish_calls(status: TaskStatus) -> bool:
    """The SaaS stops publishing call.execute once a task is stopped (§0, §3.4)."""
    return status in (TaskStatus.RUNNING, TaskStatus.PAUSED)


def should_retire(status: TaskStatus, queue_state: QueueState) -> bool:
    """A stopped/applied receipt retires the queue only of a stopped, active task."""
    return status is TaskStatus.STOPPED and queue_state is QueueState.ACTIVE
