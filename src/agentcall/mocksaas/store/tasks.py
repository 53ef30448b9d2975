"""Tasks and the per-dispatcher discovery event log (v0.3)."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from typing import Any

from agentcall.mocksaas.domain.discovery import TaskRecord
from agentcall.mocksaas.domain.task_config import TaskIdentity, TaskSpec
from agentcall.mocksaas.domain.tasks import QueueState, TaskStatus
from agentcall.mocksaas.store import dispatchers


@dataclass(frozen=True)
class TaskRow:
    dispatcher_id: str
    task_id: str
    tenant_id: str
    tenant_key: str
    status: TaskStatus
    task_revision: int
    spec: TaskSpec
    queue_state: QueueState
    last_event_id: int
    removed_event_id: int | None
    retired_at: str | None
    updated_at: str

    @property
    def identity(self) -> TaskIdentity:
        return TaskIdentity(self.dispatcher_id, self.task_id, self.tenant_id, self.tenant_key)

    def public(self) -> dict[str, Any]:
        return {
            "dispatcher_id": self.dispatcher_id,
            "task_id": self.task_id,
            "tenant_id": self.tenant_id,
            "tenant_key": self.tenant_key,
            "status": self.status.value,
            "task_revision": self.task_revision,
            "queue_state": self.queue_state.value,
            "last_event_id": self.last_event_id,
            "removed_event_id": self.removed_event_id,
            "retired_at": self.retired_at,
            "updated_at": self.updated_at,
            "spec": self.spec.to_json(),
        }


def _row(row: sqlite3.Row) -> TaskRow:
    return TaskRow(
        row["dispatcher_id"],
        row["task_id"],
        row["tenant_id"],
        row["tenant_key"],
        TaskStatus(row["status"]),
        row["task_revision"],
        TaskSpec.from_json(json.loads(row["spec"])),
        QueueState(row["queue_state"]),
        row["last_event_id"],
        row["removed_event_id"],
        row["retired_at"],
        row["updated_at"],
    )


def find(conn: sqlite3.Connection, task_id: str) -> TaskRow | None:
    row = conn.execute("SELECT * FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    return _row(row) if row else None


def list_for(conn: sqlite3.Connection, dispatcher_id: str) -> list[TaskRow]:
    rows = conn.execute(
        "SELECT * FROM tasks WHERE dispatcher_id = ? ORDER BY last_event_id", (dispatcher_id,)
    )
    return [_row(r) for r in rows]


def active_queue_count(conn: sqlite3.Connection, dispatcher_id: str) -> int:
    return int(
        conn.execute(
            "SELECT COUNT(*) FROM tasks WHERE dispatcher_id = ? AND queue_state = ?",
            (dispatcher_id, QueueState.ACTIVE.value),
        ).fetchone()[0]
    )


def append_event(conn: sqlite3.Connection, task: TaskRow, at: str) -> TaskRow:
    """Write ``task`` as its new latest state with the next event id (same transaction)."""
    event_id = dispatchers.next_event_id(conn, task.dispatcher_id)
    conn.execute(
        "INSERT INTO events (dispatcher_id, event_id, task_id, tenant_id, tenant_key, status,"
        " task_revision, at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            task.dispatcher_id,
            event_id,
            task.task_id,
            task.tenant_id,
            task.tenant_key,
            task.status.value,
            task.task_revision,
            at,
        ),
    )
    conn.execute(
        "INSERT INTO tasks (task_id, dispatcher_id, tenant_id, tenant_key, status, task_revision,"
        " spec, queue_state, last_event_id, removed_event_id, retired_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
        " ON CONFLICT (task_id) DO UPDATE SET status = excluded.status,"
        " task_revision = excluded.task_revision, spec = excluded.spec,"
        " queue_state = excluded.queue_state, last_event_id = excluded.last_event_id,"
        " removed_event_id = excluded.removed_event_id, retired_at = excluded.retired_at,"
        " updated_at = excluded.updated_at",
        (
            task.task_id,
            task.dispatcher_id,
            task.tenant_id,
            task.tenant_key,
            task.status.value,
            task.task_revision,
            json.dumps(task.spec.to_json()),
            task.queue_state.value,
            event_id,
            event_id if task.status is TaskStatus.REMOVED else task.removed_event_id,
            task.retired_at,
            at,
        ),
    )
    found = find(conn, task.task_id)
    assert found is not None
    return found


def page(conn: sqlite3.Connection, dispatcher_id: str, after: int, limit: int) -> list[TaskRecord]:
    """Latest record of each task whose latest event is after ``after``, ascending."""
    rows = conn.execute(
        "SELECT last_event_id, task_id, tenant_id, tenant_key, status, task_revision FROM tasks"
        " WHERE dispatcher_id = ? AND last_event_id > ? ORDER BY last_event_id LIMIT ?",
        (dispatcher_id, after, limit),
    )
    return [TaskRecord(*tuple(r)) for r in rows]


def latest_record(conn: sqlite3.Connection, dispatcher_id: str) -> TaskRecord | None:
    row = conn.execute(
        "SELECT last_event_id, task_id, tenant_id, tenant_key, status, task_revision FROM tasks"
        " WHERE dispatcher_id = ? ORDER BY last_event_id DESC LIMIT 1",
        (dispatcher_id,),
    ).fetchone()
    return TaskRecord(*tuple(row)) if row else None


def event_log(conn: sqlite3.Connection, dispatcher_id: str, after: int = 0) -> list[TaskRecord]:
    rows = conn.execute(
        "SELECT event_id, task_id, tenant_id, tenant_key, status, task_revision FROM events"
        " WHERE dispatcher_id = ? AND event_id > ? ORDER BY event_id",
        (dispatcher_id, after),
    )
    return [TaskRecord(*tuple(r)) for r in rows]


def first_record(conn: sqlite3.Connection, dispatcher_id: str, task_id: str) -> tuple[str, int]:
    """(status, revision) of the task's first event: what a lagging replica still serves."""
    row = conn.execute(
        "SELECT status, task_revision FROM events WHERE dispatcher_id = ? AND task_id = ?"
        " ORDER BY event_id LIMIT 1",
        (dispatcher_id, task_id),
    ).fetchone()
    return str(row[0]), int(row[1])


def tenant_key_of(conn: sqlite3.Connection, dispatcher_id: str, tenant_id: str) -> str | None:
    row = conn.execute(
        "SELECT tenant_key FROM tasks WHERE dispatcher_id = ? AND tenant_id = ?"
        " ORDER BY last_event_id DESC LIMIT 1",
        (dispatcher_id, tenant_id),
    ).fetchone()
    return str(row[0]) if row else None


def retirable(conn: sqlite3.Connection) -> list[tuple[str, str]]:
    """Stopped tasks with an active queue and a valid ``stopped/applied`` receipt."""
    rows = conn.execute(
        "SELECT DISTINCT t.dispatcher_id, t.task_id FROM tasks t JOIN results r"
        " ON r.dispatcher_id = t.dispatcher_id AND r.task_id = t.task_id"
        " WHERE t.status = 'stopped' AND t.queue_state = 'active' AND r.valid = 1"
        " AND r.event_type = 'command.result' AND r.command_type = 'task.control'"
        " AND r.action = 'stop' AND r.status = 'applied' AND r.task_state = 'stopped'"
    )
    return [(str(r[0]), str(r[1])) for r in rows]
