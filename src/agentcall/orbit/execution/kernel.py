"""The execution kernel: each public method is one step inside the caller's transaction
(`conn`, database time `now`), run by the batcher. Fencing first, decisions from the pure
domain, then the writes; a ProtocolError is answered as an error ack and never leaves partial
writes (all checks precede all writes)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.attempts import (
    AttemptEnd,
    AttemptState,
    Backoff,
    EndCause,
    TaskErrorCode,
    decide_end,
    no_backoff,
    refused_start,
)
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.leasing import HandlerKey, plan_lease
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.worker_errors import InvalidMessage, LeaseLost
from agentcall.orbit.execution.acks import Ack, Grant, Peer
from agentcall.orbit.execution.fastpath import (
    Finished,
    Started,
    ended_ack,
    ended_again,
    fence,
    finish_many,
    sha256,
    start_many,
)
from agentcall.orbit.execution.transitions import EndFacts, write_end
from agentcall.orbit.protocol.messages import AttemptRef, Release, Result
from agentcall.orbit.store import execution as store
from agentcall.orbit.store import offers
from agentcall.orbit.store.connector import HotConnection, commit_with, write_all
from agentcall.orbit.store.evidence import check_evidence, insert_evidence
from agentcall.orbit.store.sql import Increment, Insert, Update, Write
from agentcall.orbit.store.tables import task_attempts, task_events, tasks
from agentcall.orbit.store.tasks import row_task


@dataclass(frozen=True, slots=True)
class KernelSettings:
    lease_ttl_ms: int = 15_000
    reconnect_grace_ms: int = 5_000
    backoff: Backoff = no_backoff


class Kernel:
    def __init__(self, settings: KernelSettings) -> None:
        self.settings = settings

    # ------------------------------------------------------------------ leasing
    async def lease(
        self,
        conn: AsyncConnection,
        now: datetime,
        peer: Peer,
        handlers: Iterable[HandlerKey],
        queue_id: str,
        limit: int,
    ) -> list[Grant]:
        ask = LeaseAsk(peer, frozenset(handlers), queue_id, limit)
        return (await self.lease_many(conn, now, [ask]))[0]

    async def lease_many(
        self, conn: AsyncConnection, now: datetime, asks: Sequence[LeaseAsk]
    ) -> list[list[Grant]]:
        """One locking read per (queue, handler set) for all the connections asking in this
        batch, rows dealt round-robin among them; then one UPDATE and two INSERTs in all."""
        return await self._lease(conn, now, asks)

    async def lease_clocked(
        self, conn: HotConnection, asks: Sequence[LeaseAsk]
    ) -> list[list[Grant]]:
        """`lease_many` in a transaction of its own that has not read the clock: the first
        locking read that finds rows reads it too, and the writes carry the COMMIT (on a
        `hot_write` session: two round trips less for the lease round that a submit or
        another process's hint starts on an idle connection); a round that finds nothing
        needs no clock and writes nothing."""
        return await self._lease(conn, None, asks)

    async def _lease(
        self, conn: HotConnection, now: datetime | None, asks: Sequence[LeaseAsk]
    ) -> list[list[Grant]]:
        grants: list[list[Grant]] = [[] for _ in asks]
        groups: dict[tuple[str, frozenset[HandlerKey]], list[int]] = {}
        for index, ask in enumerate(asks):
            groups.setdefault((ask.queue_id, ask.handlers), []).append(index)
        taken: set[str] = set()  # overlapping handler sets must not lease a row twice
        clocked = now is None
        for (queue_id, handlers), indexes in groups.items():
            total = sum(asks[i].size for i in indexes)
            limit = total + len(taken)
            if now is None:
                now, found = await store.clocked_lease_candidates(conn, queue_id, handlers, limit)
            else:
                found = await store.lease_candidates(conn, queue_id, handlers, now, limit)
            # fewer than `total` rows now means the queue had no more for these handlers
            rows = [r for r in found if r.id not in taken][:total]
            taken.update(r.id for r in rows)
            for row, index in zip(rows, _deal([asks[i].size for i in indexes]), strict=False):
                assert now is not None  # rows were found: the clock was read with them
                grants[indexes[index]].append(self._grant(row, now))
        for index, ask in enumerate(asks):
            if ask.offer_id is not None and grants[index]:
                if not await offers.withdraw(conn, ask.offer_id):
                    grants[index].clear()  # claimed by another process: the slot is gone
        if now is not None:
            await self._write_leases(conn, now, asks, grants, commit=clocked)
        return grants

    def _grant(self, row: Any, now: datetime) -> Grant:
        return new_grant(row_task(row), row.lease_count + 1, now, self.settings.lease_ttl_ms)

    async def _write_leases(
        self,
        conn: HotConnection,
        now: datetime,
        asks: Sequence[LeaseAsk],
        grants: list[list[Grant]],
        *,
        commit: bool = False,
    ) -> None:
        """The leases' writes; with `commit` the transaction's COMMIT goes with them (the
        tasks' rows are locked by this transaction's read: the UPDATE matches them all)."""
        pairs = [(ask.peer, g) for ask, mine in zip(asks, grants, strict=True) for g in mine]
        if not pairs:
            return
        task_rows = [{"id": g.task.id, "current_attempt_id": g.attempt_id} for _, g in pairs]
        waiting = {"state": TaskState.WAITING.value}
        writes: list[Write] = [
            Update(tasks, task_rows, waiting, _leased(now)),
            Insert(task_attempts, [attempt_row(g, p, now) for p, g in pairs]),
            Insert(task_events, [leased_event_row(g, now) for _, g in pairs]),
        ]
        await (commit_with(conn, writes) if commit else write_all(conn, writes))

    # ------------------------------------------------------------------ worker messages
    async def start(self, conn: AsyncConnection, now: datetime, peer: Peer, ref: AttemptRef) -> Ack:
        return (await self.start_many(conn, now, [(peer, ref)]))[0]

    async def start_many(
        self, conn: AsyncConnection, now: datetime, items: Sequence[Started]
    ) -> list[Ack]:
        ttl = self.settings.lease_ttl_ms
        return await start_many(conn, now, ttl, items, self._refuse_start)

    async def _refuse_start(
        self, conn: AsyncConnection, now: datetime, live: store.LiveAttempt, code: TaskErrorCode
    ) -> Ack:
        await write_end(conn, now, live, refused_start(code), EndFacts())
        message = f"{code.value}: the task failed without running"
        return Ack(False, code=code.value, message=message, ended=live.id)

    async def finish(self, conn: AsyncConnection, now: datetime, peer: Peer, msg: Result) -> Ack:
        return (await self.finish_many(conn, now, [(peer, msg)]))[0]

    async def finish_many(
        self, conn: AsyncConnection, now: datetime, items: Sequence[Finished]
    ) -> list[Ack]:
        return await finish_many(conn, now, self.settings.backoff, items)

    async def release(self, conn: AsyncConnection, now: datetime, peer: Peer, msg: Release) -> Ack:
        live = await self._fenced(conn, peer, msg.ref)
        cause = (
            EndCause.RELEASED_SHUTDOWN
            if msg.reason.value == "shutdown"
            else EndCause.RELEASED_UNSUPPORTED
        )
        if not live.state.live:
            return ended_again(live, cause.value, cause.value)
        end = AttemptEnd(cause, started=live.state is AttemptState.RUNNING)
        outcome = decide_end(live.facts, end, now, self.settings.backoff)
        await write_end(conn, now, live, outcome, EndFacts(end_digest=cause.value))
        return ended_ack(live, outcome.task_state)

    async def evidence(
        self, conn: AsyncConnection, now: datetime, peer: Peer, ref: AttemptRef, items: Any
    ) -> Ack:
        live = await self._fenced(conn, peer, ref)
        if not live.state.live:
            raise LeaseLost(f"attempt {live.id} already ended: {live.state}")
        if live.state is AttemptState.LEASED:
            raise InvalidMessage("evidence before the started ack: send started first")
        fresh = await check_evidence(conn, live, items)
        await insert_evidence(conn, live, fresh, now)
        return Ack(True, {"attempt_id": live.id, "recorded": len(fresh)})

    async def _fenced(
        self, conn: AsyncConnection, peer: Peer, ref: AttemptRef
    ) -> store.LiveAttempt:
        found = await store.load_attempts(conn, [ref.attempt_id])
        return fence(found.get(ref.attempt_id), peer, ref)


@dataclass(frozen=True, slots=True)
class LeaseAsk:
    """A connection asking for up to `size` tasks of one queue."""

    peer: Peer
    handlers: frozenset[HandlerKey]
    queue_id: str
    size: int
    # the offer that holds the connection's only free slot (`orbit.execution.offers`): taken
    # back in this transaction if a task is found; if another process claimed it first, this
    # ask leases nothing
    offer_id: str | None = None


def _deal(sizes: list[int]) -> Iterator[int]:
    """Indexes of the asks in round-robin order, each at most its size: 3,1 -> 0,1,0,0."""
    left = list(sizes)
    while any(left):
        for index, remaining in enumerate(left):
            if remaining:
                left[index] -= 1
                yield index


def _leased(now: datetime) -> dict[str, Any]:
    """The rows are locked (SKIP LOCKED) or the writer is alone (SQLite): plain increments."""
    return {
        "state": TaskState.LEASED.value,
        "revision": Increment(),
        "lease_count": Increment(),
        "updated_at": now,
    }


def new_grant(task: Task, number: int, now: datetime, lease_ttl_ms: int) -> Grant:
    """Lease number `number` of a WAITING task at `now`: fresh attempt id and lease token."""
    times = plan_lease(now, task.retry.attempt_timeout_ms, task.deadline_at, lease_ttl_ms)
    return Grant(
        task,
        new_id(),
        number,
        new_id(),
        times.leased_at,
        times.lease_expires_at,
        times.attempt_deadline_at,
    )


def leased_event_row(grant: Grant, now: datetime) -> dict[str, Any]:
    """The WAITING → LEASED event of a grant (revision + 1)."""
    return store.event_row(
        grant.task.id,
        grant.task.revision + 1,
        "LEASED",
        TaskState.WAITING,
        TaskState.LEASED,
        f'{{"attempt_id":"{grant.attempt_id}"}}',
        now,
        new_id(),
    )


def attempt_row(grant: Grant, peer: Peer, now: datetime) -> dict[str, Any]:
    """The new LEASED attempt of a grant, with the identity of the connection it went to."""
    worker = peer.worker
    return {
        "id": grant.attempt_id,
        "task_id": grant.task.id,
        "namespace_id": grant.task.namespace_id,
        "queue_id": grant.task.queue_id,
        "number": grant.number,
        "state": AttemptState.LEASED.value,
        "lease_token_sha256": sha256(grant.lease_token),
        "token_id": peer.token_id,
        "connection_id": peer.connection_id,
        "worker_name": worker.name,
        "worker_instance_id": worker.instance_id,
        "worker_sdk": worker.sdk,
        "worker_host": worker.host,
        "worker_pid": worker.pid,
        "leased_at": now,
        "lease_expires_at": grant.lease_expires_at,
        "attempt_deadline_at": grant.attempt_deadline_at,
        "evidence_count": 0,
    }
