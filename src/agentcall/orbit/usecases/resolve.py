"""POST /v1/tasks/{id}:resolve (docs/orbit/task-control.md §2): one transaction with the
idempotency record, the conditional task update (revision + 1), the RESOLVED event and the
audit row (`agentcall.orbit.usecases.task_writes`). A resolution's evidence is recorded on the
task's last attempt under keys prefixed `operator.`, next to what the worker recorded, so that the
attempt history shows both (the audit row names the operator's token)."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime
from functools import partial

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
from agentcall.orbit.domain.transitions import LiveAttempt, OperatorMove
from agentcall.orbit.domain.worker_errors import EvidenceConflict, EvidenceLimit
from agentcall.orbit.store.ports import OperatorTransaction, TaskStore
from agentcall.orbit.usecases.task_writes import Change, TaskWrite, Written, write_task


async def resolve_task(
    store: TaskStore,
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
    return await write_task(store, write, partial(_plan_resolve, request))


async def _plan_resolve(
    request: ResolveRequest, tx: OperatorTransaction, task: Task, now: datetime
) -> Change:
    done = decide_resolve(task, request, now)
    evidence = [replace(item, key=OPERATOR_KEY_PREFIX + item.key) for item in request.evidence]
    live = await _last_attempt(tx, task.id) if evidence else None
    fresh = await _checked(tx, live, evidence)
    detail: dict[str, JsonValue] = {
        "reason": request.reason,
        "outcome": request.outcome.value,
        "expected_revision": str(task.revision),
        "evidence": [item.key for item in evidence],
    }
    return Change(OperatorMove.RESOLVE, task, done, detail, live, tuple(fresh))


async def _last_attempt(tx: OperatorTransaction, task_id: str) -> LiveAttempt:
    live = await tx.last_attempt(task_id)
    if live is None:
        raise StateConflict("the task has no attempt to attach evidence to; resolve without it")
    return live


async def _checked(
    tx: OperatorTransaction, live: LiveAttempt | None, items: list[EvidenceItem]
) -> list[EvidenceItem]:
    if live is None:
        return []
    try:
        return await tx.check_evidence(live, items)
    except EvidenceConflict as exc:
        raise StateConflict(f"{exc.message}; use another key") from None
    except EvidenceLimit as exc:
        raise InvalidArgument(exc.message, "evidence") from None
