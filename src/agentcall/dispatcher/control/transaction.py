"""SQLite side of task control: control jobs, barriers, drains (migration 0002).

Each public method of :class:`SqliteControlStore` is one transaction on the D's single
state database (``synchronous=FULL``), so "persist the barrier first" is a real, durable
commit before any consumer, cell or broker effect (D-CTL-2, D-CTL-4, D-MQ-4).
"""

from __future__ import annotations

import sqlite3
from datetime import datetime
from typing import Any

from agentcall.dispatcher.control.ports import Choose, ControlJob, TaskFacts
from agentcall.dispatcher.domain.control import (
    ActiveCallPolicy,
    ConsumerAction,
    ControlAction,
    ControlCommand,
    ControlDecision,
    JobPhase,
    ReceiptState,
    ReceiptStatus,
    close,
    hangs_up,
    move_barrier,
    move_phase,
)
from agentcall.dispatcher.domain.model import TaskConfig
from agentcall.dispatcher.domain.states import Barrier
from agentcall.dispatcher.store import outbox, rejected
from agentcall.dispatcher.store.codec import from_iso, iso
from agentcall.dispatcher.store.db import Database

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
        "SELECT barrier, tenant_id, tenant_key FROM tasks WHERE task_id = ?", (task_id,)
    ).fetchone()
    if row is None:
        return TaskFacts(Barrier.NONE, None)
    return TaskFacts(Barrier(row[0]), (row[1], row[2]))


def set_barrier(conn: sqlite3.Connection, task_id: str, target: Barrier, now: datetime) -> None:
    """Persist a barrier move after checking it is legal (illegal moves raise)."""
    current = facts(conn, task_id).barrier
    if move_barrier(current, target) is current:
        return
    conn.execute(
        "UPDATE tasks SET barrier = ?, barrier_changed_at = ?, updated_at = ? WHERE task_id = ?",
        (target.value, iso(now), iso(now), task_id),
    )


def receive(
    conn: sqlite3.Connection, command: ControlCommand, event_id: str, now: datetime
) -> ControlJob:
    """Record a processing; pause/stop close admission in the same commit (D-CTL-2/4)."""
    if command.action.closes_first:
        set_barrier(conn, command.task_id, close(facts(conn, command.task_id).barrier), now)
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
    return get_job(conn, int(cursor.lastrowid or 0))


def decide(conn: sqlite3.Connection, seq: int, choose: Choose, now: datetime) -> ControlJob:
    """Decide on the barrier as persisted now; barrier, facts and verdict in one commit."""
    job = get_job(conn, seq)
    move_phase(job.phase, JobPhase.DECIDED)
    known = facts(conn, job.task_id)
    verdict = choose(known)
    decision = verdict.decision
    if verdict.verified is not None:
        _record_verified(conn, verdict.verified, known.tenant is None, now)
    if known.tenant is not None or verdict.verified is not None:
        set_barrier(conn, job.task_id, decision.barrier, now)
    hang_up = hangs_up(job.command.action, job.command.active_call_policy, decision)
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
    return get_job(conn, seq)


def _record_verified(
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


def complete(
    conn: sqlite3.Connection,
    seq: int,
    routing_key: str,
    body: dict[str, object],
    now: datetime,
) -> None:
    job = get_job(conn, seq)
    if move_phase(job.phase, JobPhase.DONE) is job.phase:
        return  # already done: the stored receipt (same event_id and body) stays
    outbox.enqueue(
        conn,
        event_id=job.event_id,
        event_type="command.result",
        routing_key=routing_key,
        body=body,
        now=now,
    )
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


class SqliteControlStore:
    """:class:`~dispatcher.control.ports.ControlStore` over the D's state database."""

    def __init__(self, db: Database, routing_key: str) -> None:
        self._db = db
        self._routing_key = routing_key

    async def receive(self, command: ControlCommand, event_id: str, now: datetime) -> ControlJob:
        return await self._db.write(receive, command, event_id, now)

    async def decide(self, job: ControlJob, choose: Choose, now: datetime) -> ControlJob:
        return await self._db.write(decide, job.seq, choose, now)

    async def complete(self, job: ControlJob, body: dict[str, object], now: datetime) -> None:
        await self._db.write(complete, job.seq, self._routing_key, body, now)

    async def job(self, seq: int) -> ControlJob:
        return await self._db.read(get_job, seq)

    async def open_jobs(self) -> list[ControlJob]:
        return await self._db.read(open_jobs)

    async def barrier(self, task_id: str) -> Barrier | None:
        known = await self._db.read(facts, task_id)
        return known.barrier if known.tenant is not None else None

    async def barriers(self) -> dict[str, Barrier]:
        return await self._db.read(barriers)

    async def drain_pending(self, task_id: str) -> bool:
        return await self._db.read(drain_pending, task_id)

    async def start_drain(self, task_id: str, now: datetime) -> None:
        await self._db.write(start_drain, task_id, now)

    async def note_drain(self, task_id: str, acked: int, now: datetime) -> None:
        await self._db.write(note_drain, task_id, acked, now)

    async def finish_drain(self, task_id: str, now: datetime) -> None:
        await self._db.write(finish_drain, task_id, now)

    async def reject_input(
        self, source: str, reason: str, detail: str, raw: bytes, now: datetime
    ) -> None:
        await self._db.write(
            rejected.record, source=source, reason=reason, detail=detail, raw=raw, now=now
        )
