"""Idempotency retention cleanup (O-SUB-1 "kept >= 90 days"): records go after
90 days, never earlier, by the database clock; on SQLite and MariaDB, via store and CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import datetime, timedelta

import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.idempotency import RETENTION
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.retention import cleanup
from agentcall.orbit.store.tables import idempotency_records

pytestmark = [pytest.mark.integration]
c = idempotency_records.c


async def _insert(
    db: Database,
    namespace: str,
    ages: dict[str, timedelta],
    *,
    expires_after: timedelta = RETENTION,
) -> datetime:
    async with db.write() as conn:
        now = await db.now(conn)
        for key, age in ages.items():
            created = now - age
            await conn.execute(
                idempotency_records.insert().values(
                    namespace_id=namespace,
                    operation="submit",
                    target="",
                    idem_key=key,
                    digest_alg="sha256",
                    digest="0" * 64,
                    task_id="t" + key[:20],
                    status_code=201,
                    receipt="{}",
                    created_at=created,
                    expires_at=created + expires_after,
                )
            )
    return now


async def _keys(db: Database, namespace: str) -> set[str]:
    async with db.read() as conn:
        rows = await conn.execute(sa.select(c.idem_key).where(c.namespace_id == namespace))
        return {row.idem_key for row in rows}


def _ns() -> str:
    return "ns" + uuid.uuid4().hex[:20]


async def test_removes_only_records_past_90_days(db: Database) -> None:
    """O-SUB-1: past retention goes; just inside retention stays."""
    ns = _ns()
    ages = {
        "old": RETENTION + timedelta(days=1),
        "older": RETENTION + timedelta(days=400),
        "edge": RETENTION - timedelta(minutes=1),
        "young": timedelta(days=89),
        "fresh": timedelta(0),
    }
    await _insert(db, ns, ages)
    report = await cleanup(db)
    assert report.removed >= 2
    assert not report.dry_run
    assert await _keys(db, ns) == {"edge", "young", "fresh"}


async def test_never_earlier_even_with_a_wrong_expires_at(db: Database) -> None:
    """O-SUB-1: a record younger than 90 days stays even if its expires_at is in the past."""
    ns = _ns()
    await _insert(db, ns, {"young": timedelta(days=10)}, expires_after=timedelta(days=1))
    await cleanup(db)
    assert await _keys(db, ns) == {"young"}
    async with db.write() as conn:
        await conn.execute(idempotency_records.delete().where(c.namespace_id == ns))


async def test_dry_run_counts_and_keeps(db: Database) -> None:
    ns = _ns()
    before = (await cleanup(db, dry_run=True)).removed
    await _insert(db, ns, {f"k{i}": RETENTION + timedelta(hours=i + 1) for i in range(3)})
    report = await cleanup(db, dry_run=True)
    assert report.dry_run
    assert report.removed == before + 3
    assert report.cutoff == report.now - RETENTION
    assert await _keys(db, ns) == {"k0", "k1", "k2"}
    await cleanup(db)
    assert await _keys(db, ns) == set()


async def test_deletes_in_batches_until_done(db: Database) -> None:
    ns = _ns()
    await _insert(db, ns, {f"b{i}": RETENTION + timedelta(days=2) for i in range(7)})
    report = await cleanup(db, batch=3)
    assert report.removed >= 7
    assert await _keys(db, ns) == set()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "agentcall.orbit", "idempotency", "cleanup", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


async def test_cli_cleanup_json_and_dry_run(db: Database, db_url: str) -> None:
    ns = _ns()
    await _insert(db, ns, {"gone": RETENTION + timedelta(days=3), "kept": timedelta(days=1)})
    dry = _cli("--database", db_url, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    shown = json.loads(dry.stdout)
    assert shown["dry_run"] is True
    assert shown["removed"] >= 1
    assert await _keys(db, ns) == {"gone", "kept"}
    real = _cli("--database", db_url, "--json")
    assert real.returncode == 0, real.stderr
    assert json.loads(real.stdout)["removed"] >= 1
    assert await _keys(db, ns) == {"kept"}
    assert "90-day retention" in _cli("--help").stdout
