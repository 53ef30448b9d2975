"""The store on both databases: migrations, the refusal to run unmigrated, schema parity,
operator operations and the transaction rules that do not need HTTP."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from agentcall.orbit.domain.errors import (
    InvalidArgument,
    NotFound,
    NotMigrated,
    Unauthenticated,
    Unavailable,
)
from agentcall.orbit.domain.strictjson import read_json_text
from agentcall.orbit.domain.submit import parse_submit
from agentcall.orbit.domain.tokens import Permission
from agentcall.orbit.store import journal
from agentcall.orbit.store.admin import Admin
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.migrate import current, head, require_current, upgrade
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import idempotency_records, metadata, task_events, tasks
from agentcall.orbit.store.token_cache import TokenCache
from agentcall.orbit.usecases.operations import Operations

pytestmark = [pytest.mark.integration]


async def test_migrate_then_serve_check(empty_db_url: str) -> None:
    """`orbit serve` refuses an unmigrated database with a message naming `orbit migrate`."""
    db = Database.open(empty_db_url)
    try:
        with pytest.raises(NotMigrated, match="run `orbit migrate"):
            await require_current(db)
        assert await upgrade(db) == (None, head())
        await require_current(db)
        assert await upgrade(db) == (head(), head())  # idempotent
        assert await current(db) == head()
    finally:
        await db.close()


async def test_migrations_match_the_live_schema(db_url: str) -> None:
    """The numbered migrations create exactly `agentcall.orbit.store.tables`."""
    db = Database.open(db_url)
    try:
        async with db.engine.connect() as conn:
            diff = await conn.run_sync(
                lambda sync: compare_metadata(MigrationContext.configure(sync), metadata)
            )
    finally:
        await db.close()
    assert diff == []


async def test_admin_operations(db_url: str) -> None:
    db = Database.open(db_url)
    admin, ops = Admin(db), Operations(db, token_cache=TokenCache(ttl_s=0))  # no cache here
    try:
        name = f"ns-{datetime.now(UTC).timestamp()}"
        made = await admin.init(name, "default")
        principal = await ops.authenticate(made.token)
        assert principal.namespace_id == made.namespace_id
        assert principal.queue_ids == {made.queue_id}
        assert principal.permissions == set(Permission)
        with pytest.raises(InvalidArgument, match="exists"):
            await admin.init(name, "default")
        second = await admin.create_queue(made.namespace_id, "second")
        with pytest.raises(InvalidArgument, match="exists"):
            await admin.create_queue(made.namespace_id, "second")
        with pytest.raises(NotFound):
            await admin.create_queue("0" * 32, "x")
        issued = await admin.create_token(
            made.namespace_id, [Permission.READ], [second], datetime.now(UTC) + timedelta(hours=1)
        )
        reader = await ops.authenticate(issued.token)
        assert reader.permissions == {Permission.READ} and reader.queue_ids == {second}
        with pytest.raises(InvalidArgument, match="not a queue of this namespace"):
            await admin.create_token(made.namespace_id, [Permission.READ], ["f" * 32], None)
        with pytest.raises(InvalidArgument, match="future"):
            await admin.create_token(
                made.namespace_id, [Permission.READ], [second], datetime(2001, 1, 1, tzinfo=UTC)
            )
        await admin.revoke_token(issued.token_id)
        await admin.revoke_token(issued.token_id)  # revoking twice is harmless
        with pytest.raises(Unauthenticated):
            await ops.authenticate(issued.token)
        with pytest.raises(NotFound):
            await admin.revoke_token("0" * 32)
    finally:
        await db.close()


async def test_secrets_are_stored_as_hashes_only(db_url: str) -> None:
    """Tokens are shown once: the database holds only their SHA-256."""
    db = Database.open(db_url)
    try:
        made = await Admin(db).init(f"hash-{datetime.now(UTC).timestamp()}", "q")
        async with db.read() as conn:
            rows = (await conn.exec_driver_sql("SELECT * FROM tokens")).all()
        assert rows and all(made.token not in map(str, row) for row in rows)
    finally:
        await db.close()


async def test_o_sub_4_failure_rolls_everything_back(
    db_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """O-SUB-4 / O-NOTE-6: a failure after the task row is written (here: the audit insert)
    rolls back task, event, idempotency record and receipt; the key stays unused. On the group
    path the database itself refuses the audit row (NULL token), after the idempotency, task
    and event INSERTs of the same round trip ran: none of them may commit."""
    db = Database.open(db_url)
    try:
        made = await Admin(db).init(f"rb-{datetime.now(UTC).timestamp()}", "q")
        principal = await Operations(db).authenticate(made.token)
        text = (
            f'{{"queue_id":"{made.queue_id}","handler":"h","handler_version":"v1",'
            '"payload_version":"v1","payload":{"n":1}}'
        )
        request = parse_submit(read_json_text(text))

        async def broken(*args: object, **kwargs: object) -> None:
            raise RuntimeError("disk full while writing the audit row")

        original = journal.acceptance_rows

        def refused_audit(*args: Any) -> list[Insert]:
            events, audits = original(*args)
            nulls = [{**row, "token_id": None} for row in audits.rows]
            return [events, Insert(audits.table, nulls)]

        monkeypatch.setattr(journal, "append_audit", broken)  # the single path
        monkeypatch.setattr(journal, "acceptance_rows", refused_audit)  # the group commit path
        with pytest.raises((RuntimeError, Unavailable)):
            await Operations(db).submit(principal, request, "rb-key", "0" * 32)
        async with db.read() as conn:
            for table in (tasks, idempotency_records):
                count = await conn.execute(
                    sa.select(sa.func.count())
                    .select_from(table)
                    .where(table.c.namespace_id == made.namespace_id)
                )
                assert count.scalar_one() == 0
            events = await conn.execute(sa.select(sa.func.count()).select_from(task_events))
            before_events = events.scalar_one()
        monkeypatch.undo()
        receipt = await Operations(db).submit(principal, request, "rb-key", "0" * 32)
        assert receipt.status == 201 and not receipt.deduplicated
        async with db.read() as conn:
            events = await conn.execute(sa.select(sa.func.count()).select_from(task_events))
            assert events.scalar_one() == before_events + 1
    finally:
        await db.close()
