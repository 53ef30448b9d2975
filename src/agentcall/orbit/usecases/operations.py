"""One transaction per API operation (O-SUB-4): the read and submit use cases the HTTP layer,
the console and the worker socket call (submit itself: `agentcall.orbit.usecases.submit`). Cancel,
retry and resolve (writes on one task) are `agentcall.orbit.usecases.cancel`, `.retry` and
`.resolve`."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import SubmitRequest
from agentcall.orbit.domain.task import Task, TaskSummary
from agentcall.orbit.domain.tokens import (
    Permission,
    Principal,
    TokenRecord,
    authenticate,
    hash_secret,
)
from agentcall.orbit.store import tasks, tenancy
from agentcall.orbit.store.bulk_store import SqlBulkStore
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.store.submit_group import DEFAULT_LANES, Handoff
from agentcall.orbit.store.task_store import SqlTaskStore
from agentcall.orbit.store.tasks import visible_task
from agentcall.orbit.store.token_cache import DEFAULT_TTL_MS, TokenCache
from agentcall.orbit.usecases.submit import Submits

__all__ = ["Operations", "Page", "Receipt"]


@dataclass(frozen=True, slots=True)
class Page:
    items: list[TaskSummary]
    next_position: Position | None


class Operations:
    """The use cases of the HTTP API on tasks: authenticate a token, submit (`Submits`,
    `agentcall.orbit.usecases.submit`), get and list. `token_cache`: see
    `agentcall.orbit.store.token_cache`; the other arguments are the submit's (`Submits`)."""

    def __init__(
        self,
        db: Database,
        *,
        group_commit: bool = True,
        token_cache: TokenCache | None = None,
        submit_lanes: int = DEFAULT_LANES,
        on_accepted: Callable[[str], None] | None = None,
        handoff: Handoff | None = None,
    ) -> None:
        self.db = db
        self.store = SqlTaskStore(db)  # the typed store of the operator writes
        self.bulk = SqlBulkStore(db)  # the typed store of bulk operations
        self.submits = Submits(
            db,
            group_commit=group_commit,
            submit_lanes=submit_lanes,
            on_accepted=on_accepted,
            handoff=handoff,
        )
        self.groups = self.submits.groups
        self.tokens = TokenCache(DEFAULT_TTL_MS / 1000) if token_cache is None else token_cache

    async def authenticate(self, secret: str) -> Principal:
        secret_sha256 = hash_secret(secret)
        record = self.tokens.get(secret_sha256, time.monotonic())
        if record is None:
            record = await self.db.retrying(lambda: self._load_token(secret_sha256))
        return authenticate(record, datetime.now(UTC))  # expiry: against now, every time

    async def _load_token(self, secret_sha256: str) -> TokenRecord | None:
        loaded = time.monotonic()
        async with self.db.single_read() as conn:
            record = await tenancy.load_token(conn, secret_sha256)
        self.tokens.put(secret_sha256, record, loaded)
        return record

    async def submit(
        self, principal: Principal, request: SubmitRequest, key: str, request_id: str
    ) -> Receipt:
        """201 once committed, or the replay (200) of the key's first receipt (O-SUB-1)."""
        return await self.submits.submit(principal, request, key, request_id)

    async def get(self, principal: Principal, task_id: str) -> Task:
        principal.require(Permission.READ)

        async def once() -> Task:
            async with self.db.single_read() as conn:
                return await visible_task(conn, principal, task_id)

        return await self.db.retrying(once)

    async def list(
        self,
        principal: Principal,
        queue_id: str,
        state: TaskState | None,
        after: Position | None,
        limit: int,
    ) -> Page:
        principal.require(Permission.READ)
        principal.require_queue(queue_id)

        async def once() -> Page:
            async with self.db.single_read() as conn:
                rows = await tasks.page(conn, queue_id, state, after, limit + 1)
            if len(rows) <= limit:
                return Page(rows, None)
            last = rows[limit - 1]
            return Page(rows[:limit], Position(queue_id, state, last.created_at, last.id))

        return await self.db.retrying(once)
