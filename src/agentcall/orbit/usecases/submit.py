"""Submit (O-SUB-1, O-SUB-4): one task, by group commit (`orbit.store.submit_group`: submits
arriving together share one transaction) or alone in its own transaction.

The idempotency record goes in first: a concurrent request with the same key then waits on
that key and fails with a duplicate, after which it replays the winner's receipt (or gets
IDEMPOTENCY_CONFLICT). Validation failures roll everything back and store nothing
(O-NOTE-6)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import sqlalchemy as sa

from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.errors import InvalidArgument, Unavailable
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt, check_replay
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.submit import OPERATION as SUBMIT
from agentcall.orbit.domain.submit import SubmitRequest, plan_times, submit_digest
from agentcall.orbit.domain.task import new_task, task_view
from agentcall.orbit.domain.tokens import Permission, Principal
from agentcall.orbit.store import idempotency, journal, tasks
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.store.submit_group import DEFAULT_LANES, Handoff, SubmitGroups


class Submits:
    """`group_commit`: submits share transactions (`orbit.store.submit_group`); otherwise each
    submit is its own transaction; `submit_lanes` groups commit at once (MySQL/MariaDB).
    `on_accepted(queue_id)` is called once a submit committed a new task that was not leased
    in its own transaction (the engine's dispatcher wakes for that queue); `handoff` leases
    accepted tasks inside a submit group's transaction (eager dispatch)."""

    def __init__(
        self,
        db: Database,
        *,
        group_commit: bool = True,
        submit_lanes: int = DEFAULT_LANES,
        on_accepted: Callable[[str], None] | None = None,
        handoff: Handoff | None = None,
    ) -> None:
        self.db = db
        self.on_accepted = on_accepted or _ignore
        self.groups = (
            SubmitGroups(
                db,
                self._submit_alone,
                submit_lanes,
                handoff=handoff,
                on_accepted=self.on_accepted,
            )
            if group_commit
            else None
        )

    async def submit(
        self, principal: Principal, request: SubmitRequest, key: str, request_id: str
    ) -> Receipt:
        """201 once committed, or the replay (200) of the key's first receipt (O-SUB-1)."""
        principal.require(Permission.SUBMIT)
        principal.require_queue(request.queue_id)
        scope = Scope(principal.namespace_id, SUBMIT, "", key)
        item = PendingSubmit(principal, request, scope, submit_digest(request), request_id)
        if self.groups is not None:  # the group tells `on_accepted` right after its commit
            return await self.groups.submit(item)
        receipt = await self._submit_alone(item)
        if receipt.status == 201 and not receipt.leased:
            self.on_accepted(request.queue_id)
        return receipt

    async def _submit_alone(self, item: PendingSubmit) -> Receipt:
        """The single path: one transaction for this submit."""
        principal, request, scope, digest = item.principal, item.request, item.scope, item.digest
        request_id = item.request_id

        async def once() -> Receipt:
            async with self.db.write() as conn:
                now = await self.db.now(conn)
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
                await journal.append_audit(conn, principal, SUBMIT, task, request_id, now)
            return Receipt(201, False, receipt.receipt_text)

        return await self._with_replay(once, scope, digest)

    async def _with_replay(
        self, once: Callable[[], Awaitable[Receipt]], scope: Scope, digest: Digest
    ) -> Receipt:
        async def attempt() -> Receipt:
            try:
                return await once()
            except sa.exc.IntegrityError as exc:
                if not self.db.is_duplicate(exc):
                    raise
            async with self.db.read() as conn:  # a concurrent request won the key
                stored = await idempotency.find(conn, scope)
            if stored is None:
                raise Unavailable("concurrent request on the same key; retry with the same key")
            return _replay(stored, digest)

        return await self.db.retrying(attempt)


def _replay(stored: StoredReceipt, digest: Digest) -> Receipt:
    check_replay(stored, digest)
    return Receipt(200, True, stored.receipt_text)


def _ignore(queue_id: str) -> None:
    """No dispatcher in this process (the CLI, tests of the API alone)."""
