"""POST /v1/bulk-operations/{id}:cancel (docs/orbit/bulk-operations.md): a running operation
stops; the batch in flight finishes and is recorded, the tasks not reached keep no outcome.
Cancelling a finished operation answers it as it is (the call is idempotent by nature)."""

from __future__ import annotations

from agentcall.orbit.domain.bulk import BulkOperation, BulkState
from agentcall.orbit.domain.tokens import Principal
from agentcall.orbit.store import bulk
from agentcall.orbit.store.db import Database
from agentcall.orbit.usecases.bulk_reads import visible
from agentcall.orbit.usecases.bulk_start import PERMISSION


async def cancel_bulk(db: Database, principal: Principal, operation_id: str) -> BulkOperation:
    async def once() -> BulkOperation:
        async with db.write() as conn:
            op = visible(principal, await bulk.load_operation(conn, operation_id))
            principal.require(PERMISSION[op.action])
            if op.state is BulkState.RUNNING:
                await bulk.finish(conn, op.id, BulkState.CANCELLED, await db.now(conn), None)
            found = await bulk.load_operation(conn, operation_id)
        assert found is not None
        return found

    return await db.retrying(once)
