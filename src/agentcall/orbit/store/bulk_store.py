"""`BulkStore` (`agentcall.orbit.store.bulk_ports`) on SQL: each method is one transaction
of the statements of `agentcall.orbit.store.bulk`, retried as the other stores do."""

from __future__ import annotations

from datetime import datetime

from agentcall.orbit.domain.bulk import (
    BulkOperation,
    BulkRequest,
    BulkState,
    Outcome,
    Progress,
    claim_deadline,
    next_batch,
)
from agentcall.orbit.domain.task import TaskSummary
from agentcall.orbit.store import bulk, search
from agentcall.orbit.store.bulk import Item, NewOperation
from agentcall.orbit.store.bulk_ports import BatchInput
from agentcall.orbit.store.db import Database


class SqlBulkStore:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def preview(
        self, request: BulkRequest, limit: int, sample: int
    ) -> tuple[int, list[TaskSummary]]:
        async def once() -> tuple[int, list[TaskSummary]]:
            async with self.db.single_read() as conn:
                count = await search.count_matching(conn, request.where, limit)
                return count, await search.search_page(conn, request.where, None, sample)

        return await self.db.retrying(once)

    async def start(self, new: NewOperation) -> tuple[BulkOperation, bool]:
        db = self.db

        async def once() -> tuple[BulkOperation, bool]:
            async with db.write() as conn:
                found = await bulk.find_by_key(conn, new.namespace_id, new.key)
                if found is not None:
                    return found, True
                now = await db.now(conn)
                matched = await bulk.snapshot(conn, new.request)
                await bulk.insert_operation(conn, new, matched, now)
                if not matched:  # nothing to do: finished as it starts
                    await bulk.finish(conn, new.id, BulkState.SUCCEEDED, now, None)
                stored = await bulk.load_operation(conn, new.id)
            assert stored is not None
            return stored, False

        try:
            return await db.retrying(once)
        except Exception as exc:
            if not db.is_duplicate(exc):  # a concurrent request with the same key won
                raise
            return await db.retrying(once)

    async def load(self, operation_id: str) -> BulkOperation | None:
        async def once() -> BulkOperation | None:
            async with self.db.single_read() as conn:
                return await bulk.load_operation(conn, operation_id)

        return await self.db.retrying(once)

    async def list_operations(
        self,
        namespace_id: str,
        queue_ids: frozenset[str],
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[BulkOperation]:
        async def once() -> list[BulkOperation]:
            async with self.db.single_read() as conn:
                return await bulk.list_operations(conn, namespace_id, queue_ids, after, limit)

        return await self.db.retrying(once)

    async def item_page(
        self, operation_id: str, outcome: Outcome | None, after_seq: int | None, limit: int
    ) -> list[Item]:
        async def once() -> list[Item]:
            async with self.db.single_read() as conn:
                return await bulk.item_page(conn, operation_id, outcome, after_seq, limit)

        return await self.db.retrying(once)

    async def finish(
        self, operation_id: str, state: BulkState, error: str | None, *, keep_claim: bool = False
    ) -> bool:
        async def once() -> bool:
            async with self.db.write() as conn:
                now = await self.db.now(conn)
                return await bulk.finish(
                    conn, operation_id, state, now, error, keep_claim=keep_claim
                )

        return await self.db.retrying(once)

    async def claim_next(self, server_id: str, claim_s: float) -> str | None:
        async def once() -> str | None:
            async with self.db.write() as conn:
                now = await self.db.now(conn)
                until = claim_deadline(now, claim_s)
                for operation_id in await bulk.claimable_ids(conn, now):
                    if await bulk.claim(conn, operation_id, server_id, now, until):
                        return operation_id
            return None

        return await self.db.retrying(once)

    async def release(self, operation_id: str, server_id: str) -> None:
        async with self.db.write() as conn:
            await bulk.release(conn, operation_id, server_id)

    async def batch_input(self, operation_id: str) -> BatchInput | None:
        async with self.db.single_read() as conn:
            op = await bulk.load_operation(conn, operation_id)
            if op is None:
                return None
            record = await bulk.token_record(conn, op.token_id)
            seqs = next_batch(op.next_seq, op.progress.matched)
            return BatchInput(op, record, await bulk.load_items(conn, operation_id, seqs))

    async def record_batch(
        self,
        op: BulkOperation,
        server_id: str,
        acted: list[Item],
        progress: Progress,
        claim_s: float,
    ) -> bool:
        async with self.db.write() as conn:
            now = await self.db.now(conn)
            until = claim_deadline(now, claim_s)
            if not await bulk.record_batch(conn, op, server_id, acted, progress, now, until):
                return False
            if progress.complete:
                await bulk.finish(conn, op.id, BulkState.SUCCEEDED, now, None)
        return True
