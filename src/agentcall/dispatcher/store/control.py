"""SQL of task control: control jobs, barriers as control moves them, drains (migration 0002).

Plain statements on the caller's connection; :mod:`agentcall.dispatcher.control.transaction`
composes them into one transaction per step.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from agentcall.dispatcher.domain.control import (
    ActiveCallPolicy,
    ConsumerAction,
    ControlAction,
    ControlCommand,
    ControlDecision,
    ControlJob,
    JobPhase,
    ReceiptState,
    ReceiptStatus,
    TaskFacts,
)
from agentcall.dispatcher.domain.model import TaskConfig
from agentcall.dispatcher.domain.states import Barrier
from agentcall.dispatcher.store.codec import from_iso, iso

_JOB_COLUMNS = (
    "seq, event_id, task_id, action, active_call_policy, dispatcher_id, tenant_id,"
    " tenant_key, trace_id, issued_at, not_after, reason, phase, status, barrier, reason_code,"
    " task_state, consumer_action"
)


def _job(row: Any) -> ControlJob:
    (
        seq,
        event_id,
        task_id,
        action,
        policy,
        dispatcher_id,
        tenant_id,
        tenant_key,
        trace_id,
        issued_at,
        not_after,
        reason,
        phase,
        status,
        barrier,
        reason_code,
        task_state,
        consumer,
    ) = row
    command = ControlCommand(
        dispatcher_id=str(dispatcher_id),
        tenant_id=str(tenant_id),
        tenant_key=str(tenant_key),
        trace_id=str(trace_id),
        issued_at=from_iso(str(issued_at)),
        not_after=from_iso(str(not_after)),
        task_id=str(task_id),
        action=ControlAction(action),
        active_call_policy=ActiveCallPolicy(policy) if policy else None,
        reason=str(reason),
    )
    decision = None
    if status is not None:
        decision = ControlDecision(
            barrier=Barrier(barrier),
            status=ReceiptStatus(status),
            reason_code=str(reason_code),
            task_state=ReceiptState(task_state),
            consumer=ConsumerAction(consumer),
        )
    return ControlJob(int(seq), str(event_id), command, JobPhase(phase), decision)


def get_job(conn: sqlite3.Connection, seq: int) -> ControlJob:
    row = conn.execute(f"SELECT {_JOB_COLUMNS} FROM control_jobs WHERE seq = ?", (seq,)).fetchone()
    if row is None:
        raise LookupError(f"no control job {seq}")
    return _job(row)


def open_jobs(conn: sqlite3.Connection) -> list[ControlJob]:
    rows = conn.execute(
        f"SELECT {_JOB_COLUMNS} FROM control_jobs WHERE phase != 'done' ORDER BY seq"
    ).fetchall()
    return [_job(row) for row in rows]


def facts(conn: sqlite3.Connection, task_id: str) -> TaskFacts:
    row = conn.execute(
        "SELECT barrier, tenant_id, tenant_key,"
        " MAX(task_revision, control_revision, seen_revision) FROM tasks WHERE task_id = ?",
        (task_id,),
    ).fetchone()
    if row is None:
        return TaskFacts(Barrier.NONE, None)
    return TaskFacts(Barrier(row[0]), (row[1], row[2]), int(row[3]))


def write_barrier(conn: sqlite3.Connection, task_id: str, target: Barrier, now: datetime) -> None:
    conn.execute(
        "UPDATE tasks SET barrier = ?, barrier_changed_at = ?, updated_at = ? WHERE task_id = ?",
        (target.value, iso(now), iso(now), task_id),
    )


def insert_job(
    conn: sqlite3.Connection, command: ControlCommand, event_id: str, now: datetime
) -> int:
    """A received control job; returns its seq (the order of deliveries)."""
    cursor = conn.execute(
        "INSERT INTO control_jobs (event_id, task_id, action, active_call_policy, dispatcher_id,"
        " tenant_id, tenant_key, trace_id, issued_at, not_after, reason, phase, received_at)"
        " VALUES (?,?,?,?,?,?,?,?,?,?,?,'received',?)",
        (
            event_id,
            command.task_id,
            command.action.value,
            command.active_call_policy.value if command.active_call_policy else None,
            command.dispatcher_id,
            command.tenant_id,
            command.tenant_key,
            command.trace_id,
            iso(command.issued_at),
            iso(command.not_after),
            command.reason,
            iso(now),
        ),
    )
    return int(cursor.lastrowid or 0)


def mark_decided(
    conn: sqlite3.Connection, seq: int, decision: ControlDecision, hang_up: bool, now: datetime
) -> None:
    conn.execute(
        "UPDATE control_jobs SET phase = 'decided', status = ?, barrier = ?, reason_code = ?,"
        " task_state = ?, consumer_action = ?, hang_up = ?, decided_at = ? WHERE seq = ?",
        (
            decision.status.value,
            decision.barrier.value,
            decision.reason_code,
            decision.task_state.value,
            decision.consumer.value,
            int(hang_up),
            iso(now),
            seq,
        ),
    )


def record_verified(
    conn: sqlite3.Connection, config: TaskConfig, unknown: bool, now: datetime
) -> None:
    """A fresh, ownership-checked task GET is the newest authoritative fact (D-DISC-7)."""
    if unknown:
        conn.execute(
            "INSERT INTO tasks (task_id, tenant_id, tenant_key, status, task_revision, barrier,"
            " discovered_at, updated_at) VALUES (?,?,?,?,0,'none',?,?)",
            (
                config.task_id,
                config.tenant_id,
                config.tenant_key,
                config.status.value,
                iso(now),
                iso(now),
            ),
        )
    conn.execute(
        "UPDATE tasks SET status = ?, control_revision = ?, updated_at = ?"
        " WHERE task_id = ? AND control_revision < ? AND task_revision <= ?",
        (
            config.status.value,
            config.task_revision,
            iso(now),
            config.task_id,
            config.task_revision,
            config.task_revision,
        ),
    )


def mark_done(conn: sqlite3.Connection, seq: int, now: datetime) -> None:
    conn.execute(
        "UPDATE control_jobs SET phase = 'done', done_at = ? WHERE seq = ?", (iso(now), seq)
    )


def barriers(conn: sqlite3.Connection) -> dict[str, Barrier]:
    return {t: Barrier(b) for t, b in conn.execute("SELECT task_id, barrier FROM tasks")}


def drain_pending(conn: sqlite3.Connection, task_id: str) -> bool:
    row = conn.execute("SELECT state FROM task_drains WHERE task_id = ?", (task_id,)).fetchone()
    return row is None or row[0] != "drained"


def start_drain(conn: sqlite3.Connection, task_id: str, now: datetime) -> None:
    conn.execute(
        "INSERT INTO task_drains (task_id, state, started_at, updated_at)"
        " VALUES (?, 'draining', ?, ?) ON CONFLICT (task_id) DO UPDATE SET"
        " state = 'draining', updated_at = excluded.updated_at",
        (task_id, iso(now), iso(now)),
    )


def note_drain(conn: sqlite3.Connection, task_id: str, acked: int, now: datetime) -> None:
    conn.execute(
        "UPDATE task_drains SET acked = ?, updated_at = ? WHERE task_id = ?",
        (acked, iso(now), task_id),
    )


def finish_drain(conn: sqlite3.Connection, task_id: str, now: datetime) -> None:
    conn.execute(
        "UPDATE task_drains SET state = 'drained', completed_at = ?, updated_at = ?"
        " WHERE task_id = ?",
        (iso(now), iso(now), task_id),
    )
