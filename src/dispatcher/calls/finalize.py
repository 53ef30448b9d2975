"""Ending an execution and building its single call.result (D-RES-1, D-RES-2, D-CMD-4).

Runs on the database thread. ``end_and_finalize`` moves the execution to ``ended``
(releasing its occupancy, D-CMD-4), stores the call.result under the event_id fixed at
acceptance, and moves it to ``finalized``; calling it again is a no-op, so replayed cell
events never produce a second result.

Recording (minimal D side, extended by the recording module): a call that produced no
recording gets ``not_created`` at once; a call whose recording was expected but which
this D cannot upload (no object storage configured) gets ``unavailable`` with
``upload_authorization_failed`` at once — never a false ``uploaded``.
"""

from __future__ import annotations

import sqlite3
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from dispatcher.domain.results import (
    CallEnd,
    TranscriptSegment,
    call_result,
    recording_not_created,
    recording_unavailable,
)
from dispatcher.domain.states import ExecutionState
from dispatcher.store import executions, outbox

OUTCOMES = frozenset({"answered", "no_answer", "busy", "rejected", "failed", "canceled"})


@dataclass(frozen=True)
class Ending:
    """What is known when a call is over."""

    end: CallEnd
    recording_expected: bool
    recording: dict[str, Any] | None = None


def recording_for(ending: Ending, call_id: str) -> dict[str, Any]:
    if not ending.recording_expected:
        return recording_not_created(ending.end.outcome)
    media = dict(ending.recording or {})
    return recording_unavailable("upload_authorization_failed", f"rec-{call_id}", None, media)


def end_and_finalize(
    conn: sqlite3.Connection,
    execution_id: str,
    ending: Ending,
    *,
    dispatcher_id: str,
    routing_key: str,
    now: datetime,
) -> bool:
    """True if this call produced the result now; False if it was already finalized."""
    execution = executions.get(conn, execution_id)
    if execution.state is ExecutionState.FINALIZED:
        return False
    end = ending.end
    if end.outcome not in OUTCOMES:
        end = CallEnd(
            end.started_at, end.ended_at, "failed", "unknown_outcome", end.transcript, end.opt_out
        )
    if execution.state is not ExecutionState.ENDED:
        executions.move(conn, execution_id, ExecutionState.ENDED, now, end=_end_json(end))
    recording = recording_for(ending, execution.call_id)
    body = call_result(
        event_id=execution.call_result_event_id,
        dispatcher_id=dispatcher_id,
        execution_id=execution_id,
        call_id=execution.call_id,
        plan=execution.plan,
        end=end,
        recording=recording,
        occurred_at=now,
    )
    outbox.enqueue(
        conn,
        event_id=execution.call_result_event_id,
        event_type="call.result",
        routing_key=routing_key,
        body=body,
        now=now,
    )
    executions.move(conn, execution_id, ExecutionState.FINALIZED, now)
    return True


def _end_json(end: CallEnd) -> dict[str, Any]:
    body = asdict(end)
    body["started_at"] = end.started_at.isoformat()
    body["ended_at"] = end.ended_at.isoformat()
    return body


def failed_ending(started_at: datetime, now: datetime, reason: str) -> Ending:
    """A call that never took place or whose fate is lost: ``failed`` with a reason."""
    return Ending(CallEnd(started_at, now, "failed", reason), recording_expected=False)


def transcript_from(items: list[dict[str, Any]]) -> tuple[TranscriptSegment, ...]:
    return tuple(
        TranscriptSegment(
            turn_id=str(i["turn_id"]),
            segment_id=str(i["segment_id"]),
            role=str(i["role"]),
            text=str(i["text"]),
            start_ms=int(i["start_ms"]),
            end_ms=int(i["end_ms"]),
        )
        for i in items
    )
