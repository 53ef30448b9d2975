"""A call in progress: the :class:`CallControl` the cell hands to its driver.

Each report updates the call record through the pure transitions of
``agentcall.cell.calls.record`` and emits the matching event, in that order, so the event stream
and ``GET /v1/calls/{id}`` never disagree.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from agentcall.cell.calls import record as calls
from agentcall.cell.calls.driver import CallDriver
from agentcall.cell.calls.plan import CallPlan
from agentcall.cell.calls.record import CallRecord, Ending, RecordingRef
from agentcall.cell.domain.events import iso
from agentcall.cell.domain.model import CallState, EndCause, EventType, Outcome, ReasonCode, Turn
from agentcall.cell.recording.store import RecordingStore
from agentcall.cell.recording.wav import WavWriter
from agentcall.cell.telemetry.metrics import CellMetrics, count_handled

log = logging.getLogger("cell.call")


class CallHost(Protocol):
    """What a live call needs from the cell service."""

    recordings: RecordingStore
    metrics: CellMetrics
    now: Callable[[], datetime]

    def record(self, call_id: str) -> CallRecord: ...

    def save(self, record: CallRecord) -> None: ...

    def emit(self, type_: EventType, call_id: str, data: Mapping[str, Any]) -> None: ...


def ended_data(record: CallRecord) -> dict[str, Any]:
    end = record.ending
    assert end is not None and record.ended_at is not None
    return {
        "outcome": end.outcome.value,
        "reason_code": end.reason_code,
        "cause": end.cause.value,
        "started_at": iso(record.created_at),
        "ringing_at": iso(record.ringing_at) if record.ringing_at else None,
        "answered_at": iso(record.answered_at) if record.answered_at else None,
        "ended_at": iso(record.ended_at),
        "ring_ms": end.ring_ms,
        "talk_ms": end.talk_ms,
        "duration_ms": end.duration_ms,
        "opt_out": record.opt_out,
        "transcript_turns": len(record.transcript),
        "recording_expected": record.recording_expected,
        "quality": dict(end.quality) if end.quality is not None else None,
    }


class LiveCall:
    def __init__(self, host: CallHost, plan: CallPlan) -> None:
        self._host = host
        self._plan = plan
        self._hangup = asyncio.Event()
        self._reason = ReasonCode.HANGUP_REQUESTED
        self._writer: WavWriter | None = None
        self.task: asyncio.Task[None] | None = None

    # --- CallControl -------------------------------------------------------------
    @property
    def plan(self) -> CallPlan:
        return self._plan

    @property
    def hangup_requested(self) -> asyncio.Event:
        return self._hangup

    @property
    def hangup_reason(self) -> ReasonCode:
        return self._reason

    @property
    def record(self) -> CallRecord:
        return self._host.record(self._plan.call_id)

    def _emit(self, type_: EventType, data: Mapping[str, Any]) -> None:
        self._host.emit(type_, self._plan.call_id, data)

    def ringing(self) -> None:
        self._host.save(calls.ring(self.record, self._host.now()))
        self._emit(EventType.RINGING, {})

    def answered(self) -> None:
        self._host.save(calls.answer(self.record, self._host.now()))
        self._emit(EventType.ANSWERED, {})

    def transcript(self, turn: Turn) -> None:
        self._host.save(calls.add_turn(self.record, turn))
        self._emit(EventType.TRANSCRIPT, turn.to_json())

    def opt_out(self, phrase: str | None, at_ms: int) -> None:
        self._host.save(calls.mark_opt_out(self.record, phrase))
        self._emit(EventType.OPT_OUT, {"phrase": phrase, "at_ms": at_ms})

    def ended(self, ending: Ending) -> None:
        expected = self._writer is not None
        record = calls.end(self.record, self._host.now(), ending, expected)
        self._host.save(record)
        self._host.metrics.observe_quality(ending.quality)
        self._emit(EventType.ENDED, ended_data(record))

    def open_recording(self) -> WavWriter:
        if self._writer is None:
            at = iso(self._host.now())
            self._writer = self._host.recordings.open(self._plan.call_id, at)
        return self._writer

    # --- cell side ---------------------------------------------------------------
    def request_hangup(self, reason: ReasonCode) -> None:
        if not self._hangup.is_set():
            self._reason = reason
            self._hangup.set()

    async def run(self, driver: CallDriver) -> None:
        try:
            await driver.run(self)
        except Exception:  # the call still ends (below) and its recording is closed
            count_handled("call.driver")
            log.exception("driver failed", extra={"call_id": self._plan.call_id})
        finally:
            if not self.record.ended:
                self.ended(self._fallback_ending())
            self._finish_recording()

    def _fallback_ending(self) -> Ending:
        record, now = self.record, self._host.now()
        answered = record.state is CallState.ANSWERED
        ring_end = record.answered_at or now
        talk = (now - record.answered_at).total_seconds() if record.answered_at else 0.0
        return Ending(
            outcome=Outcome.ANSWERED if answered else Outcome.FAILED,
            reason_code=ReasonCode.CELL_ERROR.value,
            cause=EndCause.CELL,
            ring_ms=int((ring_end - record.created_at).total_seconds() * 1000),
            talk_ms=int(talk * 1000),
        )

    def _finish_recording(self) -> None:
        if self._writer is None:
            return
        info = self._writer.close()
        meta = self._host.recordings.finish(self._plan.call_id, info)
        ref = RecordingRef(
            path=str(info.path),
            size_bytes=info.size_bytes,
            sha256=info.sha256,
            duration_ms=info.duration_ms,
            partial=meta.partial,
        )
        self._host.save(calls.attach_recording(self.record, ref))
        self._emit(EventType.RECORDING_READY, ref.to_json())
