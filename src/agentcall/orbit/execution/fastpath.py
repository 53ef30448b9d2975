"""`started` and `result` for many attempts at once: one locking read, one UPDATE of the
attempts, one of the tasks and one multi-row INSERT of events per batch, whatever its size.
Each message is still fenced, decided (pure domain) and answered on its own; the checks of all
messages precede every write of the batch."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from agentcall.orbit.domain.attempts import (
    AttemptEnd,
    AttemptState,
    Backoff,
    EndCause,
    Outcome,
    decide_end,
)
from agentcall.orbit.domain.canonical import canonical_text
from agentcall.orbit.domain.evidence import EvidenceItem
from agentcall.orbit.domain.ids import new_id
from agentcall.orbit.domain.jsonvalue import JsonValue, dumps
from agentcall.orbit.domain.leasing import extend_lease, start_refusal
from agentcall.orbit.domain.states import TaskState, check_transition
from agentcall.orbit.domain.times import format_time
from agentcall.orbit.domain.worker_errors import (
    AttemptNotFound,
    InvalidMessage,
    LeaseLost,
    ProtocolError,
    ResultConflict,
)
from agentcall.orbit.execution.acks import Ack, Peer
from agentcall.orbit.execution.transitions import ERROR_MESSAGES, EndFacts, error_json
from agentcall.orbit.protocol.messages import AttemptRef, Result, ResultOutcome
from agentcall.orbit.store import execution as store
from agentcall.orbit.store.connector import write_all
from agentcall.orbit.store.evidence import check_evidence, insert_evidence
from agentcall.orbit.store.sql import Increment, Insert, Update
from agentcall.orbit.store.tables import task_attempts, task_events, tasks

_CAUSE = {
    ResultOutcome.SUCCEEDED: EndCause.SUCCEEDED,
    ResultOutcome.FAILED: EndCause.FAILED,
    ResultOutcome.NEEDS_REVIEW: EndCause.NEEDS_REVIEW,
    ResultOutcome.CANCELLED: EndCause.CANCELLED,
}
_EVENT_KIND = {
    TaskState.SUCCEEDED: "SUCCEEDED",
    TaskState.FAILED: "FAILED",
    TaskState.NEEDS_REVIEW: "NEEDS_REVIEW",
    TaskState.WAITING: "REQUEUED",
    TaskState.CANCELLED: "CANCELLED",
}
Started = tuple[Peer, AttemptRef]
Finished = tuple[Peer, Result]


def sha256(text: str) -> str:
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def fence(live: store.LiveAttempt | None, peer: Peer, ref: AttemptRef) -> store.LiveAttempt:
    """The attempt as this connection may see it, and only with its current lease token."""
    visible = live is not None and live.namespace_id == peer.namespace_id
    if live is None or not visible or live.queue_id not in peer.queues:
        raise AttemptNotFound(f"attempt {ref.attempt_id} is not on this connection's queues")
    if sha256(ref.lease_token) != live.token_sha256:
        raise LeaseLost(f"the lease token of attempt {live.id} is not current")
    return live


@dataclass(frozen=True, slots=True)
class _Start:
    index: int
    live: store.LiveAttempt
    expires: datetime


async def start_many(
    conn: AsyncConnection,
    now: datetime,
    lease_ttl_ms: int,
    items: Sequence[Started],
    refuse: Any,
) -> list[Ack]:
    """LEASED → RUNNING for every acceptable `started`; `refuse(conn, now, live, code)` ends an
    attempt whose start came too late (the start fence)."""
    lives = await store.load_attempts(conn, [ref.attempt_id for _, ref in items])
    acks: list[Ack | None] = [None] * len(items)
    go: dict[str, _Start] = {}
    for index, (peer, ref) in enumerate(items):
        try:
            live = fence(lives.get(ref.attempt_id), peer, ref)
            if live.state is AttemptState.RUNNING or live.id in go:
                acks[index] = Ack(True, {"attempt_id": live.id, "duplicate": True})
            elif live.state is not AttemptState.LEASED:
                raise LeaseLost(f"attempt {live.id} already ended: {live.state}")
            elif (
                code := start_refusal(now, live.facts.start_deadline_at, live.facts.deadline_at)
            ) is not None:
                acks[index] = await refuse(conn, now, live, code)
            else:
                expires = extend_lease(now, lease_ttl_ms, live.attempt_deadline_at)
                go[live.id] = _Start(index, live, expires)
        except ProtocolError as exc:
            acks[index] = Ack.refused(exc, ref.attempt_id)
    await _write_starts(conn, now, list(go.values()))
    for start in go.values():
        acks[start.index] = Ack(
            True,
            {
                "attempt_id": start.live.id,
                "task_state": "RUNNING",
                "task_revision": str(start.live.task_revision + 1),
                "duplicate": False,
                "lease_expires_at": format_time(start.expires),
            },
        )
    return [ack if ack is not None else Ack(False, code="UNAVAILABLE") for ack in acks]


async def _write_starts(conn: AsyncConnection, now: datetime, starts: list[_Start]) -> None:
    if not starts:
        return
    await write_all(
        conn,
        [
            Update(
                task_attempts,
                [{"id": s.live.id, "lease_expires_at": s.expires} for s in starts],
                where={"state": AttemptState.LEASED.value},
                static={
                    "state": AttemptState.RUNNING.value,
                    "started_at": now,
                    "last_heartbeat_at": now,
                },
            ),
            Update(
                tasks,
                [{"id": s.live.task_id} for s in starts],
                where={"state": TaskState.LEASED.value},
                static={
                    "state": TaskState.RUNNING.value,
                    "revision": Increment(),
                    "attempt_count": Increment(),
                    "updated_at": now,
                },
            ),
            Insert(
                task_events,
                [
                    store.event_row(
                        s.live.task_id,
                        s.live.task_revision + 1,
                        "STARTED",
                        TaskState.LEASED,
                        TaskState.RUNNING,
                        f'{{"attempt_id":"{s.live.id}"}}',
                        now,
                        new_id(),
                    )
                    for s in starts
                ],
            ),
        ],
    )


@dataclass(frozen=True, slots=True)
class _End:
    index: int
    live: store.LiveAttempt
    outcome: Outcome
    facts: EndFacts
    evidence: list[EvidenceItem]


async def finish_many(
    conn: AsyncConnection,
    now: datetime,
    backoff: Backoff,
    items: Sequence[Finished],
) -> list[Ack]:
    lives = await store.load_attempts(conn, [msg.ref.attempt_id for _, msg in items])
    acks: list[Ack | None] = [None] * len(items)
    ends: dict[str, _End] = {}
    for index, (peer, msg) in enumerate(items):
        try:
            live = fence(lives.get(msg.ref.attempt_id), peer, msg.ref)
            digest = result_digest(msg)
            if live.id in ends:
                acks[index] = Ack(True, {"attempt_id": live.id, "duplicate": True}, ended=live.id)
            elif not live.state.live:
                acks[index] = ended_again(live, digest)
            elif live.state is AttemptState.LEASED:
                raise InvalidMessage("result before the started ack: send started first")
            else:
                fresh = await check_evidence(conn, live, msg.evidence)
                outcome = _decide(live, msg, now, backoff)
                facts = EndFacts(msg.error, msg.result_text, digest)
                ends[live.id] = _End(index, live, outcome, facts, fresh)
        except ProtocolError as exc:
            acks[index] = Ack.refused(exc, msg.ref.attempt_id)
    await write_ends(conn, now, [(e.live, e.outcome, e.facts) for e in ends.values()])
    for end in ends.values():
        await insert_evidence(conn, end.live, end.evidence, now)
        acks[end.index] = ended_ack(end.live, end.outcome.task_state)
    return [ack if ack is not None else Ack(False, code="UNAVAILABLE") for ack in acks]


def _decide(live: store.LiveAttempt, msg: Result, now: datetime, backoff: Backoff) -> Outcome:
    if msg.outcome is ResultOutcome.CANCELLED and not live.task_cancel_requested:
        raise InvalidMessage("outcome cancelled is only accepted after a cancel_requested")
    retryable = bool(msg.error and msg.error.retryable)
    cause = AttemptEnd(_CAUSE[msg.outcome], True, retryable)
    return decide_end(live.facts, cause, now, backoff)


async def write_ends(
    conn: AsyncConnection, now: datetime, ends: list[tuple[store.LiveAttempt, Outcome, EndFacts]]
) -> None:
    """End RUNNING attempts and move their tasks: three statements, one round trip."""
    if not ends:
        return
    for live, outcome, _ in ends:
        check_transition(live.task_state, outcome.task_state)
    await write_all(
        conn,
        [
            Update(
                task_attempts,
                [_attempt_end(live, outcome, facts) for live, outcome, facts in ends],
                where={"state": AttemptState.RUNNING.value},
                static={"ended_at": now},
            ),
            Update(
                tasks,
                [_task_end(now, live, outcome, facts) for live, outcome, facts in ends],
                where={"state": TaskState.RUNNING.value},
                static={"revision": Increment(), "updated_at": now, "current_attempt_id": None},
            ),
            Insert(task_events, [_event(now, live, outcome) for live, outcome, _ in ends]),
        ],
    )


def _attempt_end(live: store.LiveAttempt, outcome: Outcome, facts: EndFacts) -> dict[str, Any]:
    row: dict[str, Any] = {
        "id": live.id,
        "state": outcome.attempt_state.value,
        "end_reason": outcome.end_reason.value,
        "end_digest": facts.end_digest,
        "task_state_after": outcome.task_state.value,
        "task_revision_after": live.task_revision + 1,
    }
    if facts.error is not None:
        row.update(
            error_code=facts.error.code,
            error_message=facts.error.message,
            error_retryable=facts.error.retryable,
        )
    return row


def _task_end(
    now: datetime, live: store.LiveAttempt, outcome: Outcome, facts: EndFacts
) -> dict[str, Any]:
    row: dict[str, Any] = {"id": live.task_id, "state": outcome.task_state.value}
    if outcome.task_state is TaskState.WAITING:
        row["available_at"] = outcome.available_at
    if outcome.task_state.terminal:
        row["completed_at"] = now
    if outcome.task_state is TaskState.SUCCEEDED:
        row["result"] = facts.result_text
    if outcome.error_code is not None:
        row["error_code"] = outcome.error_code.value
        worker_message = facts.error.message if facts.error else None
        row["error_message"] = (
            worker_message
            if outcome.error_code.value in ("HANDLER_FAILED", "REVIEW_REQUESTED") and worker_message
            else ERROR_MESSAGES[outcome.error_code]
        )
        if facts.error is not None:
            row["attempt_error"] = dumps(error_json(facts.error))
    return row


def _event(now: datetime, live: store.LiveAttempt, outcome: Outcome) -> dict[str, Any]:
    detail: dict[str, JsonValue] = {"attempt_id": live.id, "reason": outcome.end_reason.value}
    if outcome.error_code is not None:
        detail["error_code"] = outcome.error_code.value
    kind = _EVENT_KIND[outcome.task_state]
    return store.event_row(
        live.task_id,
        live.task_revision + 1,
        kind,
        live.task_state,
        outcome.task_state,
        dumps(detail),
        now,
        new_id(),
    )


def result_digest(msg: Result) -> str:
    """Equal for a resend of the same result message (the worker resends it byte for byte)."""
    error = msg.error
    document: dict[str, JsonValue] = {
        "outcome": msg.outcome.value,
        "result": msg.result_text,
        "error": None
        if error is None
        else {"code": error.code, "message": error.message, "retryable": error.retryable},
    }
    return hashlib.sha256(canonical_text(document).encode("utf-8")).hexdigest()


def ended_again(live: store.LiveAttempt, digest: str, kind: str = "RESULT") -> Ack:
    """A resend for an attempt already ended by the same message is acknowledged again."""
    if live.end_digest == digest:
        fields: dict[str, JsonValue] = {
            "attempt_id": live.id,
            "duplicate": True,
            "task_state": live.task_state.value,
        }
        return Ack(True, fields, ended=live.id)
    if live.end_reason == kind == "RESULT":
        return Ack.refused(ResultConflict(f"attempt {live.id} already ended otherwise"), live.id)
    return Ack.refused(LeaseLost(f"attempt {live.id} already ended: {live.state}"), live.id)


def ended_ack(live: store.LiveAttempt, state: TaskState) -> Ack:
    fields: dict[str, JsonValue] = {
        "attempt_id": live.id,
        "task_state": state.value,
        "task_revision": str(live.task_revision + 1),
        "duplicate": False,
    }
    wake = live.queue_id if state is TaskState.WAITING else None
    return Ack(True, fields, ended=live.id, wake=wake)
