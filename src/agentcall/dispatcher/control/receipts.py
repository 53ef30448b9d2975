"""The control receipt: ``command.result`` for a ``task.control`` (contract §3.6, D-CTL-1).

Pure. The ``event_id`` is fixed when the control is received (one per processing), stored
with the processing, and the built body is stored in the outbox and republished byte for
byte, so a redelivered receipt keeps its event_id.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentcall.dispatcher.domain.control import ControlCommand, ControlDecision
from agentcall.dispatcher.domain.results import command_result


def control_result(
    *,
    event_id: str,
    command: ControlCommand,
    decision: ControlDecision,
    occurred_at: datetime,
    aggregate_version: int,
) -> dict[str, Any]:
    """The body of one control receipt; ``aggregate_version`` orders receipts of a task."""
    return command_result(
        event_id=event_id,
        command=command,
        occurred_at=occurred_at,
        aggregate=("task", command.task_id, aggregate_version),
        payload={
            "command_type": "task.control",
            "task_id": command.task_id,
            "action": command.action.value,
            "status": decision.status.value,
            "reason_code": decision.reason_code,
            "task_state": decision.task_state.value,
        },
    )
