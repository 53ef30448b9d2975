"""Bodies the SaaS publishes: ``call.execute`` and ``task.control`` (contract §3)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from agentcall.mocksaas.domain.tasks import ControlAction
from agentcall.mocksaas.domain.timefmt import rfc3339

SCHEMA_VERSION = "command-next.v0.1-proposal"
CALLEE_BASE = 15_000_000_000


@dataclass(frozen=True)
class Envelope:
    dispatcher_id: str
    tenant_id: str
    tenant_key: str


def new_command_id() -> str:
    return f"cmd-{uuid.uuid4().hex}"


def new_trace_id() -> str:
    return f"trace-{uuid.uuid4().hex[:20]}"


def generated_callees(count: int, start: int = 0) -> list[str]:
    """``count`` raw callee numbers ``1500000xxxx`` starting at offset ``start``."""
    return [str(CALLEE_BASE + start + i) for i in range(count)]


def call_execute(
    env: Envelope,
    task_id: str,
    callee: str,
    *,
    command_id: str,
    now: datetime,
    not_after: timedelta,
    trace_id: str | None = None,
) -> dict[str, Any]:
    return {
        "schema_version": SCHEMA_VERSION,
        "dispatcher_id": env.dispatcher_id,
        "tenant_id": env.tenant_id,
        "tenant_key": env.tenant_key,
        "trace_id": trace_id or new_trace_id(),
        "issued_at": rfc3339(now),
        "command_id": command_id,
        "command_type": "call.execute",
        "not_after": rfc3339(now + not_after),
        "payload": {"task_id": task_id, "callee": callee},
    }


def task_control(
    env: Envelope,
    task_id: str,
    action: ControlAction,
    *,
    now: datetime,
    active_call_policy: str = "drain",
    reason: str = "mocksaas",
    not_after: timedelta = timedelta(minutes=5),
) -> dict[str, Any]:
    """A control; ``resume`` carries no ``active_call_policy``."""
    payload: dict[str, Any] = {"task_id": task_id, "action": action.value}
    if action is not ControlAction.RESUME:
        payload["active_call_policy"] = active_call_policy
    payload["reason"] = reason
    return {
        "schema_version": SCHEMA_VERSION,
        "dispatcher_id": env.dispatcher_id,
        "tenant_id": env.tenant_id,
        "tenant_key": env.tenant_key,
        "trace_id": new_trace_id(),
        "issued_at": rfc3339(now),
        "command_type": "task.control",
        "not_after": rfc3339(now + not_after),
        "payload": payload,
    }
