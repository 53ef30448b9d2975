"""The control receipt: ``command.result`` for a ``task.control`` (contract §3.6, D-CTL-1).

Pure. The ``event_id`` is fixed when the control is received (one per processing), stored
with the processing, and the built body is stored in the outbox and republished byte for
byte, so a redelivered receipt keeps its event_id.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentcall.dispatcher.domain.control import ControlCommand, ControlDecision
from agentcall.dispatcher.domain.results import COMMAND_SCHEMA, rfc3339


def control_result(
    *,
    event_id: str,
    command: ControlCommand,
    decision: ControlDecision,
    occurred_at: datetime,
    aggregate_version: int,
) -> dict[str, Any]:
    """The body of one control receipt; ``aggregate_version`` orders receipts of a task."""
    return {
        "schema_version": COMMAND_SCHEMA,
        "event_id": event_id,
        "event_type": "command.result",
        "dispatcher_id": command.dispatcher_id,
        "tenant_id": command.tenant_id,
        "tenant_key": command.tenant_key,
        "trace_id": command.trace_id,
        "occurred_at": rfc3339(occurred_at),
        "aggregate_type": "task",
        "aggregate_id": command.task_id,
        "aggregate_version": aggregate_version,
        "payload": {
            "command_type": "task.control",
            "task_id": command.task_id,
            "action": command.action.value,
            "status": decision.status.value,
            "reason_code": decision.reason_code,
            "task_state": decision.task_state.value,
        },
    }
