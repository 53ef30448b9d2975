"""Task control's transactions over the D's state database (migration 0002).

Each public method of :class:`SqliteControlStore` is one transaction on the D's single
state database (``synchronous=FULL``), so "persist the barrier first" is a real, durable
commit before any consumer, cell or broker effect (D-CTL-2, D-CTL-4, D-MQ-4). The SQL is
:mod:`agentcall.dispatcher.store.control`.
"""

from __future__ import annotations

import sqlite3
from datetime import datetime

from agentcall.dispatcher.control.ports import Choose
from agentcall.dispatcher.domain.control import (
    ControlCommand,
    ControlJob,
    JobPhase,
    close,
    hangs_up,
    move_barrier,
    move_phase,
)
from agentcall.dispatcher.domain.states import Barrier
from agentcall.dispatcher.store import control as sql
from agentcall.dispatcher.store import outbox, rejected
from agentcall.dispatcher.store.db import Database


def set_barrier(conn: sqlite3.Connection, task_id: str, target: Barrier, now: datetime) -> None:
    """Persist a barrier move after checking it is legal (illegal moves raise)."""
    current = sql.facts(conn, task_id).barrier
    if move_barrier(current, target) is current:
        return
    sql.write_barrier(conn, task_id, target, now)


def receive(
    conn: sqlite3.Connection, command: ControlCommand, event_id: str, now: datetime
) -> ControlJob:
    """Record a processing; pause/stop close admission in the same commit (D-CTL-2/4)."""
    if command.action.closes_first:
        set_barrier(conn, command.task_id, close(sql.facts(conn, command.task_id).barrier), now)
    return sql.get_job(conn, sql.insert_job(conn, command, event_id, now))


def decide(conn: sqlite3.Connection, seq: int, choose: Choose, now: datetime) -> ControlJob:
    """Decide on the barrier as persisted now; barrier, facts and verdict in one commit."""
    job = sql.get_job(conn, seq)
    move_phase(job.phase, JobPhase.DECIDED)
    known = sql.facts(conn, job.task_id)
    verdict = choose(known)
    decision = verdict.decision
    if verdict.verified is not None:
        sql.record_verified(conn, verdict.verified, known.tenant is None, now)
    if known.tenant is not None or verdict.verified is not None:
        set_barrier(conn, job.task_id, decision.barrier, now)
    hang_up = hangs_up(job.command.action, job.command.active_call_policy, decision)
    sql.mark_decided(conn, seq, decision, hang_up, now)
    return sql.get_job(conn, seq)


def complete(
    conn: sqlite3.Connection,
    seq: int,
    routing_key: str,
    body: dict[str, object],
    now: datetime,
) -> None:
    job = sql.get_job(conn, seq)
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
    sql.mark_done(conn, seq, now)


class SqliteControlStore:
    """:class:`~agentcall.dispatcher.control.ports.ControlStore` over the D's state database."""

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
        return await self._db.read(sql.get_job, seq)

    async def open_jobs(self) -> list[ControlJob]:
        return await self._db.read(sql.open_jobs)

    async def barrier(self, task_id: str) -> Barrier | None:
        known = await self._db.read(sql.facts, task_id)
        return known.barrier if known.tenant is not None else None

    async def barriers(self) -> dict[str, Barrier]:
        return await self._db.read(sql.barriers)

    async def drain_pending(self, task_id: str) -> bool:
        return await self._db.read(sql.drain_pending, task_id)

    async def start_drain(self, task_id: str, now: datetime) -> None:
        await self._db.write(sql.start_drain, task_id, now)

    async def note_drain(self, task_id: str, acked: int, now: datetime) -> None:
        await self._db.write(sql.note_drain, task_id, acked, now)

    async def finish_drain(self, task_id: str, now: datetime) -> None:
        await self._db.write(sql.finish_drain, task_id, now)

    async def reject_input(
        self, source: str, reason: str, detail: str, raw: bytes, now: datetime
    ) -> None:
        await self._db.write(
            rejected.record, source=source, reason=reason, detail=detail, raw=raw, now=now
        )
