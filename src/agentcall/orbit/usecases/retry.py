"""POST /v1/tasks/{id}:retry (docs/orbit/task-control.md §2): one transaction with the
idempotency record, the conditional task update (revision + 1), the RETRIED event and the audit
row (`agentcall.orbit.usecases.task_writes`)."""

from __future__ import annotations

from datetime import datetime
from functools import partial

from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.review import (
    RETRY_OPERATION,
    RetryRequest,
    decide_retry,
    retry_digest,
)
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.domain.transitions import OperatorMove
from agentcall.orbit.store.ports import OperatorTransaction, TaskStore
from agentcall.orbit.usecases.task_writes import Change, TaskWrite, Written, write_task


async def retry_task(
    store: TaskStore,
    principal: Principal,
    task_id: str,
    request: RetryRequest,
    key: str,
    request_id: str,
) -> Written:
    principal.require(Permission.REVIEW)
    scope = Scope(principal.namespace_id, RETRY_OPERATION, task_id, key)
    write = TaskWrite(principal, task_id, scope, retry_digest(request), RETRY_OPERATION, request_id)
    return await write_task(store, write, partial(_plan_retry, request))


async def _plan_retry(
    request: RetryRequest, tx: OperatorTransaction, task: Task, now: datetime
) -> Change:
    done = decide_retry(task, request, now)
    detail: dict[str, JsonValue] = {
        "reason": request.reason,
        "expected_revision": str(task.revision),
        "max_attempts": done.retry.max_attempts,
    }
    return Change(OperatorMove.RETRY, task, done, detail)
