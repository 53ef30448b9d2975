"""`connector.insert_all` on real databases (O-SUB-4): small INSERTs as one round trip, optionally
carrying the transaction's COMMIT, large ones as bulk commands; every value stored exactly, and
a session whose COMMIT went with its writes refuses anything after it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.store.connector import fetch, insert_all
from agentcall.orbit.store.db import Database, Dialect
from agentcall.orbit.store.mysql import checked_out_driver
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import audit_log

pytestmark = pytest.mark.integration


def _rows(namespace: str, count: int) -> list[dict[str, object]]:
    at = datetime(2026, 12, 1, 9, 30, 15, 123456, tzinfo=UTC)
    return [
        {
            "id": new_id(),
            "namespace_id": namespace,
            "token_id": new_id(),
            "action": f"test 100% «{index}»; COMMIT",
            "task_id": None,
            "queue_id": new_id(),
            "handler": "h'\\\"",
            "request_id": None,
            "created_at": at,
            "actor_name": "ops «ü» 'x'",
            "origin": "cli",
            "remote_addr": "::1",
            "target_kind": "queue",
            "target_id": None,
            "detail": '{"note": "50% \\"done\\""}',
        }
        for index in range(count)
    ]


async def _stored(db: Database, namespace: str) -> list[dict[str, object]]:
    async with db.read() as conn:
        result = await conn.execute(
            sa.select(audit_log).where(audit_log.c.namespace_id == namespace)
        )
        return [dict(row._mapping) for row in result]


@pytest.mark.parametrize(
    ("count", "one_trip"), [(1, True), (3, True), (40, True), (1, False), (40, False)]
)
async def test_o_sub_4_every_row_is_stored_exactly(
    db: Database, count: int, one_trip: bool
) -> None:
    namespace = new_id()
    first, second = _rows(namespace, count), _rows(namespace, 2)
    async with db.hot_write() as conn:
        await insert_all(
            conn,
            [Insert(audit_log, first), Insert(audit_log, second)],
            one_trip=one_trip,
            commit=True,
        )
    stored = sorted(await _stored(db, namespace), key=lambda row: str(row["id"]))
    assert stored == sorted(first + second, key=lambda row: str(row["id"]))


async def test_o_sub_4_nothing_may_follow_a_commit_sent_with_the_writes(db: Database) -> None:
    if db.dialect is not Dialect.MYSQL:
        pytest.skip("SQLite runs the INSERTs one by one; its commit is db.write()'s")
    namespace = new_id()
    with pytest.raises(RuntimeError, match="committed with its last writes"):
        async with db.hot_write() as conn:
            await insert_all(
                conn, [Insert(audit_log, _rows(namespace, 1))], one_trip=True, commit=True
            )
            await fetch(conn, "now", {})
    assert len(await _stored(db, namespace)) == 1, "the COMMIT went with the INSERT"


@pytest.mark.parametrize("one_trip", [True, False])
async def test_o_sub_4_a_failing_statement_commits_nothing_sent_with_it(
    db: Database, one_trip: bool
) -> None:
    namespace = new_id()
    good, bad = _rows(namespace, 2), _rows(namespace, 1)
    bad[0]["token_id"] = None  # NOT NULL: the database refuses the second INSERT
    with pytest.raises(sa.exc.DBAPIError):
        async with db.hot_write() as conn:
            await insert_all(
                conn,
                [Insert(audit_log, good), Insert(audit_log, bad)],
                one_trip=one_trip,
                commit=True,
            )
    assert await _stored(db, namespace) == []


async def test_the_checked_out_driver_is_the_raw_connection(db: Database) -> None:
    """The hot statements read the driver connection without a greenlet hop, inside a
    transaction only; outside one they await `get_raw_connection()`."""
    async with db.engine.connect() as conn:
        assert checked_out_driver(conn) is None
        async with conn.begin():
            raw = (await conn.get_raw_connection()).driver_connection
            assert raw is not None and checked_out_driver(conn) is raw
