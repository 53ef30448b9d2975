"""Idempotency records: identity, digest, and the original receipt, kept >= 90 days."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.errors import Unavailable
from agentcall.orbit.domain.idempotency import RETENTION, Scope, StoredReceipt
from agentcall.orbit.store.connector import HotConnection, fetch, write_all
from agentcall.orbit.store.db import Database
from agentcall.orbit.store.sql import Insert
from agentcall.orbit.store.tables import idempotency_records

c = idempotency_records.c
T = TypeVar("T")


_FIND = sa.select(c.digest_alg, c.digest, c.status_code, c.receipt).where(
    c.namespace_id == sa.bindparam("namespace_id"),
    c.operation == sa.bindparam("operation"),
    c.target == sa.bindparam("target"),
    c.idem_key == sa.bindparam("idem_key"),
)


async def find(conn: AsyncConnection, scope: Scope) -> StoredReceipt | None:
    identity = {
        "namespace_id": scope.namespace_id,
        "operation": scope.operation,
        "target": scope.target,
        "idem_key": scope.key,
    }
    row = (await conn.execute(_FIND, identity)).first()
    if row is None:
        return None
    return StoredReceipt(Digest(row.digest_alg, row.digest), row.status_code, row.receipt)


async def find_many(
    conn: HotConnection, operation: str, target: str, scopes: Iterable[Scope]
) -> dict[Scope, StoredReceipt]:
    """The stored records of `scopes` (all of `operation` and `target`) in one statement."""
    wanted = set(scopes)
    if not wanted:
        return {}
    rows = await fetch(conn, "receipts", _find_params(operation, target, wanted))
    return _found(rows, operation, target, wanted)


async def now_and_find_many(
    db: Database, conn: HotConnection, operation: str, target: str, scopes: Iterable[Scope]
) -> tuple[datetime, dict[Scope, StoredReceipt]]:
    """`db.now(conn)` and `find_many(...)`; on MySQL/MariaDB in one statement (one round trip
    less per submit group; the clock is still read once, inside the transaction)."""
    wanted = set(scopes)
    if not wanted:
        return await db.now(conn), {}
    params = _find_params(operation, target, wanted)
    now, rows = await db.now_and_fetch(conn, "receipts", params)
    return now, _found(rows, operation, target, wanted)


def _find_params(operation: str, target: str, wanted: set[Scope]) -> dict[str, object]:
    return {
        "operation": operation,
        "target": target,
        "namespaces": sorted({scope.namespace_id for scope in wanted}),
        "keys": sorted({scope.key for scope in wanted}),
    }


def _found(
    rows: Iterable[Sequence[Any]], operation: str, target: str, wanted: set[Scope]
) -> dict[Scope, StoredReceipt]:
    found: dict[Scope, StoredReceipt] = {}
    for namespace_id, key, algorithm, digest_hex, status, receipt in rows:
        scope = Scope(namespace_id, operation, target, key)
        if scope in wanted:
            found[scope] = StoredReceipt(Digest(algorithm, digest_hex), status, receipt)
    return found


def _row(
    scope: Scope, digest: Digest, task_id: str, receipt: StoredReceipt, now: datetime
) -> dict[str, Any]:
    return {
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
    }


async def insert(
    conn: AsyncConnection,
    scope: Scope,
    digest: Digest,
    task_id: str,
    receipt: StoredReceipt,
    now: datetime,
) -> None:
    """Raises the driver's duplicate-key error when a concurrent request holds the key."""
    row = _row(scope, digest, task_id, receipt, now)
    await write_all(conn, [Insert(idempotency_records, [row])])


def receipt_rows(records: Sequence[tuple[Scope, str, StoredReceipt]], now: datetime) -> Insert:
    """(scope, task ID, receipt) records as one INSERT (`connector.insert_all`); a duplicate
    fails them all."""
    return Insert(
        idempotency_records,
        [_row(scope, receipt.digest, task_id, receipt, now) for scope, task_id, receipt in records],
    )


async def replaying(
    db: Database,
    once: Callable[[], Awaitable[T]],
    scope: Scope,
    replay: Callable[[StoredReceipt], T],
) -> T:
    """Run `once` (one transaction, retried on transient failures); when a concurrent request
    with the same key won the idempotency record, answer `replay` of its stored receipt."""

    async def attempt() -> T:
        try:
            return await once()
        except sa.exc.IntegrityError as exc:
            if not db.is_duplicate(exc):
                raise
        async with db.read() as conn:  # a concurrent request won the key
            stored = await find(conn, scope)
        if stored is None:
            raise Unavailable("concurrent request on the same key; retry with the same key")
        return replay(stored)

    return await db.retrying(attempt)
