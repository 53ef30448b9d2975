"""Submits by group commit on both databases (O-SUB-1, O-SUB-4): concurrent submits share
transactions, yet every submit is decided and answered as if it were alone; a key taken by
another transaction sends its group to the single path; the token cache keeps expiry exact."""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from datetime import UTC, datetime, timedelta

import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.errors import IdempotencyConflict, InvalidArgument, Unauthenticated
from agentcall.orbit.domain.idempotency import Scope, StoredReceipt
from agentcall.orbit.domain.jsonvalue import dumps
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import OPERATION, SubmitRequest, parse_submit, submit_digest
from agentcall.orbit.domain.task import task_view
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store import idempotency
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database, Dialect
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.store.tables import audit_log, idempotency_records, task_events, tasks
from agentcall.orbit.store.token_cache import TokenCache
from agentcall.orbit.usecases.operations import Operations

pytestmark = [pytest.mark.integration]


def request(queue_id: str, n: int, available_at: str | None = None) -> SubmitRequest:
    extra = f',"available_at":"{available_at}"' if available_at else ""
    return parse_submit(
        read_json_text(
            f'{{"queue_id":"{queue_id}","handler":"h","handler_version":"v1",'
            f'"payload_version":"v1","payload":{{"n":{n}}}{extra}}}'
        )
    )


async def counts(db: Database, namespace_id: str) -> list[int]:
    found = []
    async with db.read() as conn:
        for table in (tasks, idempotency_records, audit_log):
            query = sa.select(sa.func.count()).where(table.c.namespace_id == namespace_id)
            if table is audit_log:  # a submit's own line names its task (orbit init's: none)
                query = query.where(audit_log.c.task_id.is_not(None))
            found.append((await conn.execute(query)).scalar_one())
        query = (
            sa.select(sa.func.count())
            .select_from(task_events.join(tasks, tasks.c.id == task_events.c.task_id))
            .where(tasks.c.namespace_id == namespace_id)
        )
        found.append((await conn.execute(query)).scalar_one())
    return found


async def test_o_sub_1_concurrent_mixed_submits_are_each_decided_alone(db: Database) -> None:
    """40 distinct keys, 12 submits of one key, a conflicting content and an invalid time, all
    at once: one task per key, replays of the first receipt, errors only for their own items,
    and exactly four rows per task."""
    made = await Admin(db).init(f"group-{secrets.token_hex(4)}", "q")
    ops = Operations(db)
    principal = await ops.authenticate(made.token)
    past = (datetime.now(UTC) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    calls = [
        ops.submit(principal, request(made.queue_id, i), f"k{i}", secrets.token_hex(16))
        for i in range(40)
    ]
    calls += [
        ops.submit(principal, request(made.queue_id, 7), "same", secrets.token_hex(16))
        for _ in range(12)
    ]
    calls.append(ops.submit(principal, request(made.queue_id, 8), "same", secrets.token_hex(16)))
    calls.append(ops.submit(principal, request(made.queue_id, 9, past), "late", "0" * 32))
    outcomes = await asyncio.gather(*calls, return_exceptions=True)

    assert all(isinstance(o, Receipt) and o.status == 201 for o in outcomes[:40])
    same = [o for o in outcomes[40:52]]
    assert all(isinstance(o, Receipt) for o in same)
    firsts = [o for o in same if isinstance(o, Receipt) and not o.deduplicated]
    assert len(firsts) == 1 and firsts[0].status == 201
    assert {o.task_text for o in same if isinstance(o, Receipt)} == {firsts[0].task_text}
    assert all(o.status == 200 for o in same if isinstance(o, Receipt) and o.deduplicated)
    assert isinstance(outcomes[52], IdempotencyConflict)
    assert isinstance(outcomes[53], InvalidArgument)
    assert await counts(db, made.namespace_id) == [41, 41, 41, 41]
    for receipt in outcomes[:3] + [firsts[0]]:  # the stored rows read back exactly
        assert isinstance(receipt, Receipt)
        task_id = json.loads(receipt.task_text)["id"]
        assert dumps(task_view(await ops.get(principal, task_id))) == receipt.task_text
    assert ops.groups is not None and ops.groups.commit.items == 54


@pytest.mark.mariadb
async def test_a_group_wakes_the_dispatcher_for_each_new_task_before_its_caller_resumes(
    db: Database,
) -> None:
    """`on_accepted(queue_id)` once per new task (replays: none), called right after the
    group's commit, so that the dispatcher and the other processes' hints do not wait for the
    submitting callers to resume."""
    made = await Admin(db).init(f"group-{secrets.token_hex(4)}", "q")
    notified: list[str] = []
    callers: set[asyncio.Task[None]] = set()
    in_callers: list[bool] = []

    def on_accepted(queue_id: str) -> None:
        notified.append(queue_id)
        in_callers.append(asyncio.current_task() in callers)

    ops = Operations(db, on_accepted=on_accepted)
    principal = await ops.authenticate(made.token)
    created = 0

    async def one(n: int, key: str) -> None:
        nonlocal created
        receipt = await ops.submit(principal, request(made.queue_id, n), key, "0" * 32)
        created += receipt.status == 201

    callers.update(asyncio.ensure_future(one(i, f"k{i}")) for i in range(20))
    callers.update(asyncio.ensure_future(one(7, "same")) for _ in range(5))
    await asyncio.gather(*callers)
    assert created == 21 and notified == [made.queue_id] * 21
    assert not any(in_callers), "announced by a resumed caller, not by its group's commit"


async def test_o_sub_4_a_key_taken_by_another_transaction_sends_the_group_alone(
    db: Database,
) -> None:
    """The group's lookup cannot see a key another transaction holds uncommitted; its insert
    then waits and fails on the key, the group rolls back, and each submit runs alone: the
    taken key replays the other transaction's receipt, the others are accepted."""
    if db.dialect is not Dialect.MYSQL:
        pytest.skip("SQLite has one writer: no other transaction can hold a key meanwhile")
    made = await Admin(db).init(f"race-{secrets.token_hex(4)}", "q")
    ops = Operations(db)
    principal = await ops.authenticate(made.token)
    taken = request(made.queue_id, 1)
    scope = Scope(made.namespace_id, OPERATION, "", "taken")
    receipt = StoredReceipt(submit_digest(taken), 201, '{"id":"from-the-other"}')
    holding = asyncio.Event()
    go = asyncio.Event()

    async def other() -> None:
        async with db.write() as conn:
            await idempotency.insert(
                conn, scope, receipt.digest, "f" * 32, receipt, await db.now(conn)
            )
            holding.set()
            await go.wait()

    holder = asyncio.create_task(other())
    await holding.wait()
    group = asyncio.gather(
        ops.submit(principal, taken, "taken", "1" * 32),
        ops.submit(principal, request(made.queue_id, 2), "free-1", "2" * 32),
        ops.submit(principal, request(made.queue_id, 3), "free-2", "3" * 32),
    )
    await asyncio.sleep(0.5)  # the group is now waiting on the held key
    go.set()
    await holder
    replay, first, second = await group
    assert replay == Receipt(200, True, '{"id":"from-the-other"}')
    assert first.status == 201 and second.status == 201
    assert ops.groups is not None and ops.groups.fallbacks >= 1


async def test_o_api_1_cached_tokens_still_expire_at_their_instant(db: Database) -> None:
    """Expiry is checked against now on every request, cached or not; a revocation is seen
    once the cached record is older than the cache's lifetime."""
    made = await Admin(db).init(f"cache-{secrets.token_hex(4)}", "q")
    admin = Admin(db)
    expires = datetime.now(UTC) + timedelta(seconds=1)
    expiring = await admin.create_token(
        made.namespace_id, [Permission.READ], [made.queue_id], expires
    )
    revoked = await admin.create_token(made.namespace_id, [Permission.READ], [made.queue_id], None)
    ops = Operations(db, token_cache=TokenCache(ttl_s=1.5))
    await ops.authenticate(expiring.token)
    await ops.authenticate(revoked.token)
    loaded = time.monotonic()
    await admin.revoke_token(revoked.token_id)
    await ops.authenticate(revoked.token)  # cached: the revocation is not seen yet
    await asyncio.sleep(max(0.0, (expires - datetime.now(UTC)).total_seconds()) + 0.05)
    if time.monotonic() - loaded < 1.5:  # (a very slow machine may have let it lapse)
        with pytest.raises(Unauthenticated):
            await ops.authenticate(expiring.token)  # still cached, but expired now
    await asyncio.sleep(max(0.0, loaded + 1.5 - time.monotonic()) + 0.05)
    with pytest.raises(Unauthenticated):
        await ops.authenticate(revoked.token)


async def test_o_sub_4_large_payloads_stay_in_bounded_groups(db: Database) -> None:
    """24 concurrent submits of ~200 KB each: groups are cut by size, so every statement stays
    below the server's packet limit and no group has to fall back."""
    made = await Admin(db).init(f"large-{secrets.token_hex(4)}", "q")
    ops = Operations(db)
    principal = await ops.authenticate(made.token)
    blob = "x" * 200_000

    def large(n: int) -> SubmitRequest:
        return parse_submit(
            read_json_text(
                f'{{"queue_id":"{made.queue_id}","handler":"h","handler_version":"v1",'
                f'"payload_version":"v1","payload":{{"n":{n},"blob":"{blob}"}}}}'
            )
        )

    receipts = await asyncio.gather(
        *(ops.submit(principal, large(n), f"big-{n}", "0" * 32) for n in range(24))
    )
    assert all(receipt.status == 201 for receipt in receipts)
    assert ops.groups is not None and ops.groups.fallbacks == 0
    assert ops.groups.commit.groups >= 2  # 24 x 200 KB does not fit one 4 MiB group
    assert await counts(db, made.namespace_id) == [24, 24, 24, 24]


async def test_clock_and_known_keys_in_one_lookup(db: Database) -> None:
    """`now_and_find_many` (one statement on MySQL/MariaDB) finds exactly what `find_many`
    finds, stored receipts byte-exact, and reads the database clock inside the transaction:
    with keys known, unknown, of another namespace, or none known at all."""
    made = await Admin(db).init(f"clock-{secrets.token_hex(4)}", "q")
    other = await Admin(db).init(f"clock-{secrets.token_hex(4)}", "q")
    ops = Operations(db)
    principal = await ops.authenticate(made.token)
    stored = [
        await ops.submit(principal, request(made.queue_id, n), f"c{n}", "0" * 32) for n in range(3)
    ]
    scope = Scope(made.namespace_id, OPERATION, "", "c0")
    cases = [
        [
            scope,
            Scope(made.namespace_id, OPERATION, "", "c2"),
            Scope(made.namespace_id, OPERATION, "", "unknown"),
        ],
        [Scope(other.namespace_id, OPERATION, "", "c1")],  # the key, but not its namespace
        [Scope(made.namespace_id, OPERATION, "", "none-known")],
        [scope],
    ]
    for scopes in cases:
        async with db.hot_write() as conn:
            before = await db.now(conn)
            now, found = await idempotency.now_and_find_many(db, conn, OPERATION, "", scopes)
            expected = await idempotency.find_many(conn, OPERATION, "", scopes)
            after = await db.now(conn)
        assert found == expected
        assert now.tzinfo is not None and before <= now <= after
    async with db.hot_write() as conn:
        _, found = await idempotency.now_and_find_many(db, conn, OPERATION, "", cases[0][:2])
    assert [found[s].receipt_text for s in cases[0][:2]] == [
        stored[0].task_text,
        stored[2].task_text,
    ]
