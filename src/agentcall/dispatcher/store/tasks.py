"""Tasks, barriers and the discovery cursor (D-DISC-5, D-DISC-7, D-DISC-8)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from agentcall.dispatcher.domain.discovery import DiscoveredTask
from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.domain.states import Barrier, TaskStatus, barrier_after_discovery
from agentcall.dispatcher.store.codec import iso


def _local(row: sqlite3.Row | tuple[str, str, str, str, int, str]) -> LocalTask:
    task_id, tenant_id, tenant_key, status, revision, barrier = row
    return LocalTask(task_id, tenant_id, tenant_key, TaskStatus(status), revision, Barrier(barrier))


_COLUMNS = "task_id, tenant_id, tenant_key, status, task_revision, barrier"


def load_tasks(conn: sqlite3.Connection) -> dict[str, LocalTask]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM tasks").fetchall()
    return {row[0]: _local(row) for row in rows}


def get_task(conn: sqlite3.Connection, task_id: str) -> LocalTask | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    return _local(row) if row else None


def get_cursor(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT cursor FROM discovery WHERE id = 1").fetchone()[0])


def apply_page(
    conn: sqlite3.Connection,
    tasks: tuple[DiscoveredTask, ...],
    after: int,
    cursor: int,
    now: datetime,
) -> dict[str, LocalTask]:
    """Persist a validated page and its cursor; call inside one transaction (D-DISC-5).

    Refuses (raises) if the stored cursor moved since the page was requested.
    Returns the tasks as now stored.
    """
    stored = get_cursor(conn)
    if stored != after:
        raise RuntimeError(f"discovery cursor moved from {after} to {stored} during a page")
    at = iso(now)
    for task in tasks:
        _upsert(conn, task, at)
    conn.execute(
        "UPDATE discovery SET cursor = ?, pages_applied = pages_applied + 1, updated_at = ?"
        " WHERE id = 1",
        (str(cursor), at),
    )
    return load_tasks(conn)


def _upsert(conn: sqlite3.Connection, task: DiscoveredTask, at: str) -> None:
    before = get_task(conn, task.task_id)
    newer = task.task_revision > control_revision(conn, task.task_id)
    barrier = barrier_after_discovery(
        before.barrier if before else Barrier.NONE, task.status, newer=newer
    )
    previous = before.barrier if before else Barrier.NONE
    changed = at if previous is not barrier else None
    # A row not newer than what a control verified keeps the verified status (D-DISC-7).
    keep = before is not None and not newer and task.status is not TaskStatus.REMOVED
    status = before.status if keep and before else task.status
    conn.execute(
        "INSERT INTO tasks (task_id, tenant_id, tenant_key, status, task_revision, barrier,"
        " barrier_changed_at, discovered_at, updated_at) VALUES (?,?,?,?,?,?,?,?,?)"
        " ON CONFLICT (task_id) DO UPDATE SET status = excluded.status,"
        " task_revision = excluded.task_revision, barrier = excluded.barrier,"
        " barrier_changed_at = COALESCE(?, tasks.barrier_changed_at),"
        " updated_at = excluded.updated_at",
        (
            task.task_id,
            task.tenant_id,
            task.tenant_key,
            status.value,
            task.task_revision,
            barrier.value,
            changed,
            at,
            at,
            changed,
        ),
    )


def control_revision(conn: sqlite3.Connection, task_id: str) -> int:
    """Task revision last verified by a control's fresh task GET (0 = none)."""
    row = conn.execute(
        "SELECT control_revision FROM tasks WHERE task_id = ?", (task_id,)
    ).fetchone()
    return int(row[0]) if row else 0


def set_barrier(conn: sqlite3.Connection, task_id: str, barrier: Barrier, now: datetime) -> None:
    """Persist a barrier chosen by the control state machine (issue 9 seam)."""
    conn.execute(
        "UPDATE tasks SET barrier = ?, barrier_changed_at = ?, updated_at = ? WHERE task_id = ?",
        (barrier.value, iso(now), iso(now), task_id),
    )
