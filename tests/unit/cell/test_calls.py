"""Call states: legal transitions only (illegal ones raise)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from agentcall.cell.calls import record as calls
from agentcall.cell.calls.plan import parse_plan
from agentcall.cell.calls.record import CallRecord, Ending, RecordingRef
from agentcall.cell.domain.errors import IllegalTransitionError
from agentcall.cell.domain.model import CallState, EndCause, Outcome, Role, Turn

from .plans import plan_body

AT = datetime(2026, 9, 21, tzinfo=UTC)
ANSWERED_END = Ending(Outcome.ANSWERED, None, EndCause.CALLEE, 1000, 5000)
BUSY_END = Ending(Outcome.BUSY, "busy", EndCause.CALLEE, 500, 0)
TURN = Turn("turn-1", "segment-1", Role.USER, "hi", 0, 600)
REF = RecordingRef("/x.wav", 44, "0" * 64, 0, False)


def _call(state: CallState) -> CallRecord:
    return CallRecord(parse_plan(plan_body()), "boot", state, AT)


Step = Callable[[CallRecord], CallRecord]
RING: Step = lambda c: calls.ring(c, AT)  # noqa: E731
ANSWER: Step = lambda c: calls.answer(c, AT)  # noqa: E731
END_BUSY: Step = lambda c: calls.end(c, AT, BUSY_END, False)  # noqa: E731
END_OK: Step = lambda c: calls.end(c, AT, ANSWERED_END, True)  # noqa: E731
TALK: Step = lambda c: calls.add_turn(c, TURN)  # noqa: E731
OPT_OUT: Step = lambda c: calls.mark_opt_out(c, "stop calling")  # noqa: E731


@pytest.mark.parametrize(
    ("state", "step", "to"),
    [
        (CallState.DIALING, RING, CallState.RINGING),
        (CallState.DIALING, ANSWER, CallState.ANSWERED),
        (CallState.DIALING, END_BUSY, CallState.ENDED),
        (CallState.RINGING, ANSWER, CallState.ANSWERED),
        (CallState.RINGING, END_BUSY, CallState.ENDED),
        (CallState.ANSWERED, END_OK, CallState.ENDED),
        (CallState.ANSWERED, TALK, CallState.ANSWERED),
        (CallState.ANSWERED, OPT_OUT, CallState.ANSWERED),
    ],
)
def test_legal_transitions(state: CallState, step: Step, to: CallState) -> None:
    assert step(_call(state)).state is to


@pytest.mark.parametrize(
    ("state", "step"),
    [
        (CallState.RINGING, RING),
        (CallState.ANSWERED, RING),
        (CallState.ANSWERED, ANSWER),
        (CallState.ENDED, RING),
        (CallState.ENDED, ANSWER),
        (CallState.ENDED, END_OK),
        (CallState.RINGING, END_OK),  # an unanswered call cannot end "answered"
        (CallState.RINGING, TALK),
        (CallState.ENDED, TALK),
        (CallState.DIALING, OPT_OUT),
    ],
)
def test_illegal_transitions_raise(state: CallState, step: Step) -> None:
    with pytest.raises(IllegalTransitionError):
        step(_call(state))


def test_recording_only_after_an_end_that_expects_one() -> None:
    ended = END_OK(_call(CallState.ANSWERED))
    assert calls.attach_recording(ended, REF).recording == REF
    with pytest.raises(IllegalTransitionError):
        calls.attach_recording(END_BUSY(_call(CallState.RINGING)), REF)


def test_wire_form_of_an_ended_call() -> None:
    call = END_OK(OPT_OUT(TALK(_call(CallState.ANSWERED))))
    wire = call.to_json()
    assert wire["state"] == "ended" and wire["outcome"] == "answered"
    assert (wire["ring_ms"], wire["talk_ms"], wire["duration_ms"]) == (1000, 5000, 6000)
    assert wire["opt_out"] is True and wire["transcript"][0]["text"] == "hi"
    assert wire["dialled"] == "915003164745" and wire["caller_id"] == "BD00000000"
