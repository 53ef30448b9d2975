"""The execution kernel: each public method is one step inside the caller's transaction
(`conn`, database time `now`), run by the batcher. Fencing first, decisions from the pure
domain, then the writes; a ProtocolError is answered as an error ack and never leaves partial
writes (all checks precede all writes)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

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
from agentcall.orbit.domain.lease_tokens import token_digest
from agentcall.orbit.domain.leasing import HandlerKey, plan_lease
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.transitions import EndFacts, EndWrite, Holder, LeaseWrite, LiveAttempt
from agentcall.orbit.domain.worker_errors import InvalidMessage, LeaseLost
from agentcall.orbit.execution.acks import Ack, Grant, Peer
from agentcall.orbit.execution.batch import Handler, Kind
from agentcall.orbit.execution.fastpath import (
    Finished,
    Started,
    ended_ack,
    ended_again,
    fence,
    finish_many,
    start_many,
)
from agentcall.orbit.execution.flow import FlowControl
from agentcall.orbit.protocol.messages import AttemptRef, Release, Result
from agentcall.orbit.store.connector import HotConnection
from agentcall.orbit.store.ports import AttemptTransaction, Leasable
from agentcall.orbit.store.transactions import SqlAttempts

# the store's transaction view of a connection (the SQL store's by default)
Bind = Callable[[HotConnection], AttemptTransaction]


@dataclass(frozen=True, slots=True)
class KernelSettings:
    lease_ttl_ms: int = 15_000
    reconnect_grace_ms: int = 5_000
    backoff: Backoff = no_backoff


class Kernel:
    """`flow`: the lease path of flow-controlled queues (None: every queue takes the fast
    path, as in the in-memory twin)."""

    def __init__(
        self, settings: KernelSettings, bind: Bind = SqlAttempts, flow: FlowControl | None = None
    ) -> None:
        self.settings = settings
        self.bind = bind
        self.flow = flow

    # ------------------------------------------------------------------ leasing
    async def lease(
        self,
        conn: HotConnection,
        now: datetime,
        peer: Peer,
        handlers: Iterable[HandlerKey],
        queue_id: str,
        limit: int,
    ) -> list[Grant]:
        ask = LeaseAsk(peer, frozenset(handlers), queue_id, limit)
        return (await self.lease_many(conn, now, [ask]))[0]

    async def lease_many(
        self, conn: HotConnection, now: datetime, asks: Sequence[LeaseAsk]
    ) -> list[list[Grant]]:
        """One locking read per (queue, handler set) for all the connections asking in this
        batch, rows dealt round-robin among them; then one UPDATE and two INSERTs in all."""
        return (await self._lease(self.bind(conn), now, asks))[1]

    async def lease_clocked(
        self, conn: HotConnection, asks: Sequence[LeaseAsk]
    ) -> list[list[Grant]]:
        """`lease_many` in a transaction of its own that has not read the clock: the first
        locking read that finds rows reads it too, and the writes carry the COMMIT (on a
        `hot_write` session: two round trips less for the lease round that a submit or
        another process's hint starts on an idle connection); a round that finds nothing
        needs no clock and writes nothing."""
        return (await self._lease(self.bind(conn), None, asks, commit=True))[1]

    # The batcher's `Handler.clocked` of each kind (`agentcall.orbit.execution.batch`): the
    # items of one kind in a `hot_write` transaction whose clock is `now`, or not read yet
    # (None: the first locking read that finds rows reads it); `last`: these writes end the
    # transaction and carry its COMMIT. They return the clock with the outcomes.
    async def hot_lease(
        self, conn: HotConnection, now: datetime | None, asks: list[LeaseAsk], last: bool
    ) -> tuple[datetime | None, list[list[Grant]]]:
        return await self._lease(self.bind(conn), now, asks, commit=last)

    async def hot_start(
        self, conn: HotConnection, now: datetime | None, items: list[Started], last: bool
    ) -> tuple[datetime | None, list[Ack]]:
        ttl = self.settings.lease_ttl_ms
        tx = self.bind(conn)
        return await start_many(tx, now, ttl, items, self._refuse_start, commit=last)

    async def hot_finish(
        self, conn: HotConnection, now: datetime | None, items: list[Finished], last: bool
    ) -> tuple[datetime | None, list[Ack]]:
        return await finish_many(self.bind(conn), now, self.settings.backoff, items, commit=last)

    async def _lease(
        self,
        tx: AttemptTransaction,
        now: datetime | None,
        asks: Sequence[LeaseAsk],
        *,
        commit: bool = False,
    ) -> tuple[datetime | None, list[list[Grant]]]:
        grants: list[list[Grant]] = [[] for _ in asks]
        groups: dict[tuple[str, frozenset[HandlerKey]], list[int]] = {}
        for index, ask in enumerate(asks):
            groups.setdefault((ask.queue_id, ask.handlers), []).append(index)
        taken: set[str] = set()  # overlapping handler sets must not lease a row twice
        conn = getattr(tx, "conn", None) if self.flow is not None else None
        if self.flow is not None and conn is not None:
            await self.flow.refresh(conn)
        for (queue_id, handlers), indexes in groups.items():
            total = sum(asks[i].size for i in indexes)
            now, found = await self._candidates(tx, conn, now, queue_id, handlers, total, taken)
            # fewer than `total` rows now means the queue had no more for these handlers
            rows = [r for r in found if r.task.id not in taken][:total]
            taken.update(r.task.id for r in rows)
            for row, index in zip(rows, _deal([asks[i].size for i in indexes]), strict=False):
                assert now is not None  # rows were found: the clock was read with them
                grants[indexes[index]].append(self._grant(row, now))
        for index, ask in enumerate(asks):
            if ask.offer_id is not None and grants[index]:
                if not await tx.withdraw_offer(ask.offer_id):
                    grants[index].clear()  # claimed by another process: the slot is gone
        if now is not None:
            await self._write_leases(tx, now, asks, grants, commit=commit)
        return now, grants

    async def _candidates(
        self,
        tx: AttemptTransaction,
        conn: HotConnection | None,
        now: datetime | None,
        queue_id: str,
        handlers: frozenset[HandlerKey],
        total: int,
        taken: set[str],
    ) -> tuple[datetime | None, list[Leasable]]:
        """The rows to lease from one queue: chosen under its flow settings when it has
        some (`agentcall.orbit.execution.flow`), else the fast path's first rows."""
        if self.flow is not None and conn is not None and self.flow.controls(queue_id):
            controlled = await self.flow.lease(conn, now, queue_id, handlers, total, taken)
            if controlled is not None:
                return controlled
        limit = total + len(taken)
        if now is None:
            return await tx.clocked_lease_candidates(queue_id, handlers, limit)
        return now, await tx.lease_candidates(queue_id, handlers, now, limit)

    def _grant(self, found: Leasable, now: datetime) -> Grant:
        return new_grant(found.task, found.lease_count + 1, now, self.settings.lease_ttl_ms)

    async def _write_leases(
        self,
        tx: AttemptTransaction,
        now: datetime,
        asks: Sequence[LeaseAsk],
        grants: list[list[Grant]],
        *,
        commit: bool = False,
    ) -> None:
        """The leases' writes; with `commit` the transaction's COMMIT goes with them (the
        tasks' rows are locked by this transaction's read: the UPDATE matches them all)."""
        leases = [
            lease_write(g, ask.peer) for ask, mine in zip(asks, grants, strict=True) for g in mine
        ]
        if leases:
            await tx.write_leases(now, leases, commit=commit)

    # ------------------------------------------------------------------ worker messages
    async def start(self, conn: HotConnection, now: datetime, peer: Peer, ref: AttemptRef) -> Ack:
        return (await self.start_many(conn, now, [(peer, ref)]))[0]

    async def start_many(
        self, conn: HotConnection, now: datetime, items: Sequence[Started]
    ) -> list[Ack]:
        ttl = self.settings.lease_ttl_ms
        return (await start_many(self.bind(conn), now, ttl, items, self._refuse_start))[1]

    async def _refuse_start(
        self, tx: AttemptTransaction, now: datetime, live: LiveAttempt, code: TaskErrorCode
    ) -> Ack:
        await tx.write_ends(now, [EndWrite(live, refused_start(code))])
        message = f"{code.value}: the task failed without running"
        return Ack(False, code=code.value, message=message, ended=live.id)

    async def finish(self, conn: HotConnection, now: datetime, peer: Peer, msg: Result) -> Ack:
        return (await self.finish_many(conn, now, [(peer, msg)]))[0]

    async def finish_many(
        self, conn: HotConnection, now: datetime, items: Sequence[Finished]
    ) -> list[Ack]:
        return (await finish_many(self.bind(conn), now, self.settings.backoff, items))[1]

    async def release(self, conn: HotConnection, now: datetime, peer: Peer, msg: Release) -> Ack:
        tx = self.bind(conn)
        live = await self._fenced(tx, peer, msg.ref)
        cause = (
            EndCause.RELEASED_SHUTDOWN
            if msg.reason.value == "shutdown"
            else EndCause.RELEASED_UNSUPPORTED
        )
        if not live.state.live:
            return ended_again(live, cause.value, cause.value)
        end = AttemptEnd(cause, started=live.state is AttemptState.RUNNING)
        outcome = decide_end(live.facts, end, now, self.settings.backoff)
        await tx.write_ends(now, [EndWrite(live, outcome, EndFacts(end_digest=cause.value))])
        return ended_ack(live, outcome.task_state)

    async def evidence(
        self, conn: HotConnection, now: datetime, peer: Peer, ref: AttemptRef, items: Any
    ) -> Ack:
        tx = self.bind(conn)
        live = await self._fenced(tx, peer, ref)
        if not live.state.live:
            raise LeaseLost(f"attempt {live.id} already ended: {live.state}")
        if live.state is AttemptState.LEASED:
            raise InvalidMessage("evidence before the started ack: send started first")
        fresh = await tx.check_evidence(live, items)
        await tx.insert_evidence(live, fresh, now)
        return Ack(True, {"attempt_id": live.id, "recorded": len(fresh)})

    @staticmethod
    async def _fenced(tx: AttemptTransaction, peer: Peer, ref: AttemptRef) -> LiveAttempt:
        found = await tx.load_attempts([ref.attempt_id])
        return fence(found.get(ref.attempt_id), peer, ref)


def handlers(kernel: Kernel) -> list[Handler[Any, Any]]:
    """The batcher's handlers of the kernel's batched kinds (`LEASE`, `START`, `FINISH`)."""
    return [
        Handler(LEASE, kernel.lease_many, kernel.hot_lease),
        Handler(START, kernel.start_many, kernel.hot_start),
        Handler(FINISH, kernel.finish_many, kernel.hot_finish),
    ]


@dataclass(frozen=True, slots=True)
class LeaseAsk:
    """A connection asking for up to `size` tasks of one queue."""

    peer: Peer
    handlers: frozenset[HandlerKey]
    queue_id: str
    size: int
    # the offer that holds the connection's only free slot (`agentcall.orbit.execution.offers`):
    # taken back in this transaction if a task is found; if another process claimed it first, this
    # ask leases nothing
    offer_id: str | None = None


# the kernel's batched kinds: a connection's lease ask, a `started`, a `result`
LEASE: Kind[LeaseAsk, list[Grant]] = Kind("lease")
START: Kind[Started, Ack] = Kind("start")
FINISH: Kind[Finished, Ack] = Kind("finish")


def _deal(sizes: list[int]) -> Iterator[int]:
    """Indexes of the asks in round-robin order, each at most its size: 3,1 -> 0,1,0,0."""
    left = list(sizes)
    while any(left):
        for index, remaining in enumerate(left):
            if remaining:
                left[index] -= 1
                yield index


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


def holder(peer: Peer) -> Holder:
    """The connection and worker a lease of `peer` goes to."""
    worker = peer.worker
    return Holder(
        peer.connection_id,
        peer.token_id,
        worker.name,
        worker.instance_id,
        worker.sdk,
        worker.host,
        worker.pid,
    )


def lease_write(grant: Grant, peer: Peer, token_sha256: str | None = None) -> LeaseWrite:
    """The store's item for `grant` to `peer` (`token_sha256`: the digest of a token not known
    here, an offered slot's)."""
    digest = token_digest(grant.lease_token) if token_sha256 is None else token_sha256
    return LeaseWrite(
        grant.task,
        grant.attempt_id,
        grant.number,
        digest,
        holder(peer),
        grant.lease_expires_at,
        grant.attempt_deadline_at,
    )
