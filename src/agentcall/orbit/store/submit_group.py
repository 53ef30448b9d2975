"""Submits by group commit (O-SUB-1, O-SUB-4): the submits that arrive while earlier groups
commit are written together in ONE transaction, and every caller is answered only after that
transaction committed. One durable commit then serves many submits, as a database's own group
commit does for its log flushes.

A group transaction: database time and the group's known keys (one SELECT on MySQL/MariaDB),
the decisions of `group_plan`, the eager leases of the execution service if it is there
(`handoff`, `agentcall.orbit.execution.eager`), then one multi-row INSERT per table (idempotency
records first, tasks, attempts and their events, acceptance events, audit: `connector.insert_all`,
which sends a lone submit's INSERTs and COMMIT as one round trip). Eager leases are delivered only
after the commit, and released if the transaction fails; what they need to read or lock first
(an offered slot taken back, another process's offer claimed: `Claims.settle`) runs in the
transaction before those writes. If it fails (a key was taken
meanwhile by another transaction, the database is unavailable, ...) it is rolled back and
each submit runs again alone on the single path, so one submit never fails its neighbours and
a taken key replays as on the single path.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Protocol

import sqlalchemy as sa

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.submit import OPERATION as SUBMIT
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.transitions import LeaseWrite
from agentcall.orbit.store import idempotency, journal, tasks
from agentcall.orbit.store.connector import HotConnection, insert_all
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.driver_pool import DriverSession
from agentcall.orbit.store.group_commit import GroupCommit
from agentcall.orbit.store.group_plan import Accept, Decision, PendingSubmit, Refuse, plan_group
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.store.sql import Insert, Write
from agentcall.orbit.store.transactions import eager_writes, lease_event_rows

log = logging.getLogger("orbit.store")
Alone = Callable[[PendingSubmit], Awaitable[Receipt]]


class Claims(Protocol):
    """Tasks of a group leased eagerly in its transaction (`agentcall.orbit.execution.eager`): the
    store asks for them, writes their leases with the group's rows and tells them the end."""

    @property
    def task_ids(self) -> frozenset[str]:
        """The tasks leased (their rows are inserted LEASED, not WAITING)."""
        ...

    async def settle(self, conn: HotConnection) -> None:
        """In the transaction, before its writes: take offered slots back, claim offers."""
        ...

    def leases(self) -> list[LeaseWrite]:
        """The leases to write (task LEASED, attempt, LEASED event)."""
        ...

    def offer_claims(self) -> list[tuple[str, str]]:
        """(offer id, task id) of the other processes' offers claimed."""
        ...

    def committed(self) -> None:
        """The COMMIT returned (the session may not be released yet)."""
        ...

    def deliver(self) -> None:
        """After the commit: send the leases."""
        ...

    def release(self) -> None:
        """The transaction failed: free what was reserved."""
        ...


Handoff = Callable[[Sequence[Task], datetime], Claims]
MAX_GROUP = 64
MAX_BATCH = 1000  # submits of one group of `submit_all` (a batch that came together)
# payload text per group: each payload is written twice (task, receipt), and one statement
# must stay well below max_allowed_packet (16 MiB by default)
MAX_GROUP_BYTES = 4 * 1024 * 1024
DEFAULT_LANES = 2


def lanes_for(db: Database, lanes: int = DEFAULT_LANES) -> int:
    """Groups committing at once per process: one writer on SQLite; on MySQL/MariaDB `lanes`
    (the server's `submit_lanes`, default 2: one group is decided and written while the other
    waits for its log flush)."""
    return db.write_lanes(lanes)


class SubmitGroups:
    """`handoff`, when given (the execution service's eager dispatch), leases accepted tasks
    to connections of this process inside the group's transaction. `on_accepted(queue_id)` is
    called for each new task not leased so, right after the commit and before the callers
    resume (the dispatcher and the other processes' hints need not wait for them)."""

    def __init__(
        self,
        db: Database,
        alone: Alone,
        lanes: int = DEFAULT_LANES,
        *,
        handoff: Handoff | None = None,
        on_accepted: Callable[[str], None] | None = None,
    ) -> None:
        self.db = db
        self.alone = alone
        self.handoff = handoff
        self.on_accepted = on_accepted or (lambda queue_id: None)
        self.commit: GroupCommit[PendingSubmit, Receipt] = GroupCommit(
            self._run,
            lanes=lanes_for(db, lanes),
            max_group=MAX_GROUP,
            weight=_size,
            max_weight=MAX_GROUP_BYTES,
        )
        self.fallbacks = 0  # groups that ran again submit by submit

    async def submit(self, item: PendingSubmit) -> Receipt:
        return await self.commit(item)

    async def submit_all(self, items: Sequence[PendingSubmit]) -> list[Receipt | BaseException]:
        """Submits that come as one batch (a schedule runner's due slots) written as groups
        of their own, one after the other: each a group transaction as above of up to
        `MAX_BATCH` submits and `MAX_GROUP_BYTES` of payload, decided in order like the
        submits of one group. The answers in order (a refusal or failure as its exception)."""
        answers: list[Receipt | BaseException] = []
        for chunk in _chunks(items):
            answers += await self._run(chunk)
        return answers

    async def _run(self, items: list[PendingSubmit]) -> Sequence[Receipt | BaseException]:
        try:
            done = await self.db.retrying(lambda: self._transaction(items))
        except Exception as exc:  # noqa: BLE001 - isolated below
            if len(items) == 1:
                return [exc]
            log.warning("a group of %d submits failed (%s); each runs alone", len(items), exc)
            done = None
        if done is None:  # each alone: one failing submit never fails the others
            self.fallbacks += 1
            answers = await asyncio.gather(*map(self.alone, items), return_exceptions=True)
            for item, answer in zip(items, answers, strict=True):
                if isinstance(answer, Receipt) and answer.status == 201 and not answer.leased:
                    self.on_accepted(item.request.queue_id)
            return answers
        decisions, claims = done
        leased = frozenset[str]()
        if claims is not None:
            claims.deliver()
            leased = claims.task_ids
        for decision in decisions:
            if isinstance(decision, Accept) and decision.task.id not in leased:
                self.on_accepted(decision.task.queue_id)
        return [_answer(decision, leased) for decision in decisions]

    async def _transaction(
        self, items: list[PendingSubmit]
    ) -> tuple[list[Decision], Claims | None] | None:
        """The group's decisions and eager leases once committed; None when a key was taken
        meanwhile. Slots reserved by a transaction that did not commit are released."""
        claims: Claims | None = None
        try:
            async with self.db.hot_write() as conn:
                scopes = [item.scope for item in items]
                now, stored = await idempotency.now_and_find_many(self.db, conn, SUBMIT, "", scopes)
                decisions = plan_group(items, stored, now, new_id)
                pairs = zip(items, decisions, strict=True)
                accepted = [(item, choice) for item, choice in pairs if isinstance(choice, Accept)]
                if accepted:
                    claims = self._claim([d.task for _, d in accepted], now)
                    if claims is not None:
                        await claims.settle(conn)
                    await insert_all(
                        conn,
                        self._inserts(accepted, claims, now),
                        one_trip=len(accepted) == 1,
                        commit=True,
                    )
                    if claims is not None and isinstance(conn, DriverSession) and conn.ended:
                        claims.committed()  # the COMMIT went with the INSERTs: tell at once
        except sa.exc.IntegrityError as exc:
            _release(claims)
            if self.db.is_duplicate(exc):
                return None
            raise
        except BaseException:
            _release(claims)
            raise
        return decisions, claims

    def _claim(self, accepted: list[Task], now: datetime) -> Claims | None:
        return None if self.handoff is None else self.handoff(accepted, now)

    @staticmethod
    def _inserts(
        accepted: list[tuple[PendingSubmit, Accept]], claims: Claims | None, now: datetime
    ) -> list[Write]:
        """The group's rows, parents first; its last writes, so the COMMIT may go with them.
        The LEASED events of eager leases join the ACCEPTED events' INSERT (same table)."""
        leased = claims.task_ids if claims is not None else frozenset[str]()
        events, audits = journal.acceptance_rows(
            [(i.principal, d.task, i.request_id) for i, d in accepted],
            SUBMIT,
            now,
            [i.source for i, _ in accepted],
        )
        leases = claims.leases() if claims is not None else []
        offer_claims = claims.offer_claims() if claims is not None else []
        return [
            idempotency.receipt_rows([(i.scope, d.task.id, d.receipt) for i, d in accepted], now),
            tasks.new_task_rows([d.task for _, d in accepted if d.task.id not in leased]),
            *eager_writes(now, leases, offer_claims),
            Insert(events.table, [*events.rows, *lease_event_rows(now, leases)]),
            audits,
        ]


def _size(item: PendingSubmit) -> int:
    return len(item.request.payload_text)


def _chunks(items: Sequence[PendingSubmit]) -> list[list[PendingSubmit]]:
    """`items` in order, cut at `MAX_BATCH` submits or `MAX_GROUP_BYTES` of payload."""
    chunks: list[list[PendingSubmit]] = []
    chunk: list[PendingSubmit] = []
    weight = 0
    for item in items:
        size = _size(item)
        if chunk and (len(chunk) >= MAX_BATCH or weight + size > MAX_GROUP_BYTES):
            chunks.append(chunk)
            chunk, weight = [], 0
        chunk.append(item)
        weight += size
    if chunk:
        chunks.append(chunk)
    return chunks


def _release(claims: Claims | None) -> None:
    if claims is not None:
        claims.release()


def _answer(decision: Decision, leased: frozenset[str]) -> Receipt | BaseException:
    if isinstance(decision, Accept):
        handed = decision.task.id in leased
        return Receipt(201, False, decision.receipt.receipt_text, leased=handed)
    if isinstance(decision, Refuse):
        return decision.error
    return Receipt(200, True, decision.stored.receipt_text)
