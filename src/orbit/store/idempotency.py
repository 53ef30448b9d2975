"""Idempotency records: identity, digest, and the original receipt, kept >= 90 days."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from orbit.domain.canonical import Digest
from orbit.domain.idempotency import RETENTION, Scope, StoredReceipt
from orbit.store.db import hot_execute
from orbit.store.tables import idempotency_records

c = idempotency_records.c


_FIND = sa.select(c.digest_alg, c.digest, c.status_code, c.receipt).where(
    c.namespace_id == sa.bindparam("namespace_id"),
    c.operation == sa.bindparam("operation"),
    c.target == sa.bindparam("target"),
    c.idem_key == sa.bindparam("idem_key"),
)
_INSERT = idempotency_records.insert()


async def find(conn: AsyncConnection, scope: Scope) -> StoredReceipt | None:
    identity = {"namespace_id": scope.namespace_id, "operation": scope.operation,
                "target": scope.target, "idem_key": scope.key}  # fmt: skip
    row = (await conn.execute(_FIND, identity)).first()
    if row is None:
        return None
    return StoredReceipt(Digest(row.digest_alg, row.digest), row.status_code, row.receipt)


async def insert(
    conn: AsyncConnection,
    scope: Scope,
    digest: Digest,
    task_id: str,
    receipt: StoredReceipt,
    now: datetime,
) -> None:
    """Raises the driver's duplicate-key error when a concurrent request holds the key."""
    await hot_execute(
        conn,
        _INSERT,
        {
            "namespace_id": scope.namespace_id,
            "operation": scope.operation,
            "target": scope.target,
            "idem_key": scope.key,
            "digest_alg": digest.algorithm,
            "digest": digest.hex,
            "task_id": task_id,
            "status_code": receipt.status,
            "receipt": receipt.receipt_text,
            "created_at": now,
            "expires_at": now + RETENTION,
        },
    )
