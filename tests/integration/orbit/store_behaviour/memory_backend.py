"""The behaviour suite's operations over the in-memory twin (`agentcall.orbit.store.memory`),
through the typed store interface (`agentcall.orbit.store.ports`) only.

The engine's kernel still runs its statements on a SQL connection (it is being moved onto
`AttemptTransaction`); until it is, each step here is the kernel's step written over the
port: the same pure decisions (`decide_end`, `plan_lease`, `start_refusal`, `plan_cancel`,
`expiry_cause`, `waiting_expiry`), the same lease-token check (`token_is_current`) and the
same acks (`agentcall.orbit.execution.fastpath`). The port has no operator writes yet
(cancel plans its change on a SQL connection): the twin's `MemoryWrites` supplies their
statements."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from agentcall.orbit.domain.attempts import (
    AttemptEnd,
    AttemptState,
    EndCause,
    decide_end,
    refused_start,
)
from agentcall.orbit.domain.cancel import CancelRequest
from agentcall.orbit.domain.cursor import Position
from agentcall.orbit.domain.errors import NotFound
from agentcall.orbit.domain.idempotency import Scope
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.lease_tokens import token_digest, token_is_current
from agentcall.orbit.domain.leasing import expiry_cause, extend_lease, start_refusal, waiting_expiry
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.submit import OPERATION as SUBMIT
from agentcall.orbit.domain.submit import submit_digest
from agentcall.orbit.domain.task import Task
from agentcall.orbit.domain.times import format_time, milliseconds
from agentcall.orbit.domain.tokens import Permission, Principal, authenticate, generate_secret
from agentcall.orbit.domain.transitions import EndFacts, EndWrite, Holder, LeaseWrite, StartWrite
from agentcall.orbit.domain.worker_errors import (
    AttemptNotFound,
    InvalidMessage,
    LeaseLost,
    ProtocolError,
)
from agentcall.orbit.execution.acks import Ack, Grant, Peer
from agentcall.orbit.execution.fastpath import ended_ack, ended_again, result_digest
from agentcall.orbit.execution.kernel import KernelSettings, new_grant
from agentcall.orbit.execution.upkeep import SweepReport
from agentcall.orbit.protocol.messages import AttemptRef, Result, ResultOutcome
from agentcall.orbit.store.group_plan import PendingSubmit
from agentcall.orbit.store.memory import MemoryStore
from agentcall.orbit.store.operations import Page
from agentcall.orbit.store.ports import LiveAttempt
from agentcall.orbit.store.receipts import Receipt
from agentcall.orbit.store.task_writes import Written
from tests.integration.orbit.store_behaviour.backends import HANDLER, Event, request_of
from tests.integration.orbit.store_behaviour.memory_cancel import cancel_on_twin

_CAUSE = {
    ResultOutcome.SUCCEEDED: EndCause.SUCCEEDED,
    ResultOutcome.FAILED: EndCause.FAILED,
    ResultOutcome.NEEDS_REVIEW: EndCause.NEEDS_REVIEW,
    ResultOutcome.CANCELLED: EndCause.CANCELLED,
}
_SWEEP_REASON = {EndCause.ATTEMPT_TIMEOUT: "attempt_timeout", EndCause.LEASE_EXPIRED: "lease_lost"}
START = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


class ManualClock:
    """The twin's clock: a fixed time that tests move on, a microsecond per reading (the
    database clock also moves between two transactions)."""

    def __init__(self, at: datetime = START) -> None:
        self.at = at

    def __call__(self) -> datetime:
        self.at += timedelta(microseconds=1)
        return self.at


class MemoryBackend:
    name = "memory"

    def __init__(self, settings: KernelSettings) -> None:
        self.settings = settings
        self.clock = ManualClock()
        self.store = MemoryStore(self.clock)

    async def tenant(self) -> Principal:
        secret = generate_secret()
        record = await self.store.init(f"b-{secrets.token_hex(4)}", "q", secret)
        return authenticate(record, self.clock())

    def advance(self, ms: int) -> None:
        self.clock.at += milliseconds(ms)

    async def now(self) -> datetime:
        return self.clock()

    # ------------------------------------------------------------------ use cases
    async def submit(self, principal: Principal, body: dict[str, JsonValue], key: str) -> Receipt:
        request = request_of(body)
        principal.require(Permission.SUBMIT)
        principal.require_queue(request.queue_id)
        scope = Scope(principal.namespace_id, SUBMIT, "", key)
        digest = submit_digest(request)
        return await self.store.submit(PendingSubmit(principal, request, scope, digest, "r"))

    async def get(self, principal: Principal, task_id: str) -> Task:
        principal.require(Permission.READ)
        task = await self.store.load_task(task_id)
        if task is None:
            raise NotFound("task not found")
        principal.require_visible(task.namespace_id, task.queue_id)
        return task

    async def page(
        self, principal: Principal, state: TaskState | None, after: Position | None, limit: int
    ) -> Page:
        principal.require(Permission.READ)
        (queue_id,) = principal.queue_ids
        rows = await self.store.page(queue_id, state, after, limit + 1)
        if len(rows) <= limit:
            return Page(rows, None)
        last = rows[limit - 1]
        return Page(rows[:limit], Position(queue_id, state, last.created_at, last.id))

    async def cancel(
        self, principal: Principal, task_id: str, request: CancelRequest, key: str
    ) -> Written:
        return await cancel_on_twin(self.store, principal, task_id, request, key)

    # ------------------------------------------------------------------ kernel steps
    async def lease(self, peer: Peer, limit: int) -> list[Grant]:
        (queue_id,) = peer.queues
        ttl = self.settings.lease_ttl_ms
        async with self.store.transaction() as (tx, now):
            found = await tx.lease_candidates(queue_id, [HANDLER], now, limit)
            grants = [new_grant(f.task, f.lease_count + 1, now, ttl) for f in found]
            await tx.write_leases(now, [_lease_write(g, peer) for g in grants])
        return grants

    async def start(self, peer: Peer, ref: AttemptRef) -> Ack:
        async with self.store.transaction() as (tx, now):
            try:
                live = _fence(
                    (await tx.load_attempts([ref.attempt_id])).get(ref.attempt_id), peer, ref
                )
                if live.state is AttemptState.RUNNING:
                    return Ack(True, {"attempt_id": live.id, "duplicate": True})
                if live.state is not AttemptState.LEASED:
                    raise LeaseLost(f"attempt {live.id} already ended: {live.state}")
            except ProtocolError as exc:
                return Ack.refused(exc, ref.attempt_id)
            code = start_refusal(now, live.facts.start_deadline_at, live.facts.deadline_at)
            if code is not None:
                await tx.write_ends(now, [EndWrite(live, refused_start(code))])
                message = f"{code.value}: the task failed without running"
                return Ack(False, code=code.value, message=message, ended=live.id)
            expires = extend_lease(now, self.settings.lease_ttl_ms, live.attempt_deadline_at)
            await tx.write_starts(now, [StartWrite(live, expires)])
        fields: dict[str, JsonValue] = {
            "attempt_id": live.id,
            "task_state": "RUNNING",
            "task_revision": str(live.task_revision + 1),
            "duplicate": False,
            "lease_expires_at": format_time(expires),
        }
        return Ack(True, fields)

    async def heartbeat(self, peer: Peer, refs: Sequence[AttemptRef]) -> list[dict[str, JsonValue]]:
        ttl = self.settings.lease_ttl_ms
        async with self.store.transaction() as (tx, now):
            rows = {row.id: row for row in await tx.heartbeat_rows([r.attempt_id for r in refs])}
            statuses: list[dict[str, JsonValue]] = []
            renewed: list[str] = []
            for ref in refs:
                row = rows.get(ref.attempt_id)
                current = row is not None and (
                    row.namespace_id == peer.namespace_id
                    and row.queue_id in peer.queues
                    and token_is_current(ref.lease_token, row.token_sha256)
                    and row.state.live
                    and row.lease_expires_at > now
                )
                if row is None or not current:
                    statuses.append({"attempt_id": ref.attempt_id, "status": "lost"})
                    continue
                renewed.append(ref.attempt_id)
                status = "cancel_requested" if row.cancel_requested else "ok"
                expires = extend_lease(now, ttl, row.attempt_deadline_at)
                statuses.append(
                    {
                        "attempt_id": row.id,
                        "status": status,
                        "lease_expires_at": format_time(expires),
                    }
                )
            if renewed:
                await tx.renew_leases(renewed, now, now + milliseconds(ttl))
        return statuses

    async def finish(self, peer: Peer, result: Result) -> Ack:
        async with self.store.transaction() as (tx, now):
            try:
                found = await tx.load_attempts([result.ref.attempt_id])
                live = _fence(found.get(result.ref.attempt_id), peer, result.ref)
                digest = result_digest(result)
                if not live.state.live:
                    return ended_again(_sql_shaped(live), digest)
                if live.state is AttemptState.LEASED:
                    raise InvalidMessage("result before the started ack: send started first")
                fresh = await tx.check_evidence(live, result.evidence)
                if result.outcome is ResultOutcome.CANCELLED and not live.task_cancel_requested:
                    raise InvalidMessage(
                        "outcome cancelled is only accepted after a cancel_requested"
                    )
                retryable = bool(result.error and result.error.retryable)
                end = AttemptEnd(_CAUSE[result.outcome], True, retryable)
                outcome = decide_end(live.facts, end, now, self.settings.backoff)
            except ProtocolError as exc:
                return Ack.refused(exc, result.ref.attempt_id)
            facts = EndFacts(result.error, result.result_text, digest)
            await tx.write_ends(now, [EndWrite(live, outcome, facts)])
            await tx.insert_evidence(live, fresh, now)
        return ended_ack(_sql_shaped(live), outcome.task_state)

    async def disconnect(self, peer: Peer) -> None:
        async with self.store.transaction() as (tx, now):
            cut = now + milliseconds(self.settings.reconnect_grace_ms)
            await tx.shorten_leases(peer.connection_id, cut)

    async def sweep(self) -> SweepReport:
        report = SweepReport()
        async with self.store.transaction() as (tx, now):
            for live in await tx.expired_attempts(now, 500):
                cause = expiry_cause(now, live.lease_expires_at, live.attempt_deadline_at)
                cause = cause or EndCause.LEASE_EXPIRED
                end = AttemptEnd(cause, started=live.state is AttemptState.RUNNING)
                outcome = decide_end(live.facts, end, now, self.settings.backoff)
                await tx.write_ends(now, [EndWrite(live, outcome)])
                report.cancels.append((live.connection_id, live.id, _SWEEP_REASON[cause]))
                if outcome.task_state is TaskState.WAITING:
                    report.wake.add(live.queue_id)
                report.ended += 1
            for waiting in await tx.expired_waiting(now, 500):
                code = waiting_expiry(now, waiting.start_deadline_at, waiting.deadline_at)
                if code is not None and await tx.fail_waiting(now, waiting, code):
                    report.ended += 1
        return report

    async def events(self, task_id: str) -> list[Event]:
        rows = self.store.events(task_id)
        return [Event(r["revision"], r["kind"], r["from_state"], r["to_state"]) for r in rows]

    async def close(self) -> None:
        return None


def _fence(live: LiveAttempt | None, peer: Peer, ref: AttemptRef) -> LiveAttempt:
    """The kernel's fence: the attempt as this connection may see it, with its current token."""
    visible = live is not None and live.namespace_id == peer.namespace_id
    if live is None or not visible or live.queue_id not in peer.queues:
        raise AttemptNotFound(f"attempt {ref.attempt_id} is not on this connection's queues")
    if not token_is_current(ref.lease_token, live.token_sha256):
        raise LeaseLost(f"the lease token of attempt {live.id} is not current")
    return live


def _sql_shaped(live: LiveAttempt) -> Any:
    """The fast path's ack builders read the same fields of either `LiveAttempt`."""
    return live


def _lease_write(grant: Grant, peer: Peer) -> LeaseWrite:
    worker = peer.worker
    holder = Holder(
        peer.connection_id,
        peer.token_id,
        worker.name,
        worker.instance_id,
        worker.sdk,
        worker.host,
        worker.pid,
    )
    return LeaseWrite(
        grant.task,
        grant.attempt_id,
        grant.number,
        token_digest(grant.lease_token),
        holder,
        grant.lease_expires_at,
        grant.attempt_deadline_at,
    )
