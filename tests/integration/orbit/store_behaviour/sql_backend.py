"""The behaviour suite's operations over a real database (SQLite file or MariaDB): the
product's use cases and kernel steps, each in one write transaction at `db.now + advance`."""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime, timedelta
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.review import ResolveRequest, RetryRequest
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.execution.acks import Ack, Grant, Peer
from agentcall.orbit.execution.kernel import Kernel, KernelSettings
from agentcall.orbit.execution.upkeep import SweepReport, Upkeep
from agentcall.orbit.protocol.messages import AttemptRef, ReleaseReason, Result
from agentcall.orbit.store import attempts, inspect
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.usecases.cancel import cancel_task
from agentcall.orbit.usecases.operations import Operations, Page
from agentcall.orbit.usecases.resolve import resolve_task
from agentcall.orbit.usecases.retry import retry_task
from agentcall.orbit.usecases.task_writes import Written
from tests.integration.orbit.store_behaviour.backends import HANDLER, Event, released, request_of

T = TypeVar("T")
SWEEP_LIMIT = 500


class SqlBackend:
    def __init__(self, name: str, db: Database, settings: KernelSettings) -> None:
        self.name = name
        self.db = db
        self.ops = Operations(db, group_commit=False)
        self.task_store = self.ops.store
        self.kernel = Kernel(settings)
        self.upkeep = Upkeep(settings)
        self.offset = timedelta(0)

    async def tenant(self) -> Principal:
        made = await Admin(self.db).init(f"b-{secrets.token_hex(4)}", "q")
        return await self.ops.authenticate(made.token)

    def advance(self, ms: int) -> None:
        self.offset += timedelta(milliseconds=ms)

    async def now(self) -> datetime:
        async with self.db.read() as conn:
            return await self.db.now(conn) + self.offset

    async def _step(self, step: Callable[[AsyncConnection, datetime], Awaitable[T]]) -> T:
        async with self.db.write() as conn:
            now = await self.db.now(conn) + self.offset
            return await step(conn, now)

    async def submit(self, principal: Principal, body: dict[str, JsonValue], key: str) -> Receipt:
        return await self.ops.submit(principal, request_of(body), key, new_id())

    async def get(self, principal: Principal, task_id: str) -> Task:
        return await self.ops.get(principal, task_id)

    async def page(
        self, principal: Principal, state: TaskState | None, after: Position | None, limit: int
    ) -> Page:
        (queue_id,) = principal.queue_ids
        return await self.ops.list(principal, queue_id, state, after, limit)

    async def cancel(
        self, principal: Principal, task_id: str, request: CancelRequest, key: str
    ) -> Written:
        return await cancel_task(self.ops.store, principal, task_id, request, key, new_id())

    async def retry(
        self, principal: Principal, task_id: str, request: RetryRequest, key: str
    ) -> Written:
        return await retry_task(self.ops.store, principal, task_id, request, key, new_id())

    async def resolve(
        self, principal: Principal, task_id: str, request: ResolveRequest, key: str
    ) -> Written:
        return await resolve_task(self.ops.store, principal, task_id, request, key, new_id())

    async def evidence_keys(self, attempt_id: str) -> list[str]:
        async with self.db.read() as conn:
            return [row.ev_key for row in await attempts.evidence(conn, attempt_id)]

    async def lease(self, peer: Peer, limit: int) -> list[Grant]:
        (queue_id,) = peer.queues

        async def step(conn: AsyncConnection, now: datetime) -> list[Grant]:
            return await self.kernel.lease(conn, now, peer, [HANDLER], queue_id, limit)

        return await self._step(step)

    async def start(self, peer: Peer, ref: AttemptRef) -> Ack:
        return await self._step(lambda conn, now: self.kernel.start(conn, now, peer, ref))

    async def heartbeat(self, peer: Peer, refs: Sequence[AttemptRef]) -> list[dict[str, JsonValue]]:
        return await self._step(lambda conn, now: self.upkeep.heartbeat(conn, now, peer, refs))

    async def finish(self, peer: Peer, result: Result) -> Ack:
        return await self._step(lambda conn, now: self.kernel.finish(conn, now, peer, result))

    async def release(self, peer: Peer, ref: AttemptRef, reason: ReleaseReason) -> Ack:
        return await self._step(
            lambda conn, now: released(self.kernel, conn, now, peer, ref, reason)
        )

    async def disconnect(self, peer: Peer) -> None:
        connection_id = peer.connection_id
        await self._step(lambda conn, now: self.upkeep.disconnect(conn, now, connection_id))

    async def sweep(self) -> SweepReport:
        return await self._step(lambda conn, now: self.upkeep.sweep(conn, now, SWEEP_LIMIT))

    async def events(self, task_id: str) -> list[Event]:
        async with self.db.read() as conn:
            rows = await inspect.events(conn, task_id)
        return [Event(r.revision, r.kind, r.from_state, r.to_state) for r in rows]

    async def close(self) -> None:
        await self.db.close()
