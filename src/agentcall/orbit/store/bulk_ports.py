"""The typed store port of bulk operations (docs/orbit/bulk.md): what the bulk use cases
(`agentcall.orbit.usecases.bulk_start`, `bulk_batch`, `bulk_reads`, `bulk_cancel`) and the
runner ask of the store, one method per transaction they need. The SQL implementation is
`agentcall.orbit.store.bulk_store`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from agentcall.orbit.domain.bulk import BulkOperation, BulkRequest, BulkState, Outcome, Progress
from agentcall.orbit.domain.task import TaskSummary
from agentcall.orbit.domain.tokens import TokenRecord
from agentcall.orbit.store.bulk import Item, NewOperation


@dataclass(frozen=True, slots=True)
class BatchInput:
    """What one batch reads in one snapshot: the operation, the token it acts as and the
    next matched tasks without an outcome."""

    operation: BulkOperation
    token: TokenRecord | None
    items: list[Item]


class BulkStore(Protocol):
    async def preview(
        self, request: BulkRequest, limit: int, sample: int
    ) -> tuple[int, list[TaskSummary]]:
        """How many tasks match (counted up to `limit` + 1) and the newest `sample`."""
        ...

    async def start(self, new: NewOperation) -> tuple[BulkOperation, bool]:
        """The operation of `new.key` if one exists (True), else the snapshot stored with a
        new operation, SUCCEEDED at once when nothing matched (False); one transaction."""
        ...

    async def load(self, operation_id: str) -> BulkOperation | None: ...

    async def list_operations(
        self,
        namespace_id: str,
        queue_ids: frozenset[str],
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[BulkOperation]: ...

    async def item_page(
        self, operation_id: str, outcome: Outcome | None, after_seq: int | None, limit: int
    ) -> list[Item]: ...

    async def finish(
        self, operation_id: str, state: BulkState, error: str | None, *, keep_claim: bool = False
    ) -> bool:
        """RUNNING → `state`, conditional; False: it had finished already."""
        ...

    async def claim_next(self, server_id: str, claim_s: float) -> str | None:
        """Claim one running operation whose claim is free or lapsed; None: none."""
        ...

    async def release(self, operation_id: str, server_id: str) -> None: ...

    async def batch_input(self, operation_id: str) -> BatchInput | None: ...

    async def record_batch(
        self,
        op: BulkOperation,
        server_id: str,
        acted: list[Item],
        progress: Progress,
        claim_s: float,
    ) -> bool:
        """The batch's outcomes, progress and renewed claim, SUCCEEDED when complete, in one
        transaction; False (nothing written) when the claim is no longer `server_id`'s."""
        ...
