"""SQL of the execution kernel (SQLAlchemy Core): the lease query, attempt rows locked with
their task, and the writes of one transition. Decisions are not made here (see
`orbit.domain.attempts` / `orbit.domain.leasing`); every task update is conditional on
(id, state, revision), every attempt update on (id, state)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.attempts import AttemptState, TaskFacts
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy
from agentcall.orbit.store import driver
from agentcall.orbit.store import execution_mysql as store_mysql
from agentcall.orbit.store.db import Dialect
from agentcall.orbit.store.tables import task_attempts, task_events, tasks

t, a = tasks.c, task_attempts.c
LIVE = (AttemptState.LEASED.value, AttemptState.RUNNING.value)


async def lease_candidates(
    conn: AsyncConnection, dialect: Dialect, queue_id: str, handlers: Iterable[HandlerKey],
    now: datetime, limit: int,
) -> list[Any]:  # fmt: skip
    """Rows of `leasable`, locked (SKIP LOCKED) on MySQL/MariaDB."""
    if dialect is Dialect.MYSQL:
        return await store_mysql.leasable(conn, queue_id, handlers, now, limit)
    return list(await conn.execute(leasable(dialect, queue_id, handlers, now, limit)))


def leasable(
    dialect: Dialect, queue_id: str, handlers: Iterable[HandlerKey], now: datetime, limit: int
) -> sa.Select[Any]:
    """The SQL twin of `orbit.domain.leasing.ineligibility`, oldest-ready first."""
    pairs = [(h.handler, h.handler_version) for h in sorted(handlers)]
    query = (
        sa.select(tasks)
        .where(
            t.queue_id == queue_id,
            t.state == TaskState.WAITING.value,
            t.available_at <= now,
            t.deadline_at > now,
            sa.or_(t.start_deadline_at.is_(None), t.start_deadline_at > now),
            t.attempt_count < t.retry_max_attempts,
            sa.tuple_(t.handler, t.handler_version).in_(pairs),
        )
        .order_by(t.available_at, t.id)
        .limit(limit)
    )
    if dialect is Dialect.MYSQL:
        query = query.with_for_update(skip_locked=True)
    return query


@dataclass(frozen=True, slots=True)
class LiveAttempt:
    """An attempt row with the task facts its transitions need (locked on MySQL)."""

    id: str
    task_id: str
    namespace_id: str
    queue_id: str
    number: int
    state: AttemptState
    token_sha256: str
    connection_id: str
    lease_expires_at: datetime
    attempt_deadline_at: datetime
    started_at: datetime | None
    end_reason: str | None
    end_digest: str | None
    evidence_count: int
    task_state: TaskState
    task_revision: int
    task_cancel_requested: bool
    facts: TaskFacts


_ATTEMPT_COLUMNS = (
    a.id, a.task_id, a.namespace_id, a.queue_id, a.number, a.state, a.lease_token_sha256,
    a.connection_id, a.lease_expires_at, a.attempt_deadline_at, a.started_at, a.end_reason,
    a.end_digest, a.evidence_count,
    t.state.label("task_state"), t.revision.label("task_revision"),
    t.cancel_requested_at.label("task_cancel_requested_at"), t.recovery_safety,
    t.retry_max_attempts, t.retry_initial_delay_ms, t.retry_max_delay_ms,
    t.retry_attempt_timeout_ms, t.attempt_count, t.deadline_at, t.start_deadline_at,
)  # fmt: skip
_JOIN = task_attempts.join(tasks, tasks.c.id == task_attempts.c.task_id)


async def load_attempts(
    conn: AsyncConnection, dialect: Dialect, attempt_ids: Sequence[str]
) -> dict[str, LiveAttempt]:
    if dialect is Dialect.MYSQL:
        return {row.id: _live(row) for row in await store_mysql.attempts(conn, attempt_ids)}
    query = sa.select(*_ATTEMPT_COLUMNS).select_from(_JOIN).where(a.id.in_(attempt_ids))
    return {row.id: _live(row) for row in await conn.execute(query)}


async def expired_attempts(
    conn: AsyncConnection, dialect: Dialect, now: datetime, limit: int
) -> list[LiveAttempt]:
    """Live attempts whose lease ran out (the lease never outlives the attempt deadline)."""
    query = (
        sa.select(*_ATTEMPT_COLUMNS)
        .select_from(_JOIN)
        .where(a.state.in_(LIVE), a.lease_expires_at <= now)
        .order_by(a.lease_expires_at)
        .limit(limit)
    )
    if dialect is Dialect.MYSQL:
        query = query.with_for_update(skip_locked=True)
    return [_live(row) for row in await conn.execute(query)]


def _live(row: Any) -> LiveAttempt:
    return LiveAttempt(
        id=row.id,
        task_id=row.task_id,
        namespace_id=row.namespace_id,
        queue_id=row.queue_id,
        number=row.number,
        state=AttemptState(row.state),
        token_sha256=row.lease_token_sha256,
        connection_id=row.connection_id,
        lease_expires_at=row.lease_expires_at,
        attempt_deadline_at=row.attempt_deadline_at,
        started_at=row.started_at,
        end_reason=row.end_reason,
        end_digest=row.end_digest,
        evidence_count=row.evidence_count,
        task_state=TaskState(row.task_state),
        task_revision=row.task_revision,
        task_cancel_requested=row.task_cancel_requested_at is not None,
        facts=TaskFacts(
            recovery_safety=RecoverySafety(row.recovery_safety),
            retry=RetryPolicy(
                row.retry_max_attempts,
                row.retry_initial_delay_ms,
                row.retry_max_delay_ms,
                row.retry_attempt_timeout_ms,
            ),
            attempt_count=row.attempt_count,
            deadline_at=row.deadline_at,
            start_deadline_at=row.start_deadline_at,
            cancel_requested=row.task_cancel_requested_at is not None,
        ),
    )


async def expired_waiting(
    conn: AsyncConnection, dialect: Dialect, now: datetime, limit: int
) -> list[sa.Row[Any]]:
    """WAITING tasks past their start deadline or task deadline."""
    columns = (t.id, t.revision, t.start_deadline_at, t.deadline_at, t.queue_id)
    rows: list[sa.Row[Any]] = []
    for column in (t.deadline_at, t.start_deadline_at):
        query = (
            sa.select(*columns)
            .where(t.state == TaskState.WAITING.value, column <= now)
            .order_by(column)
            .limit(limit)
        )
        if dialect is Dialect.MYSQL:
            query = query.with_for_update(skip_locked=True)
        rows.extend(await conn.execute(query))
    unique = {row.id: row for row in rows}
    return list(unique.values())


async def update_task(
    conn: AsyncConnection, task_id: str, state: TaskState, revision: int, values: dict[str, Any]
) -> bool:
    """Move the task from (state, revision) to `values` with revision + 1."""
    result = await conn.execute(
        tasks.update()
        .where(t.id == task_id, t.state == state.value, t.revision == revision)
        .values(revision=revision + 1, **values)
    )
    return result.rowcount == 1


async def update_attempt(
    conn: AsyncConnection, attempt_id: str, state: AttemptState, values: dict[str, Any]
) -> bool:
    result = await conn.execute(
        task_attempts.update().where(a.id == attempt_id, a.state == state.value).values(**values)
    )
    return result.rowcount == 1


def event_row(
    task_id: str,
    revision: int,
    kind: str,
    from_state: TaskState,
    to_state: TaskState,
    detail: str,
    now: datetime,
    event_id: str,
) -> dict[str, Any]:
    return {
        "id": event_id,
        "task_id": task_id,
        "revision": revision,
        "kind": kind,
        "from_state": from_state.value,
        "to_state": to_state.value,
        "detail": detail,
        "created_at": now,
    }


async def insert_events(conn: AsyncConnection, rows: list[dict[str, Any]]) -> None:
    await insert_rows(conn, task_events, rows)


async def insert_rows(conn: AsyncConnection, table: sa.Table, rows: list[dict[str, Any]]) -> None:
    """One multi-row INSERT (plain SQL on MySQL/MariaDB; rows with the same keys)."""
    if not rows:
        return
    if conn.dialect.name in ("mysql", "mariadb"):
        await driver.insert(conn, table.name, rows)
    else:
        await conn.execute(table.insert(), rows)


def heartbeat_rows(attempt_ids: Sequence[str]) -> sa.Select[Any]:
    return (
        sa.select(
            a.id, a.state, a.lease_token_sha256, a.namespace_id, a.queue_id,
            a.lease_expires_at, a.attempt_deadline_at, t.cancel_requested_at,
        )  # fmt: skip
        .select_from(_JOIN)
        .where(a.id.in_(attempt_ids))
    )


def shorten_leases(connection_id: str, cut: datetime) -> sa.Update:
    """Leases of a closed connection end at `cut` unless they end earlier anyway."""
    return (
        task_attempts.update()
        .where(a.connection_id == connection_id, a.state.in_(LIVE), a.lease_expires_at > cut)
        .values(lease_expires_at=cut)
    )
