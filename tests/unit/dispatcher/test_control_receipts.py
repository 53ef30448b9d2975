"""Every receipt the table can produce is a valid control_result (D-CTL-1, D-CTL-5)."""

from __future__ import annotations

import itertools

import pytest

from agentcall.dispatcher import contracts
from agentcall.dispatcher.control.receipts import control_result
from agentcall.dispatcher.domain.control import ControlAction, ReadFailure, decide
from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from tests.support.control_fakes import NOW, command

READS = (*TaskStatus, *ReadFailure)


@pytest.mark.parametrize(
    ("barrier", "action", "read"), list(itertools.product(Barrier, ControlAction, READS))
)
def test_every_receipt_is_schema_valid_d_ctl_5(
    barrier: Barrier, action: ControlAction, read: TaskStatus | ReadFailure
) -> None:
    decision = decide(barrier, action, read)
    body = control_result(
        event_id="event-1",
        command=command(action.value),
        decision=decision,
        occurred_at=NOW,
        aggregate_version=4,
    )
    contracts.validate(contracts.Kind.CONTROL_RESULT, body)
    assert body["aggregate_id"] == "task-a" and body["payload"]["action"] == action.value


def test_receipt_matches_the_spec_example_shape_d_ctl_1() -> None:
    decision = decide(Barrier.CLOSED, ControlAction.PAUSE, TaskStatus.PAUSED)
    body = control_result(
        event_id="control-result-a",
        command=command("pause"),
        decision=decision,
        occurred_at=NOW,
        aggregate_version=2,
    )
    assert body["payload"] == {
        "command_type": "task.control",
        "task_id": "task-a",
        "action": "pause",
        "status": "applied",
        "reason_code": "applied",
        "task_state": "paused",
    }
    assert (body["event_type"], body["aggregate_type"], body["occurred_at"]) == (
        "command.result",
        "task",
        "2026-09-21T00:00:10.000Z",
    )
