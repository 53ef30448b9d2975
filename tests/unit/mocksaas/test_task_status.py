"""Authoritative task status transitions and the control each publishes (contract §3.4)."""

from __future__ import annotations

import pytest

from agentcall.mocksaas.domain.tasks import (
    ControlAction,
    QueueState,
    TaskStatus,
    can_publish_calls,
    plan_status_change,
    should_retire,
)
from agentcall.mocksaas.errors import IllegalTransition

R, P, S, F, X = (
    TaskStatus.RUNNING,
    TaskStatus.PAUSED,
    TaskStatus.STOPPED,
    TaskStatus.FINISHED,
    TaskStatus.REMOVED,
)


@pytest.mark.parametrize(
    ("current", "requested", "event", "control"),
    [
        (R, P, True, ControlAction.PAUSE),
        (P, R, True, ControlAction.RESUME),
        (R, S, True, ControlAction.STOP),
        (P, S, True, ControlAction.STOP),
        (R, F, True, None),
        (P, F, True, None),
        (F, S, True, ControlAction.STOP),
        (P, P, False, ControlAction.PAUSE),
        (R, R, False, ControlAction.RESUME),
        (S, S, False, ControlAction.STOP),
        (F, F, False, None),
    ],
)
def test_d_ctl_status_change_plan(
    current: TaskStatus, requested: TaskStatus, event: bool, control: ControlAction | None
) -> None:
    plan = plan_status_change(current, requested)
    assert plan.new_status is requested
    assert plan.appends_event is event
    assert plan.control is control


@pytest.mark.parametrize(
    ("current", "requested"),
    [(S, R), (S, P), (S, F), (F, R), (F, P), (X, R), (X, S), (R, X), (S, X)],
)
def test_d_ctl_4_stopped_is_irreversible_and_removed_is_not_settable(
    current: TaskStatus, requested: TaskStatus
) -> None:
    with pytest.raises(IllegalTransition):
        plan_status_change(current, requested)


@pytest.mark.parametrize(
    ("status", "ok"), [(R, True), (P, True), (S, False), (F, False), (X, False)]
)
def test_calls_only_to_running_or_paused(status: TaskStatus, ok: bool) -> None:
    assert can_publish_calls(status) is ok


@pytest.mark.parametrize(
    ("status", "queue", "ok"),
    [
        (S, QueueState.ACTIVE, True),
        (S, QueueState.RETIRED, False),
        (R, QueueState.ACTIVE, False),
        (P, QueueState.ACTIVE, False),
        (F, QueueState.ACTIVE, False),
    ],
)
def test_retire_only_stopped_active_queue(status: TaskStatus, queue: QueueState, ok: bool) -> None:
    assert should_retire(status, queue) is ok
