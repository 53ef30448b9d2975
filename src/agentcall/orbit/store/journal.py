"""Task events and the audit log. Neither copies business parameters (payloads)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.audit import Source
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store import audit
from agentcall.orbit.store.connector import write_all
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import audit_log, task_events


def _event_row(
    task: Task,
    kind: str,
    from_state: TaskState | None,
    now: datetime,
    detail: Mapping[str, JsonValue] | None,
) -> dict[str, Any]:
    return {
        "id": new_id(),
        "task_id": task.id,
        "revision": task.revision,
        "kind": kind,
        "from_state": from_state.value if from_state else None,
        "to_state": task.state.value,
        "detail": None if detail is None else dumps(detail),
        "created_at": now,
    }


def audit_row(
    principal: Principal,
    action: str,
    task: Task,
    request_id: str | None,
    now: datetime,
    source: Source | None = None,
    detail: Mapping[str, JsonValue] | None = None,
) -> dict[str, Any]:
    """One audit line: who did what to which task from where, no business payload
    (`store.audit.task_row`); `detail`: the operator's reason and the like."""
    return audit.task_row(principal, action, task, request_id, now, source, detail)


async def append_event(
    conn: AsyncConnection,
    task: Task,
    kind: str,
    from_state: TaskState | None,
    now: datetime,
    detail: Mapping[str, JsonValue] | None = None,
) -> None:
    """One event per task revision (unique on task_id + revision)."""
    await write_all(conn, [Insert(task_events, [_event_row(task, kind, from_state, now, detail)])])


async def append_audit(
    conn: AsyncConnection,
    principal: Principal,
    action: str,
    task: Task,
    request_id: str | None,
    now: datetime,
    source: Source | None = None,
) -> None:
    row = audit_row(principal, action, task, request_id, now, source)
    await write_all(conn, [Insert(audit_log, [row])])


def acceptance_rows(
    accepted: Sequence[tuple[Principal, Task, str]],
    action: str,
    now: datetime,
    sources: Sequence[Source | None] = (),
) -> tuple[Insert, Insert]:
    """The ACCEPTED event and the audit line of each new (principal, task, request ID) with
    its request's source (`sources`, in the same order, when known): one INSERT per table
    (`connector.insert_all`)."""
    events = [_event_row(task, "ACCEPTED", None, now, None) for _, task, _ in accepted]
    known = list(sources) + [None] * (len(accepted) - len(sources))
    audits = [
        audit_row(principal, action, task, request_id, now, source)
        for (principal, task, request_id), source in zip(accepted, known, strict=True)
    ]
    return Insert(task_events, events), Insert(audit_log, audits)
