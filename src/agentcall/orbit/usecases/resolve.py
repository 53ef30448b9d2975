"""POST /v1/tasks/{id}:resolve (docs/orbit/task-control.md §2): one transaction with the
idempotency record, the conditional task update (revision + 1), the RESOLVED event and the
audit row (`orbit.usecases.task_writes`). A resolution's evidence is recorded on the task's
last attempt under keys prefixed `operator.`, next to what the worker recorded, so that the
attempt history shows both (the audit row names the operator's token)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from functools import partial

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.errors import InvalidArgument, StateConflict
from agentcall.orbit.domain.evidence import EvidenceItem
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.review import (
    OPERATOR_KEY_PREFIX,
    RESOLVE_OPERATION,
    ResolveRequest,
    decide_resolve,
    resolve_digest,
)
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.domain.transitions import LiveAttempt, resolved_task_row
from agentcall.orbit.domain.worker_errors import EvidenceConflict, EvidenceLimit
from agentcall.orbit.store import execution as store
from agentcall.orbit.store.attempts import last_attempt_id
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.evidence import check_evidence, insert_evidence
from agentcall.orbit.usecases.task_writes import Change, TaskWrite, Written, move_task, write_task


async def resolve_task(
    db: Database,
    principal: Principal,
    task_id: str,
    request: ResolveRequest,
    key: str,
    request_id: str,
) -> Written:
    principal.require(Permission.REVIEW)
    scope = Scope(principal.namespace_id, RESOLVE_OPERATION, task_id, key)
    write = TaskWrite(
        principal, task_id, scope, resolve_digest(request), RESOLVE_OPERATION, request_id
    )
    return await write_task(db, write, partial(_plan_resolve, request))


async def _plan_resolve(
    request: ResolveRequest, conn: AsyncConnection, task: Task, now: datetime
) -> Change:
    done = decide_resolve(task, request, now)
    evidence = [replace(item, key=OPERATOR_KEY_PREFIX + item.key) for item in request.evidence]
    live = await _last_attempt(conn, task.id) if evidence else None
    fresh = await _checked(conn, live, evidence)
    detail: dict[str, JsonValue] = {
        "reason": request.reason,
        "outcome": request.outcome.value,
        "expected_revision": str(task.revision),
        "evidence": [item.key for item in evidence],
    }
    values = resolved_task_row(done, now)

    async def write(conn: AsyncConnection) -> None:
        await move_task(task, done, values, "RESOLVED", now, detail, conn)
        if live is not None:
            await insert_evidence(conn, live, fresh, now)

    return Change(done, write)


async def _last_attempt(conn: AsyncConnection, task_id: str) -> LiveAttempt:
    attempt_id = await last_attempt_id(conn, task_id)
    found = await store.load_attempts(conn, [attempt_id] if attempt_id else [])
    if attempt_id is None or attempt_id not in found:
        raise StateConflict("the task has no attempt to attach evidence to; resolve without it")
    return found[attempt_id]


async def _checked(
    conn: AsyncConnection, live: LiveAttempt | None, items: list[EvidenceItem]
) -> list[EvidenceItem]:
    if live is None:
        return []
    try:
        return await check_evidence(conn, live, items)
    except EvidenceConflict as exc:
        raise StateConflict(f"{exc.message}; use another key") from None
    except EvidenceLimit as exc:
        raise InvalidArgument(exc.message, "evidence") from None
