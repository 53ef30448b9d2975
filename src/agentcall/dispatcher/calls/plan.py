"""The originate request the cell receives for an execution (pure)."""

from __future__ import annotations

import json
from typing import Any

from agentcall.dispatcher.domain.admission import Plan


def cell_plan(execution_id: str, call_id: str, plan: Plan) -> dict[str, Any]:
    """Pinned snapshot → ``POST /v1/calls`` body; the cell dials prefix + raw callee.
    ``amd`` only when the D chose it (DISPATCHER_AMD); else the cell's default applies."""
    body: dict[str, Any] = {
        "call_id": call_id,
        "trunk": json.loads(plan.trunk_spec_json),
        "caller_id": plan.caller_id,
        "callee": plan.callee,
        "ring_timeout_ms": plan.ring_timeout_ms,
        "max_duration_ms": plan.max_duration_ms,
        "agent": json.loads(plan.agent_config_json),
        "tags": {
            "execution_id": execution_id,
            "task_id": plan.task_id,
            "command_id": plan.command_id,
        },
    }
    if plan.amd is not None:
        body["amd"] = plan.amd
    return body
