"""Ending an execution and building its single call.result (D-RES-1, D-RES-2, D-CMD-4).

Runs on the database thread. ``end_and_finalize`` moves the execution to ``ended``
(releasing its occupancy, D-CMD-4), stores the call.result under the event_id fixed at
acceptance, and moves it to ``finalized``; calling it again is a no-op, so replayed cell
events never produce a second result.

:class:`Finalizer` carries where the results go and who opens an expected recording.

Recording: a call that produced no recording gets ``not_created`` at once. A call whose
recording was expected ends (occupancy released) with a recording opened through
``open_recording`` (:mod:`agentcall.dispatcher.recording`); its call.result is stored later by
``finalize_recorded`` when that recording is closed (uploaded / unavailable, D-REC-2).
Without object storage configured it gets ``unavailable`` with
``upload_authorization_failed`` at once — never a false ``uploaded``.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from agentcall.dispatcher.domain.results import (
    CallEnd,
    TranscriptSegment,
    call_result,
    recording_not_created,
    recording_unavailable,
)
from agentcall.dispatcher.domain.states import ExecutionState, IllegalTransition
from agentcall.dispatcher.store import executions, outbox
from agentcall.dispatcher.store.executions import Execution

OUTCOMES = frozenset({"answered", "no_answer", "busy", "rejected", "failed", "canceled"})


@dataclass(frozen=True)
class Ending:
    """What is known when a call is over."""

    end: CallEnd
    recording_expected: bool
    recording: dict[str, Any] | None = None


class RecordingOpener(Protocol):
    """Opens the recording of a call that ended with one expected (same transaction)."""

    def __call__(
        self, conn: sqlite3.Connection, execution: Execution, ending: Ending, now: datetime
    ) -> None: ...


@dataclass(frozen=True)
class Finalizer:
    """Where the call.results of this D go, and who opens an expected recording (none: a
    recording expected without object storage ends ``unavailable`` at once)."""

    dispatcher_id: str
    routing_key: str
    open_recording: RecordingOpener | None = None

    def end(
        self,
        conn: sqlite3.Connection,
        execution_id: str,
        ending: Ending,
        now: datetime,
        execution: Execution | None = None,
    ) -> bool:
        """:func:`end_and_finalize` with this D's route and recording opener."""
        return end_and_finalize(
            conn,
            execution_id,
            ending,
            dispatcher_id=self.dispatcher_id,
            routing_key=self.routing_key,
            now=now,
            open_recording=self.open_recording,
            execution=execution,
        )


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
    open_recording: RecordingOpener | None = None,
    execution: Execution | None = None,
) -> bool:
    """True if this call produced the result now; False if it was already finalized or
    its result waits for the recording opened here. ``execution`` is the row if it was
    already read in this transaction."""
    if execution is None or execution.execution_id != execution_id:
        execution = executions.get(conn, execution_id)
    if execution.state is ExecutionState.FINALIZED:
        return False
    end = ending.end
    if end.outcome not in OUTCOMES:
        end = CallEnd(
            end.started_at, end.ended_at, "failed", "unknown_outcome", end.transcript, end.opt_out
        )
    if ending.recording_expected and open_recording is not None:
        if execution.state is not ExecutionState.ENDED:
            executions.move(
                conn, execution_id, ExecutionState.ENDED, now, end=_end_json(end), current=execution
            )
        open_recording(conn, execution, ending, now)
        return False
    recording = recording_for(ending, execution.call_id)
    _store_result(conn, execution, end, recording, dispatcher_id, routing_key, now)
    if execution.state is ExecutionState.ENDED:
        executions.move(conn, execution_id, ExecutionState.FINALIZED, now, current=execution)
    else:  # ended and finalized at once: one row write (occupancy released with it)
        path = (ExecutionState.ENDED, ExecutionState.FINALIZED)
        executions.move_through(
            conn, execution_id, path, now, end=_end_json(end), current=execution
        )
    return True


def finalize_recorded(
    conn: sqlite3.Connection,
    execution_id: str,
    recording: Mapping[str, Any],
    *,
    dispatcher_id: str,
    routing_key: str,
    now: datetime,
) -> bool:
    """The call.result of an ended execution whose recording is closed (D-RES-1, D-REC-2)."""
    execution = executions.get(conn, execution_id)
    if execution.state is ExecutionState.FINALIZED:
        return False
    if execution.state is not ExecutionState.ENDED or execution.end is None:
        raise IllegalTransition(f"execution {execution_id} is {execution.state}, not ended")
    end = end_from_json(execution.end)
    _store_result(conn, execution, end, recording, dispatcher_id, routing_key, now)
    executions.move(conn, execution_id, ExecutionState.FINALIZED, now)
    return True


def _store_result(
    conn: sqlite3.Connection,
    execution: Execution,
    end: CallEnd,
    recording: Mapping[str, Any],
    dispatcher_id: str,
    routing_key: str,
    now: datetime,
) -> None:
    execution_id = execution.execution_id
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


def _end_json(end: CallEnd) -> dict[str, Any]:
    """``dataclasses.asdict(end)`` with ISO times, written out (asdict deep-copies every
    field, which cost more than the rest of finalizing a call)."""
    return {
        "started_at": end.started_at.isoformat(),
        "ended_at": end.ended_at.isoformat(),
        "outcome": end.outcome,
        "reason_code": end.reason_code,
        "transcript": [dict(vars(segment)) for segment in end.transcript],
        "opt_out": end.opt_out,
        "quality": dict(end.quality) if end.quality is not None else None,
    }


def end_from_json(body: Mapping[str, Any]) -> CallEnd:
    """The CallEnd stored with an ended execution (inverse of ``_end_json``)."""
    return CallEnd(
        started_at=datetime.fromisoformat(body["started_at"]),
        ended_at=datetime.fromisoformat(body["ended_at"]),
        outcome=str(body["outcome"]),
        reason_code=body.get("reason_code"),
        transcript=transcript_from(list(body.get("transcript") or [])),
        opt_out=bool(body.get("opt_out")),
        quality=body.get("quality"),
    )


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
