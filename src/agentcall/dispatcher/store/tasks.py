"""Tasks, barriers and the discovery cursor (D-DISC-5, D-DISC-7, D-DISC-8)."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from agentcall.dispatcher.domain.discovery import DiscoveredTask
from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.domain.states import Barrier, TaskStatus
from agentcall.dispatcher.store.codec import iso


def _local(row: sqlite3.Row | tuple[str, str, str, str, int, str, int]) -> LocalTask:
    task_id, tenant_id, tenant_key, status, revision, barrier, seen = row
    return LocalTask(
        task_id, tenant_id, tenant_key, TaskStatus(status), revision, Barrier(barrier), seen
    )


# seen: the highest task revision of discovery, a control's GET or admission's GET (D-NOTE-1)
_COLUMNS = (
    "task_id, tenant_id, tenant_key, status, task_revision, barrier,"
    " MAX(task_revision, control_revision, seen_revision)"
)


def load_tasks(conn: sqlite3.Connection) -> dict[str, LocalTask]:
    rows = conn.execute(f"SELECT {_COLUMNS} FROM tasks").fetchall()
    return {row[0]: _local(row) for row in rows}


def get_task(conn: sqlite3.Connection, task_id: str) -> LocalTask | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    return _local(row) if row else None


def get_cursor(conn: sqlite3.Connection) -> int:
    return int(conn.execute("SELECT cursor FROM discovery WHERE id = 1").fetchone()[0])


def advance_cursor(conn: sqlite3.Connection, cursor: int, at: str) -> None:
    conn.execute(
        "UPDATE discovery SET cursor = ?, pages_applied = pages_applied + 1, updated_at = ?"
        " WHERE id = 1",
        (str(cursor), at),
    )


def upsert(
    conn: sqlite3.Connection,
    task: DiscoveredTask,
    status: TaskStatus,
    barrier: Barrier,
    changed: str | None,
    at: str,
) -> None:
    """Insert or update a discovered task row; ``changed``: the barrier moved at that time."""
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


def seen_revision(conn: sqlite3.Connection, task_id: str) -> int:
    """The highest revision of the task this D has seen (0: unknown task, D-NOTE-1)."""
    row = conn.execute(
        "SELECT MAX(task_revision, control_revision, seen_revision) FROM tasks WHERE task_id = ?",
        (task_id,),
    ).fetchone()
    return int(row[0]) if row else 0


def note_seen(conn: sqlite3.Connection, revisions: dict[str, int]) -> None:
    """Revisions only move forward: keep the highest a task GET answered (D-NOTE-1)."""
    conn.executemany(
        "UPDATE tasks SET seen_revision = ? WHERE task_id = ? AND seen_revision < ?",
        [(revision, task_id, revision) for task_id, revision in revisions.items()],
    )


def control_revision(conn: sqlite3.Connection, task_id: str) -> int:
    """Task revision last verified by a control's fresh task GET (0 = none)."""
    row = conn.execute(
        "SELECT control_revision FROM tasks WHERE task_id = ?", (task_id,)
    ).fetchone()
    return int(row[0]) if row else 0


def set_barrier(conn: sqlite3.Connection, task_id: str, barrier: Barrier, now: datetime) -> None:
    """Persist a barrier chosen by the control state machine (no legality check)."""
    conn.execute(
        "UPDATE tasks SET barrier = ?, barrier_changed_at = ?, updated_at = ? WHERE task_id = ?",
        (barrier.value, iso(now), iso(now), task_id),
    )
