"""The behaviour suite's operations over the in-memory twin (`agentcall.orbit.store.memory`).

The kernel and upkeep steps are the product's own (`Kernel`, `Upkeep`), bound to the twin's
transaction instead of a SQL connection; cancel, retry and resolve are the product's use cases
over the twin as their `TaskStore`; submit, get and list are the use cases' checks over
`TaskStore`."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.review import ResolveRequest, RetryRequest
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import OPERATION as SUBMIT
from agentcall.orbit.domain.submit import submit_digest
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Permission, Principal, authenticate, generate_secret
from agentcall.orbit.execution.acks import Ack, Grant, Peer
from agentcall.orbit.execution.kernel import Kernel, KernelSettings
from agentcall.orbit.execution.upkeep import SweepReport, Upkeep
from agentcall.orbit.protocol.messages import AttemptRef, ReleaseReason, Result
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.memory import ManualClock, MemoryStore, MemoryWrites
from agentcall.orbit.store.ports import AttemptTransaction
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.usecases.cancel import cancel_task
from agentcall.orbit.usecases.operations import Page
from agentcall.orbit.usecases.resolve import resolve_task
from agentcall.orbit.usecases.retry import retry_task
from agentcall.orbit.usecases.task_writes import Written
from tests.integration.orbit.store_behaviour.backends import HANDLER, Event, released, request_of

T = TypeVar("T")
START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class MemoryBackend:
    name = "memory"

    def __init__(self, settings: KernelSettings) -> None:
        self.settings = settings
        self.clock = ManualClock(START)
        self.store = MemoryStore(self.clock)
        self.task_store = self.store
        self.kernel = Kernel(settings, _bind)
        self.upkeep = Upkeep(settings, _bind)

    async def tenant(self) -> Principal:
        secret = generate_secret()
        record = await self.store.init(f"b-{secrets.token_hex(4)}", "q", secret)
        return authenticate(record, self.clock())

    def advance(self, ms: int) -> None:
        self.clock.advance(ms)

    async def now(self) -> datetime:
        return self.clock()

    # ------------------------------------------------------------------ use cases
    async def submit(self, principal: Principal, body: dict[str, JsonValue], key: str) -> Receipt:
        request = request_of(body)
        principal.require(Permission.SUBMIT)
        principal.require_queue(request.queue_id)
        scope = Scope(principal.namespace_id, SUBMIT, "", key)
        digest = submit_digest(request)
        return await self.store.submit(PendingSubmit(principal, request, scope, digest, "r"))

    async def get(self, principal: Principal, task_id: str) -> Task:
        principal.require(Permission.READ)
        task = await self.store.load_task(task_id)
        if task is None:
            raise NotFound("task not found")
        principal.require_visible(task.namespace_id, task.queue_id)
        return task

    async def page(
        self, principal: Principal, state: TaskState | None, after: Position | None, limit: int
    ) -> Page:
        principal.require(Permission.READ)
        (queue_id,) = principal.queue_ids
        rows = await self.store.page(queue_id, state, after, limit + 1)
        if len(rows) <= limit:
            return Page(rows, None)
        last = rows[limit - 1]
        return Page(rows[:limit], Position(queue_id, state, last.created_at, last.id))

    async def cancel(
        self, principal: Principal, task_id: str, request: CancelRequest, key: str
    ) -> Written:
        return await cancel_task(self.store, principal, task_id, request, key, "r")

    async def retry(
        self, principal: Principal, task_id: str, request: RetryRequest, key: str
    ) -> Written:
        return await retry_task(self.store, principal, task_id, request, key, "r")

    async def resolve(
        self, principal: Principal, task_id: str, request: ResolveRequest, key: str
    ) -> Written:
        return await resolve_task(self.store, principal, task_id, request, key, "r")

    async def evidence_keys(self, attempt_id: str) -> list[str]:
        return [item.key for item, _ in self.store.state.evidence.get(attempt_id, [])]

    # ------------------------------------------------------------------ kernel steps
    async def _step(self, step: Callable[[Any, datetime], Awaitable[T]]) -> T:
        """One transaction of the twin; the kernel binds the transaction as its store."""
        async with self.store.transaction() as (tx, now):
            return await step(tx, now)

    async def lease(self, peer: Peer, limit: int) -> list[Grant]:
        (queue_id,) = peer.queues
        return await self._step(
            lambda tx, now: self.kernel.lease(tx, now, peer, [HANDLER], queue_id, limit)
        )

    async def start(self, peer: Peer, ref: AttemptRef) -> Ack:
        return await self._step(lambda tx, now: self.kernel.start(tx, now, peer, ref))

    async def heartbeat(self, peer: Peer, refs: Sequence[AttemptRef]) -> list[dict[str, JsonValue]]:
        return await self._step(lambda tx, now: self.upkeep.heartbeat(tx, now, peer, refs))

    async def finish(self, peer: Peer, result: Result) -> Ack:
        return await self._step(lambda tx, now: self.kernel.finish(tx, now, peer, result))

    async def release(self, peer: Peer, ref: AttemptRef, reason: ReleaseReason) -> Ack:
        return await self._step(lambda tx, now: released(self.kernel, tx, now, peer, ref, reason))

    async def disconnect(self, peer: Peer) -> None:
        connection_id = peer.connection_id
        await self._step(lambda tx, now: self.upkeep.disconnect(tx, now, connection_id))

    async def sweep(self) -> SweepReport:
        return await self._step(lambda tx, now: self.upkeep.sweep(tx, now, 500))

    async def events(self, task_id: str) -> list[Event]:
        rows = self.store.events(task_id)
        return [Event(r["revision"], r["kind"], r["from_state"], r["to_state"]) for r in rows]

    async def close(self) -> None:
        return None


def _bind(tx: Any) -> AttemptTransaction:
    """The kernel's view of its transaction: here the twin's transaction itself."""
    assert isinstance(tx, MemoryWrites)
    return tx
