"""The in-memory twin of `BulkStore` (`agentcall.orbit.store.bulk_ports`): operations and
their matched tasks in dicts, the snapshot taken from the twin's own tasks
(`agentcall.orbit.store.memory.MemoryStore`) with the pure filter predicate
(`agentcall.orbit.domain.search_match`), the claim kept as (server, until) on the twin's
clock. For use case tests; each method is atomic (no await inside it)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import datetime

from agentcall.orbit.domain.bulk import (
    MAX_MATCHED,
    BulkOperation,
    BulkRequest,
    BulkState,
    Outcome,
    Progress,
    claim_deadline,
    next_batch,
)
from agentcall.orbit.domain.errors import InvalidArgument
from agentcall.orbit.domain.search_match import matches
from agentcall.orbit.domain.task import TaskSummary, summarize
from agentcall.orbit.store.bulk import Item, NewOperation
from agentcall.orbit.store.bulk_ports import BatchInput
from agentcall.orbit.store.memory import MemoryStore


@dataclass(slots=True)
class _Claim:
    server_id: str | None = None
    until: datetime | None = None


class MemoryBulk:
    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self.operations: dict[str, BulkOperation] = {}
        self.items: dict[str, list[Item]] = {}
        self.claims: dict[str, _Claim] = {}
        self.keys: dict[tuple[str, str], str] = {}

    def _matching(self, request: BulkRequest, limit: int) -> list[TaskSummary]:
        found = [t for t in self.store.state.tasks.values() if matches(request.where, t)]
        found.sort(key=lambda t: (t.created_at, t.id), reverse=True)
        return [summarize(t) for t in found[:limit]]

    async def preview(
        self, request: BulkRequest, limit: int, sample: int
    ) -> tuple[int, list[TaskSummary]]:
        found = self._matching(request, limit + 1)
        return len(found), found[:sample]

    async def start(self, new: NewOperation) -> tuple[BulkOperation, bool]:
        known = self.keys.get((new.namespace_id, new.key))
        if known is not None:
            return self.operations[known], True
        found = self._matching(new.request, MAX_MATCHED + 1)
        if len(found) > MAX_MATCHED:
            raise InvalidArgument(
                f"matches more than {MAX_MATCHED} tasks; narrow it (e.g. a time range)", "filter"
            )
        now, request = self.store.clock(), new.request
        done = not found
        self.operations[new.id] = BulkOperation(
            id=new.id,
            namespace_id=new.namespace_id,
            token_id=new.token_id,
            queue_id=request.where.queue_id,
            filter=request.where,
            action=request.action,
            body=dict(request.body),
            state=BulkState.SUCCEEDED if done else BulkState.RUNNING,
            progress=Progress(len(found)),
            next_seq=0,
            error=None,
            request_id=new.request_id,
            created_at=now,
            updated_at=now,
            finished_at=now if done else None,
        )
        self.items[new.id] = [Item(seq, t.id, t.revision) for seq, t in enumerate(found)]
        self.claims[new.id] = _Claim()
        self.keys[(new.namespace_id, new.key)] = new.id
        return self.operations[new.id], False

    async def load(self, operation_id: str) -> BulkOperation | None:
        return self.operations.get(operation_id)

    async def list_operations(
        self,
        namespace_id: str,
        queue_ids: frozenset[str],
        after: tuple[datetime, str] | None,
        limit: int,
    ) -> list[BulkOperation]:
        found = [
            op
            for op in self.operations.values()
            if op.namespace_id == namespace_id
            and op.queue_id in queue_ids
            and (after is None or (op.created_at, op.id) < after)
        ]
        found.sort(key=lambda op: (op.created_at, op.id), reverse=True)
        return found[:limit]

    async def item_page(
        self, operation_id: str, outcome: Outcome | None, after_seq: int | None, limit: int
    ) -> list[Item]:
        found = [
            item
            for item in self.items.get(operation_id, [])
            if (outcome is None or item.outcome is outcome)
            and (after_seq is None or item.seq > after_seq)
        ]
        return found[:limit]

    async def finish(
        self, operation_id: str, state: BulkState, error: str | None, *, keep_claim: bool = False
    ) -> bool:
        op = self.operations.get(operation_id)
        if op is None or op.state is not BulkState.RUNNING:
            return False
        now = self.store.clock()
        self.operations[operation_id] = replace(
            op, state=state, error=error, finished_at=now, updated_at=now
        )
        if not keep_claim:
            self.claims[operation_id] = _Claim()
        return True

    async def claim_next(self, server_id: str, claim_s: float) -> str | None:
        now = self.store.clock()
        running = [op for op in self.operations.values() if op.state is BulkState.RUNNING]
        for op in sorted(running, key=lambda op: op.created_at):
            claim = self.claims[op.id]
            if claim.until is None or claim.until <= now:
                self.claims[op.id] = _Claim(server_id, claim_deadline(now, claim_s))
                return op.id
        return None

    async def release(self, operation_id: str, server_id: str) -> None:
        if self.claims.get(operation_id, _Claim()).server_id == server_id:
            self.claims[operation_id] = _Claim()

    async def batch_input(self, operation_id: str) -> BatchInput | None:
        op = self.operations.get(operation_id)
        if op is None:
            return None
        token = next(
            (t for t in self.store.state.tokens.values() if t.token_id == op.token_id), None
        )
        seqs = next_batch(op.next_seq, op.progress.matched)
        items = [item for item in self.items[operation_id] if item.seq in seqs]
        return BatchInput(op, token, items)

    async def record_batch(
        self,
        op: BulkOperation,
        server_id: str,
        acted: list[Item],
        progress: Progress,
        claim_s: float,
    ) -> bool:
        stored = self.operations.get(op.id)
        claim = self.claims.get(op.id, _Claim())
        if stored is None or claim.server_id != server_id or stored.next_seq != op.next_seq:
            return False
        now = self.store.clock()
        next_seq = (acted[-1].seq + 1) if acted else op.next_seq
        self.claims[op.id] = _Claim(server_id, claim_deadline(now, claim_s))
        self.operations[op.id] = replace(
            stored, next_seq=next_seq, progress=progress, updated_at=now
        )
        by_seq = {item.seq: item for item in acted}
        self.items[op.id] = [by_seq.get(item.seq, item) for item in self.items[op.id]]
        if progress.complete:
            await self.finish(op.id, BulkState.SUCCEEDED, None)
        return True
