"""A submit alone in its own transaction (the single path of `agentcall.orbit.usecases.submit`; a
group of submits is `agentcall.orbit.store.submit_group`). The idempotency record goes in first: a
concurrent request with the same key then fails on it with a duplicate, and this submit replays the
winner's receipt (or gets IDEMPOTENCY_CONFLICT). Validation failures roll everything back and
store nothing (O-NOTE-6)."""

from __future__ import annotations

from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.idempotency import StoredReceipt, check_replay
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.submit import OPERATION as SUBMIT
from agentcall.orbit.domain.submit import plan_times
from agentcall.orbit.domain.task import new_task, task_view
from agentcall.orbit.store import idempotency, journal, tasks
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.receipts import Receipt


async def submit_alone(db: Database, item: PendingSubmit) -> Receipt:
    """The single path: one transaction for this submit (O-SUB-1): 201 once committed, or the
    replay (200) of the key's first receipt; IdempotencyConflict when the digest differs."""
    principal, request, scope, digest = item.principal, item.request, item.scope, item.digest
    request_id = item.request_id

    async def once() -> Receipt:
        async with db.write() as conn:
            now = await db.now(conn)
            try:
                times = plan_times(request, now)
            except InvalidArgument:  # a replay is not validated against the clock again
                stored = await idempotency.find(conn, scope)
                if stored is None:
                    raise
                return _replay(stored, digest)
            task = new_task(new_id(), principal.namespace_id, request, times, now)
            receipt = StoredReceipt(digest, 201, dumps(task_view(task)))
            # first: a concurrent or earlier request with this key fails here -> replay
            await idempotency.insert(conn, scope, digest, task.id, receipt, now)
            await tasks.insert_task(conn, task)
            await journal.append_event(conn, task, "ACCEPTED", None, now)
            await journal.append_audit(conn, principal, SUBMIT, task, request_id, now, item.source)
        return Receipt(201, False, receipt.receipt_text)

    return await idempotency.replaying(db, once, scope, lambda stored: _replay(stored, digest))


def _replay(stored: StoredReceipt, digest: Digest) -> Receipt:
    check_replay(stored, digest)
    return Receipt(200, True, stored.receipt_text)
