"""Rows the store tests start from, written through the store's own functions."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from agentcall.dispatcher.domain.admission import Plan
from agentcall.dispatcher.domain.states import InboxDecision
from agentcall.dispatcher.store import executions, inbox


def accept_execution(
    conn: Any,
    plan: Plan,
    *,
    execution_id: str,
    call_id: str,
    result_event_id: str,
    call_result_event_id: str,
    now: datetime,
) -> None:
    """`plan`'s command recorded as accepted in the inbox, with its execution inserted, as
    admission leaves them (with the test's own ids instead of the derived ones)."""
    inbox.record(
        conn,
        command_id=plan.command_id,
        task_id=plan.task_id,
        decision=InboxDecision.ACCEPTED,
        reason_code=None,
        execution_id=execution_id,
        result_event_id=result_event_id,
        now=now,
    )
    executions.insert(
        conn,
        execution_id=execution_id,
        call_id=call_id,
        call_result_event_id=call_result_event_id,
        plan=plan,
        now=now,
    )
