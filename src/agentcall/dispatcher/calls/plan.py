"""The originate request the cell receives for an execution (pure)."""

from __future__ import annotations

import json

from agentcall.dispatcher.cell.port import CellPlan, CellTrunk
from agentcall.dispatcher.domain.admission import Plan


def cell_plan(execution_id: str, call_id: str, plan: Plan) -> CellPlan:
    """Pinned snapshot → the plan the cell dials (prefix + raw callee). ``amd`` only when
    the D chose it (DISPATCHER_AMD); else the cell's default applies."""
    return CellPlan(
        call_id=call_id,
        trunk=CellTrunk(**json.loads(plan.trunk_spec_json)),
        caller_id=plan.caller_id,
        callee=plan.callee,
        ring_timeout_ms=plan.ring_timeout_ms,
        max_duration_ms=plan.max_duration_ms,
        agent=json.loads(plan.agent_config_json),
        tags={
            "execution_id": execution_id,
            "task_id": plan.task_id,
            "command_id": plan.command_id,
        },
        amd=plan.amd,
    )
