"""The execution kernel: each public method is one step inside the caller's transaction
(`conn`, database time `now`), run by the batcher. Fencing first, decisions from the pure
domain, then the writes; a ProtocolError is answered as an error ack and never leaves partial
writes (all checks precede all writes)."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from orbit.domain.attempts import (
    AttemptEnd,
    AttemptState,
    Backoff,
    EndCause,
    decide_end,
    no_backoff,
    refused_start,
)
from orbit.domain.canonical import canonical_text
from orbit.domain.ids import new_id
from orbit.domain.jsonvalue import JsonValue
from orbit.domain.leasing import (
    HandlerKey,
    extend_lease,
    plan_lease,
    start_refusal,
)
from orbit.domain.states import TaskState
from orbit.domain.times import format_time
from orbit.store.db import Dialect
from orbit.store.tables import tasks
from orbit.store.tasks import row_task
from orbit.workers import store
from orbit.workers.acks import Ack, Grant, Peer
from orbit.workers.errors import AttemptNotFound, InvalidMessage, LeaseLost, ResultConflict
from orbit.workers.evidence_store import check_evidence, insert_evidence
from orbit.workers.messages import AttemptRef, Release, Result, ResultOutcome
from orbit.workers.tables import task_attempts
from orbit.workers.transitions import EndFacts, started_values, write_end

_CAUSE = {
    ResultOutcome.SUCCEEDED: EndCause.SUCCEEDED,
    ResultOutcome.FAILED: EndCause.FAILED,
    ResultOutcome.NEEDS_REVIEW: EndCause.NEEDS_REVIEW,
}


@dataclass(frozen=True, slots=True)
class KernelSettings:
    lease_ttl_ms: int = 15_000
    reconnect_grace_ms: int = 5_000
    backoff: Backoff = no_backoff


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


Step = Callable[[AsyncConnection, datetime], Awaitable[Ack]]


class Kernel:
    def __init__(self, dialect: Dialect, settings: KernelSettings) -> None:
        self.dialect = dialect
        self.settings = settings

    # ------------------------------------------------------------------ leasing
    async def lease(
        self,
        conn: AsyncConnection,
        now: datetime,
        peer: Peer,
        handlers: Iterable[HandlerKey],
        queue_id: str,
        limit: int,
    ) -> list[Grant]:
        query = store.leasable(self.dialect, queue_id, handlers, now, limit)
        rows = (await conn.execute(query)).all()
        grants, task_rows, attempt_rows, events = [], [], [], []
        for row in rows:
            task = row_task(row)
            times = plan_lease(now, task.retry.attempt_timeout_ms, task.deadline_at,
                               self.settings.lease_ttl_ms)  # fmt: skip
            grant = Grant(task, new_id(), row.lease_count + 1, new_id(), times.leased_at,
                          times.lease_expires_at, times.attempt_deadline_at)  # fmt: skip
            grants.append(grant)
            task_rows.append({"b_id": task.id, "b_rev": task.revision, "b_new": task.revision + 1,
                              "b_count": grant.number, "b_attempt": grant.attempt_id})  # fmt: skip
            attempt_rows.append(_attempt_row(grant, peer, now))
            detail = f'{{"attempt_id":"{grant.attempt_id}"}}'
            events.append(store.event_row(task.id, task.revision + 1, "LEASED", TaskState.WAITING,
                                          TaskState.LEASED, detail, now, new_id()))  # fmt: skip
        if grants:
            await conn.execute(_LEASE_UPDATE.values(updated_at=now), task_rows)
            await conn.execute(task_attempts.insert(), attempt_rows)
            await store.insert_events(conn, events)
        return grants

    # ------------------------------------------------------------------ worker messages
    async def start(self, conn: AsyncConnection, now: datetime, peer: Peer, ref: AttemptRef) -> Ack:
        live = await self._fenced(conn, peer, ref)
        if live.state is AttemptState.RUNNING:
            return Ack(True, {"attempt_id": live.id, "duplicate": True,
                              "lease_expires_at": format_time(live.lease_expires_at)})  # fmt: skip
        if live.state is not AttemptState.LEASED:
            raise LeaseLost(f"attempt {live.id} already ended: {live.state} ({live.end_reason})")
        facts = live.facts
        refusal = start_refusal(now, facts.start_deadline_at, facts.deadline_at)
        if refusal is not None:
            await write_end(conn, now, live, refused_start(refusal), EndFacts())
            message = f"{refusal.value}: the task failed without running"
            return Ack(False, code=refusal.value, message=message, ended=live.id)
        expires = extend_lease(now, self.settings.lease_ttl_ms, live.attempt_deadline_at)
        if not await store.update_attempt(conn, live.id, live.state, started_values(now, expires)):
            raise LeaseLost(f"attempt {live.id} changed concurrently")
        revision = live.task_revision + 1
        values = {"state": TaskState.RUNNING.value, "updated_at": now,
                  "attempt_count": facts.attempt_count + 1}  # fmt: skip
        await store.update_task(conn, live.task_id, live.task_state, live.task_revision, values)
        detail = f'{{"attempt_id":"{live.id}"}}'
        await store.insert_events(conn, [store.event_row(
            live.task_id, revision, "STARTED", live.task_state, TaskState.RUNNING, detail, now,
            new_id())])  # fmt: skip
        return Ack(True, {"attempt_id": live.id, "task_state": "RUNNING",
                          "task_revision": str(revision), "duplicate": False,
                          "lease_expires_at": format_time(expires)})  # fmt: skip

    async def finish(self, conn: AsyncConnection, now: datetime, peer: Peer, msg: Result) -> Ack:
        live = await self._fenced(conn, peer, msg.ref)
        digest = _result_digest(msg)
        if not live.state.live:
            return _ended_again(live, digest, "RESULT")
        if live.state is AttemptState.LEASED:
            raise InvalidMessage("result before the started ack: send started first")
        await check_evidence(conn, live, msg.evidence)
        retryable = bool(msg.error and msg.error.retryable)
        end = AttemptEnd(_CAUSE[msg.outcome], started=True, retryable=retryable)
        outcome = decide_end(live.facts, end, now, self.settings.backoff)
        facts = EndFacts(msg.error, msg.result_text, digest)
        revision = await write_end(conn, now, live, outcome, facts)
        await insert_evidence(conn, live, msg.evidence, now)
        return _ended_ack(live, outcome.task_state, revision)

    async def release(self, conn: AsyncConnection, now: datetime, peer: Peer, msg: Release) -> Ack:
        live = await self._fenced(conn, peer, msg.ref)
        cause = (EndCause.RELEASED_SHUTDOWN if msg.reason.value == "shutdown"
                 else EndCause.RELEASED_UNSUPPORTED)  # fmt: skip
        if not live.state.live:
            return _ended_again(live, cause.value, cause.value)
        end = AttemptEnd(cause, started=live.state is AttemptState.RUNNING)
        outcome = decide_end(live.facts, end, now, self.settings.backoff)
        revision = await write_end(conn, now, live, outcome, EndFacts(end_digest=cause.value))
        return _ended_ack(live, outcome.task_state, revision)

    async def evidence(
        self, conn: AsyncConnection, now: datetime, peer: Peer, ref: AttemptRef, items: Any
    ) -> Ack:
        live = await self._fenced(conn, peer, ref)
        if not live.state.live:
            raise LeaseLost(f"attempt {live.id} already ended: {live.state}")
        if live.state is AttemptState.LEASED:
            raise InvalidMessage("evidence before the started ack: send started first")
        fresh = await check_evidence(conn, live, items)
        await insert_evidence(conn, live, fresh, now)
        return Ack(True, {"attempt_id": live.id, "recorded": len(fresh)})

    async def _fenced(
        self, conn: AsyncConnection, peer: Peer, ref: AttemptRef
    ) -> store.LiveAttempt:
        found = await store.load_attempts(conn, self.dialect, [ref.attempt_id])
        live = found.get(ref.attempt_id)
        visible = live is not None and live.namespace_id == peer.namespace_id
        if live is None or not visible or live.queue_id not in peer.queues:
            raise AttemptNotFound(f"attempt {ref.attempt_id} is not on this connection's queues")
        if sha256(ref.lease_token) != live.token_sha256:
            raise LeaseLost(f"the lease token of attempt {live.id} is not current")
        return live


def _ended_again(live: store.LiveAttempt, digest: str, reason_kind: str) -> Ack:
    """A resend for an attempt already ended by the same message is acknowledged again."""
    same = live.end_digest == digest
    if same:
        fields: dict[str, JsonValue] = {"attempt_id": live.id, "duplicate": True}
        if live.task_state is not None:
            fields["task_state"] = live.task_state.value
        return Ack(True, fields, ended=live.id)
    if live.end_reason == reason_kind and reason_kind == "RESULT":
        return Ack.refused(ResultConflict(f"attempt {live.id} already ended otherwise"), live.id)
    return Ack.refused(LeaseLost(f"attempt {live.id} already ended: {live.state}"), live.id)


def _ended_ack(live: store.LiveAttempt, state: TaskState, revision: int) -> Ack:
    fields: dict[str, JsonValue] = {"attempt_id": live.id, "task_state": state.value,
                                    "task_revision": str(revision), "duplicate": False}  # fmt: skip
    wake = live.queue_id if state is TaskState.WAITING else None
    return Ack(True, fields, ended=live.id, wake=wake)


def _result_digest(msg: Result) -> str:
    """Equal for a resend of the same result message (the compact result text is canonical
    for one message: the worker resends it byte for byte)."""
    error = msg.error
    document: dict[str, JsonValue] = {
        "outcome": msg.outcome.value,
        "result": msg.result_text,
        "error": None if error is None else
        {"code": error.code, "message": error.message, "retryable": error.retryable},
    }  # fmt: skip
    return hashlib.sha256(canonical_text(document).encode("utf-8")).hexdigest()


def _attempt_row(grant: Grant, peer: Peer, now: datetime) -> dict[str, Any]:
    worker = peer.worker
    return {
        "id": grant.attempt_id, "task_id": grant.task.id, "namespace_id": grant.task.namespace_id,
        "queue_id": grant.task.queue_id, "number": grant.number,
        "state": AttemptState.LEASED.value, "lease_token_sha256": sha256(grant.lease_token),
        "token_id": peer.token_id, "connection_id": peer.connection_id,
        "worker_name": worker.name, "worker_instance_id": worker.instance_id,
        "worker_sdk": worker.sdk, "worker_host": worker.host, "worker_pid": worker.pid,
        "leased_at": now, "lease_expires_at": grant.lease_expires_at,
        "attempt_deadline_at": grant.attempt_deadline_at, "evidence_count": 0,
    }  # fmt: skip


_t, _a = store.t, store.a
_LEASE_UPDATE = (
    tasks.update()
    .where(_t.id == sa.bindparam("b_id"), _t.state == TaskState.WAITING.value,
           _t.revision == sa.bindparam("b_rev"))  # fmt: skip
    .values(state=TaskState.LEASED.value, revision=sa.bindparam("b_new"),
            lease_count=sa.bindparam("b_count"), current_attempt_id=sa.bindparam("b_attempt"))
)  # fmt: skip
