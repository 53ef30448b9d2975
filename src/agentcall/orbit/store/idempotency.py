"""Idempotency records: identity, digest, and the original receipt, kept >= 90 days."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.canonical import Digest
from agentcall.orbit.domain.idempotency import RETENTION, Scope, StoredReceipt
from agentcall.orbit.store.db import (
    MYSQL_CLOCK,
    Database,
    Dialect,
    HotConnection,
    InsertRows,
    hot_execute,
)
from agentcall.orbit.store.tables import idempotency_records

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


_RECORD_COLUMNS = (c.namespace_id, c.idem_key, c.digest_alg, c.digest, c.status_code, c.receipt)


def _matching(namespaces: int, keys: int) -> sa.ColumnElement[bool]:
    """The records of one operation and target whose namespace and key are among the
    bound `n0..` and `k0..` (see `_find_params`)."""
    return sa.and_(
        c.operation == sa.bindparam("operation"),
        c.target == sa.bindparam("target"),
        c.namespace_id.in_([sa.bindparam(f"n{i}") for i in range(namespaces)]),
        c.idem_key.in_([sa.bindparam(f"k{i}") for i in range(keys)]),
    )


@functools.lru_cache(maxsize=256)
def _find_many_statement(namespaces: int, keys: int) -> sa.Select[Any]:
    return sa.select(*_RECORD_COLUMNS).where(_matching(namespaces, keys))


@functools.lru_cache(maxsize=256)
def _clock_and_find_many_statement(namespaces: int, keys: int) -> sa.Select[Any]:
    """`_find_many_statement` with the database clock in front: one row with NULLs when no
    record matches (a one-row table outer-joined with the records)."""
    one = sa.select(sa.literal_column("1").label("one")).subquery("clock")
    return sa.select(sa.literal_column(MYSQL_CLOCK), *_RECORD_COLUMNS).select_from(
        one.outerjoin(idempotency_records, _matching(namespaces, keys))
    )


async def find_many(
    conn: HotConnection, operation: str, target: str, scopes: Iterable[Scope]
) -> dict[Scope, StoredReceipt]:
    """The stored records of `scopes` (all of `operation` and `target`) in one statement."""
    wanted = set(scopes)
    if not wanted:
        return {}
    params = _find_params(operation, target, wanted)
    rows = await hot_execute(conn, _find_many_statement(*_counts(wanted)), params)
    return _found(rows, operation, target, wanted)


async def now_and_find_many(
    db: Database, conn: HotConnection, operation: str, target: str, scopes: Iterable[Scope]
) -> tuple[datetime, dict[Scope, StoredReceipt]]:
    """`db.now(conn)` and `find_many(...)`; on MySQL/MariaDB in one statement (one round trip
    less per submit group; the clock is still read once, inside the transaction)."""
    wanted = set(scopes)
    if db.dialect is not Dialect.MYSQL or not wanted:
        return await db.now(conn), await find_many(conn, operation, target, wanted)
    params = _find_params(operation, target, wanted)
    rows = await hot_execute(conn, _clock_and_find_many_statement(*_counts(wanted)), params)
    now = rows[0][0]
    assert isinstance(now, datetime)
    records = [row[1:] for row in rows if row[1] is not None]
    return now, _found(records, operation, target, wanted)


def _counts(wanted: set[Scope]) -> tuple[int, int]:
    return len({scope.namespace_id for scope in wanted}), len({scope.key for scope in wanted})


def _find_params(operation: str, target: str, wanted: set[Scope]) -> dict[str, str]:
    namespaces = sorted({scope.namespace_id for scope in wanted})
    keys = sorted({scope.key for scope in wanted})
    params: dict[str, str] = {"operation": operation, "target": target}
    params.update({f"n{i}": value for i, value in enumerate(namespaces)})
    params.update({f"k{i}": value for i, value in enumerate(keys)})
    return params


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
    await hot_execute(conn, _INSERT, _row(scope, digest, task_id, receipt, now))


def receipt_rows(records: Sequence[tuple[Scope, str, StoredReceipt]], now: datetime) -> InsertRows:
    """(scope, task ID, receipt) records as one INSERT (`db.hot_insert_all`); a duplicate
    fails them all."""
    return InsertRows(_INSERT, [_row(scope, receipt.digest, task_id, receipt, now)
                                for scope, task_id, receipt in records])  # fmt: skip
