"""The execution kernel's statements: the lease query, attempt rows locked with their task,
the sweeper's scans, heartbeats and the writes of one transition (named queries of
`queries.sql` and row writes, run by `agentcall.orbit.store.connector`). Decisions are not made here
(see `agentcall.orbit.domain.attempts` / `agentcall.orbit.domain.leasing`); every task update is
conditional on (id, state, revision), every attempt update on (id, state). The engine calls these
through `agentcall.orbit.store.transactions.SqlAttempts` (the typed interface of
`agentcall.orbit.store.ports`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from agentcall.orbit.domain.attempts import AttemptState, TaskFacts
from agentcall.orbit.domain.leasing import HandlerKey
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import RecoverySafety, RetryPolicy
from agentcall.orbit.domain.transitions import LiveAttempt
from agentcall.orbit.store.connector import HotConnection, execute, fetch, write_all
from agentcall.orbit.store.sql import ConcurrentChange, Insert, Update
from agentcall.orbit.store.tables import task_attempts, task_events, tasks

LIVE = [AttemptState.LEASED.value, AttemptState.RUNNING.value]
_WAITING = TaskState.WAITING.value


async def lease_candidates(
    conn: HotConnection,
    queue_id: str,
    handlers: Iterable[HandlerKey],
    now: datetime,
    limit: int,
) -> list[Any]:
    """WAITING task rows of the queue ready to lease, in lease order
    (`agentcall.orbit.domain.lease_order`), locked (SKIP LOCKED on MySQL/MariaDB)."""
    pairs = [(h.handler, h.handler_version) for h in sorted(handlers)]
    params = {
        "queue_id": queue_id,
        "waiting": _WAITING,
        "now": now,
        "handlers": pairs,
        "limit": limit,
    }
    return await fetch(conn, "lease_candidates", params)


async def clocked_lease_candidates(
    conn: HotConnection, queue_id: str, handlers: Iterable[HandlerKey], limit: int
) -> tuple[datetime | None, list[Any]]:
    """`lease_candidates` at the database clock read by the same statement: (that clock, the
    rows), or (None, []) when no row matched (nothing to lease, no clock needed)."""
    pairs = [(h.handler, h.handler_version) for h in sorted(handlers)]
    params = {"queue_id": queue_id, "waiting": _WAITING, "handlers": pairs, "limit": limit}
    rows = await fetch(conn, "clocked_lease_candidates", params)
    if not rows:
        return None, []
    now = rows[0].now_at
    assert isinstance(now, datetime)
    return now, rows


async def load_attempts(conn: HotConnection, attempt_ids: Sequence[str]) -> dict[str, LiveAttempt]:
    """Attempts with their task's facts, locked (FOR UPDATE on MySQL/MariaDB)."""
    if not attempt_ids:
        return {}
    rows = await fetch(conn, "live_attempts", {"ids": list(attempt_ids)})
    return {row.id: _live(row) for row in rows}


async def clocked_load_attempts(
    conn: HotConnection, attempt_ids: Sequence[str]
) -> tuple[datetime | None, dict[str, LiveAttempt]]:
    """`load_attempts` at the database clock read by the same statement: (that clock, the
    attempts), or (None, {}) when none of them exists."""
    if not attempt_ids:
        return None, {}
    rows = await fetch(conn, "clocked_live_attempts", {"ids": list(attempt_ids)})
    if not rows:
        return None, {}
    now = rows[0].now_at
    assert isinstance(now, datetime)
    return now, {row.id: _live(row) for row in rows}


async def expired_attempts(conn: HotConnection, now: datetime, limit: int) -> list[LiveAttempt]:
    """Live attempts whose lease ran out (the lease never outlives the attempt deadline)."""
    rows = await fetch(conn, "expired_attempts", {"live": LIVE, "now": now, "limit": limit})
    return [_live(row) for row in rows]


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
        lease_rank=row.lease_rank,
    )


async def expired_waiting(conn: HotConnection, now: datetime, limit: int) -> list[Any]:
    """WAITING tasks past their start deadline or task deadline."""
    params = {"waiting": _WAITING, "now": now, "limit": limit}
    rows = [
        *await fetch(conn, "waiting_past_deadline", params),
        *await fetch(conn, "waiting_past_start_deadline", params),
    ]
    unique = {row.id: row for row in rows}
    return list(unique.values())


async def update_task(
    conn: HotConnection, task_id: str, state: TaskState, revision: int, values: dict[str, Any]
) -> bool:
    """Move the task from (state, revision) to `values` with revision + 1."""
    row = {"id": task_id, "revision": revision + 1, **values}
    return await _update_one(
        conn, Update(tasks, [row], {"state": state.value, "revision": revision})
    )


async def update_attempt(
    conn: HotConnection, attempt_id: str, state: AttemptState, values: dict[str, Any]
) -> bool:
    row = {"id": attempt_id, **values}
    return await _update_one(conn, Update(task_attempts, [row], {"state": state.value}))


async def _update_one(conn: HotConnection, update: Update) -> bool:
    try:
        await write_all(conn, [update])
    except ConcurrentChange:
        return False
    return True


async def insert_events(conn: HotConnection, rows: list[dict[str, Any]]) -> None:
    await insert_rows(conn, task_events, rows)


async def insert_rows(conn: HotConnection, table: Any, rows: list[dict[str, Any]]) -> None:
    """One multi-row INSERT (rows with the same keys)."""
    await write_all(conn, [Insert(table, rows)])


async def heartbeat_rows(conn: HotConnection, attempt_ids: Sequence[str]) -> list[Any]:
    return await fetch(conn, "heartbeat_attempts", {"ids": list(attempt_ids)})


async def renew_leases(
    conn: HotConnection,
    ids: list[str],
    now: datetime,
    renewed: datetime,
    rebind_to: str | None = None,
) -> None:
    """Each lease to min(`renewed`, its attempt deadline); `rebind_to` also moves them to
    that connection."""
    params: dict[str, Any] = {"renewed": renewed, "now": now, "ids": ids, "live": LIVE}
    if rebind_to is None:
        await execute(conn, "renew_leases", params)
    else:
        await execute(conn, "renew_and_rebind_leases", {**params, "connection_id": rebind_to})


async def shorten_leases(conn: HotConnection, connection_id: str, cut: datetime) -> None:
    """Leases of a closed connection end at `cut` unless they end earlier anyway."""
    await execute(
        conn, "shorten_leases", {"cut": cut, "connection_id": connection_id, "live": LIVE}
    )
