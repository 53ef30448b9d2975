"""`started` and `result` for many attempts at once: one locking read, one UPDATE of the
attempts, one of the tasks and one multi-row INSERT of events per batch, whatever its size.
Each message is still fenced, decided (pure domain) and answered on its own; the checks of all
messages precede every write of the batch.

`now` is the batch's database time, or None when the transaction has not read the clock yet:
the locking read then reads it too (`clocked_load_attempts`). `commit`: the writes end the
transaction and may carry its COMMIT (`AttemptTransaction.write_starts`); the rows they change
were read with a lock by this transaction."""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import datetime

from agentcall.orbit.domain.attempts import (
    AttemptEnd,
    AttemptState,
    Backoff,
    EndCause,
    Outcome,
    TaskErrorCode,
    decide_end,
)
from agentcall.orbit.domain.canonical import canonical_text
from agentcall.orbit.domain.evidence import EvidenceItem
from agentcall.orbit.domain.jsonvalue import JsonValue
from agentcall.orbit.domain.lease_tokens import token_is_current
from agentcall.orbit.domain.leasing import extend_lease, start_refusal
from agentcall.orbit.domain.states import TaskState
from agentcall.orbit.domain.transitions import EndFacts, EndWrite, LiveAttempt, StartWrite
from agentcall.orbit.domain.worker_errors import (
    AttemptNotFound,
    InvalidMessage,
    LeaseLost,
    ProtocolError,
    ResultConflict,
)
from agentcall.orbit.execution.acks import Ack, Peer, time_text
from agentcall.orbit.protocol.messages import AttemptRef, Result, ResultOutcome
from agentcall.orbit.store.ports import AttemptTransaction

_CAUSE = {
    ResultOutcome.SUCCEEDED: EndCause.SUCCEEDED,
    ResultOutcome.FAILED: EndCause.FAILED,
    ResultOutcome.NEEDS_REVIEW: EndCause.NEEDS_REVIEW,
    ResultOutcome.CANCELLED: EndCause.CANCELLED,
}
Started = tuple[Peer, AttemptRef]
Finished = tuple[Peer, Result]
# ends an attempt whose start came too late (the start fence) and answers it
Refuse = Callable[[AttemptTransaction, datetime, LiveAttempt, TaskErrorCode], Awaitable[Ack]]


def fence(live: LiveAttempt | None, peer: Peer, ref: AttemptRef) -> LiveAttempt:
    """The attempt as this connection may see it, and only with its current lease token."""
    visible = live is not None and live.namespace_id == peer.namespace_id
    if live is None or not visible or live.queue_id not in peer.queues:
        raise AttemptNotFound(f"attempt {ref.attempt_id} is not on this connection's queues")
    if not token_is_current(ref.lease_token, live.token_sha256):
        raise LeaseLost(f"the lease token of attempt {live.id} is not current")
    return live


async def locked(
    tx: AttemptTransaction, now: datetime | None, attempt_ids: list[str]
) -> tuple[datetime | None, dict[str, LiveAttempt]]:
    """The attempts locked, and the clock: `now`, or read with them when None (still None
    when none of them exists)."""
    if now is None:
        return await tx.clocked_load_attempts(attempt_ids)
    return now, await tx.load_attempts(attempt_ids)


async def start_many(
    tx: AttemptTransaction,
    now: datetime | None,
    lease_ttl_ms: int,
    items: Sequence[Started],
    refuse: Refuse,
    *,
    commit: bool = False,
) -> tuple[datetime | None, list[Ack]]:
    """LEASED → RUNNING for every acceptable `started`; `refuse(tx, now, live, code)` ends an
    attempt whose start came too late (the start fence). Returns the clock with the acks."""
    now, lives = await locked(tx, now, [ref.attempt_id for _, ref in items])
    acks: list[Ack | None] = [None] * len(items)
    go: dict[str, tuple[int, StartWrite]] = {}
    for index, (peer, ref) in enumerate(items):
        try:
            live = fence(lives.get(ref.attempt_id), peer, ref)
            assert now is not None  # an attempt was found: the clock was read with it
            if live.state is AttemptState.RUNNING or live.id in go:
                acks[index] = Ack(True, {"attempt_id": live.id, "duplicate": True})
            elif live.state is not AttemptState.LEASED:
                raise LeaseLost(f"attempt {live.id} already ended: {live.state}")
            elif (
                code := start_refusal(now, live.facts.start_deadline_at, live.facts.deadline_at)
            ) is not None:
                acks[index] = await refuse(tx, now, live, code)
            else:
                expires = extend_lease(now, lease_ttl_ms, live.attempt_deadline_at)
                go[live.id] = (index, StartWrite(live, expires))
        except ProtocolError as exc:
            acks[index] = Ack.refused(exc, ref.attempt_id)
    if go:
        assert now is not None
        await tx.write_starts(now, [start for _, start in go.values()], commit=commit)
    for index, start in go.values():
        acks[index] = Ack(
            True,
            {
                "attempt_id": start.live.id,
                "task_state": "RUNNING",
                "task_revision": str(start.live.task_revision + 1),
                "duplicate": False,
                "lease_expires_at": time_text(start.lease_expires_at),
            },
        )
    return now, [ack if ack is not None else Ack(False, code="UNAVAILABLE") for ack in acks]


@dataclass(frozen=True, slots=True)
class _End:
    index: int
    end: EndWrite
    evidence: list[EvidenceItem]


async def finish_many(
    tx: AttemptTransaction,
    now: datetime | None,
    backoff: Backoff,
    items: Sequence[Finished],
    *,
    commit: bool = False,
) -> tuple[datetime | None, list[Ack]]:
    """Each acceptable `result` ends its attempt as `decide_end` says, with its evidence.
    Returns the clock with the acks."""
    now, lives = await locked(tx, now, [msg.ref.attempt_id for _, msg in items])
    acks: list[Ack | None] = [None] * len(items)
    ends: dict[str, _End] = {}
    for index, (peer, msg) in enumerate(items):
        try:
            live = fence(lives.get(msg.ref.attempt_id), peer, msg.ref)
            assert now is not None  # an attempt was found: the clock was read with it
            digest = result_digest(msg)
            if live.id in ends:
                acks[index] = Ack(True, {"attempt_id": live.id, "duplicate": True}, ended=live.id)
            elif not live.state.live:
                acks[index] = ended_again(live, digest)
            elif live.state is AttemptState.LEASED:
                raise InvalidMessage("result before the started ack: send started first")
            else:
                fresh = await tx.check_evidence(live, msg.evidence)
                outcome = _decide(live, msg, now, backoff)
                facts = EndFacts(msg.error, msg.result_text, digest)
                ends[live.id] = _End(index, EndWrite(live, outcome, facts), fresh)
        except ProtocolError as exc:
            acks[index] = Ack.refused(exc, msg.ref.attempt_id)
    if ends:
        assert now is not None
        # evidence is inserted after the ends: then the COMMIT cannot go with them
        last = commit and not any(e.evidence for e in ends.values())
        await tx.write_ends(now, [e.end for e in ends.values()], commit=last)
    for e in ends.values():
        if e.evidence:
            assert now is not None
            await tx.insert_evidence(e.end.live, e.evidence, now)
        acks[e.index] = ended_ack(e.end.live, e.end.outcome.task_state)
    return now, [ack if ack is not None else Ack(False, code="UNAVAILABLE") for ack in acks]


def _decide(live: LiveAttempt, msg: Result, now: datetime, backoff: Backoff) -> Outcome:
    if msg.outcome is ResultOutcome.CANCELLED and not live.task_cancel_requested:
        raise InvalidMessage("outcome cancelled is only accepted after a cancel_requested")
    retryable = bool(msg.error and msg.error.retryable)
    cause = AttemptEnd(_CAUSE[msg.outcome], True, retryable)
    return decide_end(live.facts, cause, now, backoff)


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


def ended_again(live: LiveAttempt, digest: str, kind: str = "RESULT") -> Ack:
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


def ended_ack(live: LiveAttempt, state: TaskState) -> Ack:
    fields: dict[str, JsonValue] = {
        "attempt_id": live.id,
        "task_state": state.value,
        "task_revision": str(live.task_revision + 1),
        "duplicate": False,
    }
    wake = live.queue_id if state is TaskState.WAITING else None
    return Ack(True, fields, ended=live.id, wake=wake)
