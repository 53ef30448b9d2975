"""One call as the cell knows it, and its legal state transitions (pure).

dialing → ringing → answered → ended, with dialing → answered/ended and
ringing → ended allowed; ended is final. Any other move raises
:class:`IllegalTransitionError`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from agentcall.cell.calls.plan import CallPlan
from agentcall.cell.domain.errors import IllegalTransitionError
from agentcall.cell.domain.events import iso
from agentcall.cell.domain.model import CallState, EndCause, Outcome, Turn

ALLOWED: dict[CallState, frozenset[CallState]] = {
    CallState.DIALING: frozenset({CallState.RINGING, CallState.ANSWERED, CallState.ENDED}),
    CallState.RINGING: frozenset({CallState.ANSWERED, CallState.ENDED}),
    CallState.ANSWERED: frozenset({CallState.ENDED}),
    CallState.ENDED: frozenset(),
}


@dataclass(frozen=True)
class Ending:
    outcome: Outcome
    reason_code: str | None
    cause: EndCause
    ring_ms: int
    talk_ms: int
    # the SIP call's media and voice figures (agentcall.cell.media.quality); None in sim mode
    quality: Mapping[str, Any] | None = None

    @property
    def duration_ms(self) -> int:
        return self.ring_ms + self.talk_ms


@dataclass(frozen=True)
class RecordingRef:
    path: str
    size_bytes: int
    sha256: str
    duration_ms: int
    partial: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": "wav",
            "sample_rate_hz": 8000,
            "channels": 1,
            "size_bytes": self.size_bytes,
            "sha256": self.sha256,
            "duration_ms": self.duration_ms,
            "partial": self.partial,
        }


@dataclass(frozen=True)
class CallRecord:
    plan: CallPlan
    boot_id: str
    state: CallState
    created_at: datetime
    ringing_at: datetime | None = None
    answered_at: datetime | None = None
    ended_at: datetime | None = None
    ending: Ending | None = None
    opt_out: bool = False
    opt_out_phrase: str | None = None
    transcript: tuple[Turn, ...] = ()
    recording_expected: bool = False
    recording: RecordingRef | None = None

    @property
    def call_id(self) -> str:
        return self.plan.call_id

    @property
    def ended(self) -> bool:
        return self.state is CallState.ENDED

    def to_json(self) -> dict[str, Any]:
        end = self.ending
        return {
            "call_id": self.call_id,
            "boot_id": self.boot_id,
            "state": self.state.value,
            "callee": self.plan.callee,
            "dialled": self.plan.dial_string,
            "caller_id": self.plan.caller_id,
            "trunk_id": self.plan.trunk.trunk_id,
            "tags": dict(self.plan.tags),
            "created_at": iso(self.created_at),
            "ringing_at": iso(self.ringing_at) if self.ringing_at else None,
            "answered_at": iso(self.answered_at) if self.answered_at else None,
            "ended_at": iso(self.ended_at) if self.ended_at else None,
            "outcome": end.outcome.value if end else None,
            "reason_code": end.reason_code if end else None,
            "cause": end.cause.value if end else None,
            "ring_ms": end.ring_ms if end else None,
            "talk_ms": end.talk_ms if end else None,
            "duration_ms": end.duration_ms if end else None,
            "opt_out": self.opt_out,
            "opt_out_phrase": self.opt_out_phrase,
            "transcript": [t.to_json() for t in self.transcript],
            "recording_expected": self.recording_expected,
            "recording": self.recording.to_json() if self.recording else None,
            "quality": dict(end.quality) if end and end.quality is not None else None,
        }


def _move(call: CallRecord, to: CallState) -> None:
    if to not in ALLOWED[call.state]:
        raise IllegalTransitionError(
            f"call {call.call_id} cannot go from {call.state.value} to {to.value}"
        )


def ring(call: CallRecord, at: datetime) -> CallRecord:
    _move(call, CallState.RINGING)
    return replace(call, state=CallState.RINGING, ringing_at=at)


def answer(call: CallRecord, at: datetime) -> CallRecord:
    _move(call, CallState.ANSWERED)
    return replace(call, state=CallState.ANSWERED, answered_at=at)


def end(call: CallRecord, at: datetime, ending: Ending, recording_expected: bool) -> CallRecord:
    _move(call, CallState.ENDED)
    if ending.outcome is Outcome.ANSWERED and call.state is not CallState.ANSWERED:
        raise IllegalTransitionError(f"call {call.call_id} cannot end answered: never answered")
    return replace(
        call,
        state=CallState.ENDED,
        ended_at=at,
        ending=ending,
        recording_expected=recording_expected,
    )


def add_turn(call: CallRecord, turn: Turn) -> CallRecord:
    if call.state is not CallState.ANSWERED:
        raise IllegalTransitionError(f"call {call.call_id} is {call.state.value}: no transcript")
    return replace(call, transcript=(*call.transcript, turn))


def mark_opt_out(call: CallRecord, phrase: str | None) -> CallRecord:
    if call.state is not CallState.ANSWERED:
        raise IllegalTransitionError(f"call {call.call_id} is {call.state.value}: no opt-out")
    return replace(call, opt_out=True, opt_out_phrase=phrase)


def attach_recording(call: CallRecord, recording: RecordingRef) -> CallRecord:
    if call.state is not CallState.ENDED or not call.recording_expected:
        raise IllegalTransitionError(f"call {call.call_id} expects no recording now")
    return replace(call, recording=recording)
