"""Idempotency retention (O-SUB-1 "kept >= 90 days"): remove expired records; and the audit
log's, by the same policy (`cleanup_audit`: entries older than `RETENTION`, docs/orbit/audit.md).

A record goes only when both its `expires_at` and `created_at + RETENTION` are at or before the
database clock, so a record is never removed early even if `expires_at` was written wrong.
Deletion runs in small batches, one short transaction each, so it never holds locks for long.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.idempotency import RETENTION
from agentcall.orbit.store import audit
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.tables import idempotency_records

c = idempotency_records.c
BATCH = 500
_KEY = (c.namespace_id, c.operation, c.target, c.idem_key)


@dataclass(frozen=True, slots=True)
class CleanupReport:
    now: datetime
    cutoff: datetime
    removed: int
    dry_run: bool


def _expired(now: datetime) -> sa.ColumnElement[bool]:
    return sa.and_(c.expires_at <= now, c.created_at <= now - RETENTION)


async def count_expired(conn: AsyncConnection, now: datetime) -> int:
    query = sa.select(sa.func.count()).select_from(idempotency_records).where(_expired(now))
    return int((await conn.execute(query)).scalar_one())


async def delete_expired_batch(conn: AsyncConnection, now: datetime, limit: int = BATCH) -> int:
    """Delete up to `limit` expired records; return how many went."""
    keys = (await conn.execute(sa.select(*_KEY).where(_expired(now)).limit(limit))).all()
    if not keys:
        return 0
    match = sa.or_(
        *(sa.and_(*(col == value for col, value in zip(_KEY, key, strict=True))) for key in keys)
    )
    result = await conn.execute(idempotency_records.delete().where(match, _expired(now)))
    return int(result.rowcount)


async def cleanup(db: Database, *, dry_run: bool = False, batch: int = BATCH) -> CleanupReport:
    """Remove (or with `dry_run` only count) records past retention, by the database clock."""
    async with db.read() as conn:
        now = await db.now(conn)
    if dry_run:
        async with db.read() as conn:
            return CleanupReport(now, now - RETENTION, await count_expired(conn, now), True)
    removed = 0
    while True:
        async with db.write() as conn:
            gone = await delete_expired_batch(conn, now, batch)
        removed += gone
        if gone < batch:
            return CleanupReport(now, now - RETENTION, removed, False)


async def cleanup_audit(
    db: Database, *, dry_run: bool = False, batch: int = BATCH
) -> CleanupReport:
    """Remove (or with `dry_run` only count) audit entries written `RETENTION` or longer ago
    by the database clock, in batches of one short transaction each."""
    async with db.read() as conn:
        now = await db.now(conn)
    cutoff = now - RETENTION
    if dry_run:
        async with db.read() as conn:
            return CleanupReport(now, cutoff, await audit.count_expired(conn, cutoff), True)
    removed = 0
    while True:
        async with db.write() as conn:
            gone = await audit.delete_expired_batch(conn, cutoff, batch)
        removed += gone
        if gone < batch:
            return CleanupReport(now, cutoff, removed, False)
