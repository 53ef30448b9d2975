"""The bulk operation store operations on SQLite and MariaDB (`agentcall.orbit.store.bulk`,
docs/orbit/bulk.md): of two processes claiming one operation exactly one wins, a lapsed claim
is free again, a batch is recorded only under its own claim (and still after a cancel, which
keeps the claim), and an operation's tasks page by outcome."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from datetime import timedelta

import pytest

from agentcall.orbit.domain.bulk import BulkOperation, BulkState, Outcome, parse_bulk
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.store import bulk
from agentcall.orbit.store.db import Database
from tests.support.orbit_bulk import seed_failed, start_body
from tests.support.orbit_databases import KINDS, fresh_url
from tests.support.orbit_server import Tenant

pytestmark = [pytest.mark.integration]
A, B = "a" * 32, "b" * 32


@pytest.fixture(scope="module", params=KINDS)
def own_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A migrated database without a server (whose runner would claim the operations)."""
    with fresh_url(request.param, tmp_path_factory.mktemp("bulk-store"), migrated=True) as url:
        yield url


@pytest.fixture
async def db(own_url: str) -> AsyncIterator[Database]:
    database = Database.open(own_url, pool_size=4)
    yield database
    await database.close()


async def stored(db: Database, count: int) -> BulkOperation:
    tenant = await Tenant.create(db, "http://127.0.0.1:9")  # no HTTP here
    await seed_failed(tenant, count)
    request = parse_bulk(start_body(tenant, state="FAILED"))
    new = bulk.NewOperation(new_id(), tenant.namespace_id, new_id(), new_id(), new_id(), request)
    async with db.write() as conn:
        matched = await bulk.snapshot(conn, request)
        await bulk.insert_operation(conn, new, matched, await db.now(conn))
        found = await bulk.load_operation(conn, new.id)
    assert found is not None and found.progress.matched == count
    return found


async def test_one_of_two_claims_wins_and_a_lapsed_claim_is_free_again(db: Database) -> None:
    op = await stored(db, 2)
    async with db.write() as conn:
        now = await db.now(conn)
        first = await bulk.claim(conn, op.id, A, now, now + timedelta(seconds=30))
        second = await bulk.claim(conn, op.id, B, now, now + timedelta(seconds=30))
        later = now + timedelta(seconds=31)
        taken_over = await bulk.claim(conn, op.id, B, later, later + timedelta(seconds=30))
        await bulk.finish(conn, op.id, BulkState.CANCELLED, now, None)
    assert (first, second, taken_over) == (True, False, True)


async def test_a_batch_is_recorded_under_its_claim_and_still_after_a_cancel(db: Database) -> None:
    op = await stored(db, 3)
    items = [
        bulk.Item(0, "0" * 32, 1, Outcome.DONE),
        bulk.Item(1, "1" * 32, 1, Outcome.SKIPPED, "changed"),
    ]
    progress = op.progress.add([Outcome.DONE, Outcome.SKIPPED])
    async with db.write() as conn:
        now = await db.now(conn)
        until = now + timedelta(seconds=30)
        assert await bulk.claim(conn, op.id, A, now, until)
        assert not await bulk.record_batch(conn, op, B, items, progress, now, until)
        await bulk.finish(conn, op.id, BulkState.CANCELLED, now, None, keep_claim=True)
        assert await bulk.record_batch(conn, op, A, items, progress, now, until)
        found = await bulk.load_operation(conn, op.id)
        skipped = await bulk.item_page(conn, op.id, Outcome.SKIPPED, None, 10)
        first = await bulk.item_page(conn, op.id, None, None, 2)
        rest = await bulk.item_page(conn, op.id, None, first[-1].seq, 2)
    assert found is not None and found.state is BulkState.CANCELLED
    assert (found.next_seq, found.progress.done, found.progress.skipped) == (2, 1, 1)
    assert [(i.seq, i.message) for i in skipped] == [(1, "changed")]
    assert [i.seq for i in first] == [0, 1] and [(i.seq, i.outcome) for i in rest] == [(2, None)]


async def test_a_finished_operation_is_not_claimable(db: Database) -> None:
    op = await stored(db, 1)
    async with db.write() as conn:
        now = await db.now(conn)
        await bulk.finish(conn, op.id, BulkState.SUCCEEDED, now, None)
        assert op.id not in await bulk.claimable_ids(conn, now, 100)
        assert not await bulk.claim(conn, op.id, A, now, now + timedelta(seconds=30))
