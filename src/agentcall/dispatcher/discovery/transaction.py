"""Discovery's transaction: a validated page and its cursor persisted together (D-DISC-5).

Each row's barrier follows :func:`~agentcall.dispatcher.domain.states.barrier_after_discovery`; a
row not newer than what a control verified keeps the verified status (D-DISC-7). The SQL
is :mod:`agentcall.dispatcher.store.tasks`.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from agentcall.dispatcher.domain.discovery import DiscoveredTask
from agentcall.dispatcher.domain.model import LocalTask
from agentcall.dispatcher.domain.states import Barrier, TaskStatus, barrier_after_discovery
from agentcall.dispatcher.store import tasks as sql
from agentcall.dispatcher.store.codec import iso


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
    stored = sql.get_cursor(conn)
    if stored != after:
        raise RuntimeError(f"discovery cursor moved from {after} to {stored} during a page")
    at = iso(now)
    for task in tasks:
        _upsert(conn, task, at)
    sql.advance_cursor(conn, cursor, at)
    return sql.load_tasks(conn)


def _upsert(conn: sqlite3.Connection, task: DiscoveredTask, at: str) -> None:
    before = sql.get_task(conn, task.task_id)
    newer = task.task_revision > sql.control_revision(conn, task.task_id)
    barrier = barrier_after_discovery(
        before.barrier if before else Barrier.NONE, task.status, newer=newer
    )
    previous = before.barrier if before else Barrier.NONE
    changed = at if previous is not barrier else None
    # A row not newer than what a control verified keeps the verified status (D-DISC-7).
    keep = before is not None and not newer and task.status is not TaskStatus.REMOVED
    status = before.status if keep and before else task.status
    sql.upsert(conn, task, status, barrier, changed, at)
