"""The SQL store's `TaskStore` (`agentcall.orbit.store.task_store`) on both databases: a submit
alone or by group commit answers 201 then replays 200 for the same key and digest (O-SUB-1) and
refuses another digest (IDEMPOTENCY_CONFLICT); the task reads back WAITING at revision 1, pages by
queue, and a transaction hands out the engine's operations with the database clock."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from agentcall.orbit.domain.errors import IdempotencyConflict
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import OPERATION, parse_submit, submit_digest
from agentcall.orbit.domain.tokens import Principal, hash_secret
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.submit_group import SubmitGroups
from agentcall.orbit.store.submits import submit_alone
from agentcall.orbit.store.task_store import SqlTaskStore
from agentcall.orbit.usecases.operations import Operations

pytestmark = [pytest.mark.integration]


def pending(principal: Principal, queue_id: str, key: str, n: int) -> PendingSubmit:
    text = (
        f'{{"queue_id":"{queue_id}","handler":"h","handler_version":"v1",'
        f'"payload_version":"v1","payload":{{"n":{n}}}}}'
    )
    request = parse_submit(read_json_text(text))
    scope = Scope(principal.namespace_id, OPERATION, "", key)
    return PendingSubmit(principal, request, scope, submit_digest(request), "req")


@pytest.mark.parametrize("grouped", [False, True], ids=["alone", "group"])
async def test_submit_replay_conflict_and_reads(db_url: str, grouped: bool) -> None:
    db = Database.open(db_url)
    groups = SubmitGroups(db, lambda item: submit_alone(db, item)) if grouped else None
    store = SqlTaskStore(db, groups)
    try:
        made = await Admin(db).init(f"ts-{datetime.now(UTC).timestamp()}", "q")
        principal = await Operations(db).authenticate(made.token)
        first = await store.submit(pending(principal, made.queue_id, "k1", 1))
        again = await store.submit(pending(principal, made.queue_id, "k1", 1))
        assert (first.status, first.deduplicated) == (201, False)
        assert (again.status, again.deduplicated, again.task_text) == (200, True, first.task_text)
        with pytest.raises(IdempotencyConflict):
            await store.submit(pending(principal, made.queue_id, "k1", 2))
        task_id = json.loads(first.task_text)["id"]
        task = await store.load_task(task_id)
        assert task is not None and (task.state, task.revision) == (TaskState.WAITING, 1)
        assert await store.load_task("0" * 32) is None
        listed = await store.page(made.queue_id, TaskState.WAITING, None, 10)
        assert [summary.id for summary in listed] == [task_id]
        record = await store.load_token(hash_secret(made.token))
        assert record is not None and record.namespace_id == made.namespace_id
        async with store.transaction() as (tx, now):
            assert abs(now - datetime.now(UTC)) < timedelta(minutes=5)
            assert await tx.load_attempts(["0" * 32]) == {}
    finally:
        if groups is not None:
            await groups.commit.close()
        await db.close()
