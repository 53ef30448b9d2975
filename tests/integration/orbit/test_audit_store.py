"""The audit log on SQLite and MariaDB (docs/orbit/audit.md): entries recorded by the store
come back newest first, filtered and keyset-paged, with who, origin, address, request and
detail; retention removes entries past 90 days by the database clock, never younger ones,
through the store and through `orbit audit cleanup`."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from datetime import timedelta

import pytest
import sqlalchemy as sa

from agentcall.orbit.domain.audit import AuditEntry, AuditQuery, Origin
from agentcall.orbit.domain.idempotency import RETENTION
from agentcall.orbit.domain.tokens import ALL_PERMISSIONS, Principal
from agentcall.orbit.store.audit import entry_row
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.retention import cleanup_audit
from agentcall.orbit.store.tables import audit_log
from agentcall.orbit.store.task_store import SqlTaskStore
from agentcall.orbit.usecases.audit import list_audit

pytestmark = [pytest.mark.integration]


def _ns() -> str:
    return uuid.uuid4().hex[:26]


def _entry(namespace: str, action: str, target: str, **extra: object) -> AuditEntry:
    values: dict[str, object] = {
        "actor_token_id": "t" * 26,
        "actor_name": "ops-alice",
        "action": action,
        "target_kind": "queue",
        "target_id": target,
        "namespace_id": namespace,
        "origin": Origin.CLI,
        "remote_addr": "192.0.2.10",
        "request_id": "r" * 26,
        "detail": {"rate_per_s": 5},
    }
    values.update(extra)
    return AuditEntry(**values)  # type: ignore[arg-type]


async def test_recorded_entries_page_newest_first_with_filters(db: Database) -> None:
    store, namespace = SqlTaskStore(db), _ns()
    for n in range(5):
        await store.record_audit([_entry(namespace, f"a.{n % 2}", f"q{n}")])
    principal = Principal("t" * 26, namespace, ALL_PERMISSIONS, frozenset())
    seen, cursor = [], None
    while True:
        page = await list_audit(store, principal, AuditQuery(namespace), cursor, 2)
        seen += page.items
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert [e.target_id for e in seen] == ["q4", "q3", "q2", "q1", "q0"]
    first = seen[0]
    assert (first.actor_name, first.origin, first.remote_addr) == (
        "ops-alice",
        Origin.CLI,
        "192.0.2.10",
    )
    assert first.detail == {"rate_per_s": 5} and first.at is not None
    only = await list_audit(store, principal, AuditQuery(namespace, action="a.1"), None, 9)
    assert [e.target_id for e in only.items] == ["q3", "q1"]
    since = await list_audit(store, principal, AuditQuery(namespace, since=seen[1].at), None, 9)
    assert [e.target_id for e in since.items] == ["q4", "q3"]
    target = await list_audit(store, principal, AuditQuery(namespace, target="q2"), None, 9)
    assert [e.target_id for e in target.items] == ["q2"]


async def test_retention_removes_entries_past_ninety_days_only(db: Database) -> None:
    namespace = _ns()
    async with db.write() as conn:
        now = await db.now(conn)
        ages = {"old": RETENTION + timedelta(hours=1), "young": RETENTION - timedelta(hours=1)}
        rows = [entry_row(_entry(namespace, "a.x", key), now - age) for key, age in ages.items()]
        await conn.execute(audit_log.insert(), rows)
    counted = await cleanup_audit(db, dry_run=True)
    assert counted.removed >= 1 and counted.dry_run
    report = await cleanup_audit(db, batch=1)
    assert report.removed >= 1
    async with db.read() as conn:
        query = sa.select(audit_log.c.target_id).where(audit_log.c.namespace_id == namespace)
        left = {row.target_id for row in await conn.execute(query)}
    assert left == {"young"}


async def test_orbit_audit_cleanup_counts_then_removes_only_old_entries(
    db: Database, db_url: str
) -> None:
    namespace = _ns()
    async with db.write() as conn:
        now = await db.now(conn)
        ages = {"old": RETENTION + timedelta(days=3), "young": timedelta(days=1)}
        rows = [entry_row(_entry(namespace, "a.x", key), now - age) for key, age in ages.items()]
        await conn.execute(audit_log.insert(), rows)

    def cli(*args: str) -> dict[str, object]:
        command = [sys.executable, "-m", "agentcall.orbit", "audit", "cleanup", *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
        assert done.returncode == 0, done.stderr
        shown: dict[str, object] = json.loads(done.stdout)
        return shown

    async def left() -> set[str]:
        async with db.read() as conn:
            query = sa.select(audit_log.c.target_id).where(audit_log.c.namespace_id == namespace)
            return {row.target_id for row in await conn.execute(query)}

    dry = cli("--database", db_url, "--dry-run", "--json")
    assert dry["dry_run"] is True and int(str(dry["removed"])) >= 1
    assert await left() == {"old", "young"}
    real = cli("--database", db_url, "--json")
    assert real["dry_run"] is False and int(str(real["removed"])) >= 1
    assert await left() == {"young"}
