"""POST /v1/bulk-operations/{id}:cancel (docs/orbit/bulk.md): a running operation
stops; the batch in flight finishes and is recorded, the tasks not reached keep no outcome.
Cancelling a finished operation answers it as it is (the call is idempotent by nature)."""

from __future__ import annotations

from agentcall.orbit.domain.bulk import BulkOperation, BulkState
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store.bulk_ports import BulkStore
from agentcall.orbit.usecases.bulk_reads import visible
from agentcall.orbit.usecases.bulk_start import PERMISSION


async def cancel_bulk(store: BulkStore, principal: Principal, operation_id: str) -> BulkOperation:
    op = visible(principal, await store.load(operation_id))
    principal.require(PERMISSION[op.action])
    if op.state is BulkState.RUNNING:  # conditional: a runner that finished first wins
        await store.finish(op.id, BulkState.CANCELLED, None, keep_claim=True)
    found = await store.load(operation_id)
    assert found is not None
    return found
