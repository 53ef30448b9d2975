"""Batch submit in one transaction (docs/orbit/task-control.md §4, O-SUB-1, O-SUB-4): the
idempotency record of the batch first (a concurrent request with the same key fails on it and
replays the winner's receipt), then every task with its acceptance event and submitter audit
row, one multi-row INSERT per table. Any failure rolls the whole batch back; a refused batch stores
nothing (O-NOTE-6)."""

from __future__ import annotations

from dataclasses import dataclass

from agentcall.orbit.domain.audit import current_source
from agentcall.orbit.domain.batch import (
    OPERATION,
    BatchRequest,
    batch_digest,
    plan_batch,
    receipt_items,
)
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt, check_replay
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.task import new_task
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store import idempotency, journal, tasks
from agentcall.orbit.store.connector import insert_all
from agentcall.orbit.store.db import Database
from agentcall.orbit.usecases.task_writes import replaying


@dataclass(frozen=True, slots=True)
class BatchReceipt:
    """201 on first acceptance, 200 on a replay; `items_text` is the JSON array of
    `{"index","task_id","state","revision"}` as first answered."""

    status: int
    deduplicated: bool
    items_text: str


async def submit_batch(
    db: Database, principal: Principal, request: BatchRequest, key: str, request_id: str
) -> BatchReceipt:
    principal.require(Permission.SUBMIT)
    for queue_id in {item.queue_id for item in request.items}:
        principal.require_queue(queue_id)
    scope = Scope(principal.namespace_id, OPERATION, "", key)
    digest = batch_digest(request)

    def replay(stored: StoredReceipt) -> BatchReceipt:
        return BatchReceipt(200, True, check_replay(stored, digest).receipt_text)

    async def once() -> BatchReceipt:
        async with db.write() as conn:
            stored = await idempotency.find(conn, scope)
            if stored is not None:  # replays are not validated against the clock again
                return replay(stored)
            now, source = await db.now(conn), current_source()
            times = plan_batch(request, now)
            made = [
                new_task(new_id(), principal.namespace_id, item, at, now)
                for item, at in zip(request.items, times, strict=True)
            ]
            receipt = StoredReceipt(digest, 201, dumps(receipt_items(made)))
            await idempotency.insert(conn, scope, digest, made[0].id, receipt, now)
            # one multi-row INSERT per table (a bulk command on MySQL/MariaDB), as a
            # submit group writes them: 3 statements per batch instead of 3 per task
            await insert_all(
                conn,
                [
                    tasks.new_task_rows(made),
                    *journal.acceptance_rows(
                        [(principal, task, request_id) for task in made],
                        OPERATION,
                        now,
                        [source] * len(made),
                    ),
                ],
            )
        return BatchReceipt(201, False, receipt.receipt_text)

    return await replaying(db, once, scope, replay)
