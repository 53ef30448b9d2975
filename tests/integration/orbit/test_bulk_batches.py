"""A bulk operation's batches run by hand on both databases (no runner: the test decides
when each batch runs, on a database of its own that no server polls): a task changed between
the snapshot and its batch is SKIPPED with its id and left as the change made it; a batch run
again after its writes committed (a crash before the progress write) replays them instead of
acting twice; a lost claim writes nothing; a revoked token stops the operation FAILED."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from typing import Any

import pytest

from agentcall.orbit.domain.bulk import BulkState, parse_bulk
from agentcall.orbit.domain.review import parse_retry
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store import bulk, tenancy
from agentcall.orbit.store.bulk_store import SqlBulkStore
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.task_store import SqlTaskStore
from agentcall.orbit.usecases.bulk_batch import claim_next, run_batch
from agentcall.orbit.usecases.bulk_start import start_bulk
from agentcall.orbit.usecases.operations import Operations
from agentcall.orbit.usecases.retry import retry_task
from tests.support.orbit_bulk import seed_failed, start_body
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]
SERVER = "a" * 32


@pytest.fixture(scope="module", params=KINDS)
def own_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated database without a server (whose runner would claim the operations)."""
    with fresh_url(request.param, tmp_path_factory.mktemp("bulk"), migrated=True) as url:
        yield url


@pytest.fixture
async def db(own_url: str) -> AsyncIterator[Database]:
    database = Database.open(own_url, pool_size=4)
    yield database
    await database.close()


@pytest.fixture
async def tenant(db: Database) -> Tenant:
    return await Tenant.create(db, "http://127.0.0.1:9")  # no HTTP here


async def claimed(db: Database, operation_id: str) -> None:
    """This process claims the operation (every earlier test's operation is finished)."""
    assert await claim_next(SqlBulkStore(db), SERVER, 30) == operation_id


async def started(db: Database, tenant: Tenant, body: dict[str, Any], token: str = "") -> str:
    principal = await Operations(db).authenticate(token or tenant.token)
    made = await start_bulk(
        SqlBulkStore(db), principal, parse_bulk(body), "k-" + tenant.queue_id, "r" * 32
    )
    return made.operation.id


async def load(db: Database, operation_id: str) -> bulk.BulkOperation:
    async with db.read() as conn:
        found = await bulk.load_operation(conn, operation_id)
    assert found is not None
    return found


async def test_a_task_changed_after_the_snapshot_is_skipped_and_keeps_the_change(
    db: Database, tenant: Tenant
) -> None:
    made = await seed_failed(tenant, 6)
    operation_id = await started(db, tenant, start_body(tenant, state="FAILED"))
    changed = made[3]
    principal = await Operations(db).authenticate(tenant.token)
    retry = parse_retry({"expected_revision": str(changed.revision), "reason": "by hand"})
    store = SqlTaskStore(db)
    await retry_task(store, principal, changed.id, retry, "own-key", "r" * 32)
    await claimed(db, operation_id)
    step = await run_batch(SqlBulkStore(db), store, operation_id, SERVER, 30)
    assert step.stop and step.woke
    op = await load(db, operation_id)
    assert op.state is BulkState.SUCCEEDED
    assert (op.progress.done, op.progress.skipped, op.progress.failed) == (5, 1, 0)
    async with db.read() as conn:
        items = await bulk.item_page(conn, operation_id, None, None, 10)
    skipped = [item for item in items if item.outcome is not None and item.outcome.value != "DONE"]
    assert [(i.task_id, i.outcome and i.outcome.value) for i in skipped] == [
        (changed.id, "SKIPPED")
    ]
    assert skipped[0].message and "WAITING" in skipped[0].message
    task = await store.load_task(changed.id)
    assert task is not None and task.revision == changed.revision + 1  # only the own retry


async def test_a_batch_run_again_replays_its_committed_writes(db: Database, tenant: Tenant) -> None:
    made = await seed_failed(tenant, 4)
    operation_id = await started(db, tenant, start_body(tenant, state="FAILED"))
    store = SqlTaskStore(db)
    await claimed(db, operation_id)
    op = await load(db, operation_id)
    async with db.write() as conn:  # as if the first run crashed before its progress write
        await bulk.release(conn, operation_id, SERVER)
    await claimed(db, operation_id)
    first = await run_batch(SqlBulkStore(db), store, operation_id, SERVER, 30)
    assert first.stop
    async with db.write() as conn:  # run it again from the same point
        until = await db.now(conn) + timedelta(minutes=5)
        await conn.execute(
            bulk.bulk_operations.update()
            .where(bulk.ops_c.id == operation_id)
            .values(
                state="RUNNING",
                next_seq=0,
                done_count=0,
                claimed_by=SERVER,
                claim_until=until,
                finished_at=None,
            )
        )
    again = await run_batch(SqlBulkStore(db), store, operation_id, SERVER, 30)
    assert again.stop and not again.changed  # every write was a replay
    final = await load(db, operation_id)
    assert (final.state, final.progress.done, op.progress.matched) == (BulkState.SUCCEEDED, 4, 4)
    for task in made:
        now = await store.load_task(task.id)
        assert now is not None
        assert (now.state, now.revision) == (TaskState.WAITING, task.revision + 1)


async def test_a_process_that_lost_its_claim_writes_no_progress(
    db: Database, tenant: Tenant
) -> None:
    await seed_failed(tenant, 3)
    operation_id = await started(db, tenant, start_body(tenant, state="FAILED"))
    await claimed(db, operation_id)
    step = await run_batch(SqlBulkStore(db), SqlTaskStore(db), operation_id, "b" * 32, 30)
    assert step.stop
    op = await load(db, operation_id)
    assert (op.state, op.next_seq, op.progress.done) == (BulkState.RUNNING, 0, 0)
    async with db.write() as conn:  # finished, so that no later test claims it
        await bulk.finish(conn, operation_id, BulkState.CANCELLED, await db.now(conn), None)


async def test_a_revoked_token_stops_the_operation_failed(db: Database, tenant: Tenant) -> None:
    await seed_failed(tenant, 3)
    token_id, token = await tenant.token_for([Permission.READ, Permission.REVIEW])
    operation_id = await started(db, tenant, start_body(tenant, state="FAILED"), token)
    async with db.write() as conn:
        await tenancy.revoke_token(conn, token_id, await db.now(conn))
    await claimed(db, operation_id)
    step = await run_batch(SqlBulkStore(db), SqlTaskStore(db), operation_id, SERVER, 30)
    op = await load(db, operation_id)
    assert step.stop and op.state is BulkState.FAILED
    assert op.error is not None and "token" in op.error and op.progress.done == 0
