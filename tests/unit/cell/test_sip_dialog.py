"""The outgoing-call state machine: table of (state, event) -> (state, actions)."""

from __future__ import annotations

import pytest

from agentcall.cell.domain.errors import IllegalCallTransitionError
from agentcall.cell.domain.model import Outcome
from agentcall.cell.sip.dialog import Action, DialogState, Event, EventKind, Phase, step
from agentcall.cell.sip.outcome import CallEnd, CancelCause

A = Action
K = EventKind
INV = DialogState()
RING = DialogState(phase=Phase.RINGING, ringing_reported=True)
PROC = DialogState(phase=Phase.PROCEEDING)
CONF = DialogState(phase=Phase.CONFIRMED, ringing_reported=True)


def ev(kind: EventKind, status: int | None = None) -> Event:
    return Event(kind, status)


CASES = [
    # (name, state, event, phase after, actions)
    ("100 trying", INV, ev(K.PROVISIONAL, 100), Phase.PROCEEDING, ()),
    ("180 ringing reports once", PROC, ev(K.PROVISIONAL, 180), Phase.RINGING, (A.REPORT_RINGING,)),
    ("183 after 180 no repeat", RING, ev(K.PROVISIONAL, 183), Phase.RINGING, ()),
    (
        "200 answers",
        RING,
        ev(K.SUCCESS, 200),
        Phase.CONFIRMED,
        (A.SEND_ACK, A.START_MEDIA, A.REPORT_ANSWERED),
    ),
    ("401 retries with auth", INV, ev(K.FAILURE, 401), Phase.INVITING, (A.RETRY_WITH_AUTH,)),
    (
        "407 after 100 retries with auth",
        PROC,
        ev(K.FAILURE, 407),
        Phase.INVITING,
        (A.RETRY_WITH_AUTH,),
    ),
    (
        "second 401 fails",
        DialogState(auth_attempts=1),
        ev(K.FAILURE, 401),
        Phase.ENDED,
        (A.REPORT_ENDED,),
    ),
    (
        "401 while cancelling ends",
        DialogState(phase=Phase.CANCELLING, cancel_cause=CancelCause.RING_TIMEOUT),
        ev(K.FAILURE, 401),
        Phase.ENDED,
        (A.REPORT_ENDED,),
    ),
    ("486 ends", RING, ev(K.FAILURE, 486), Phase.ENDED, (A.REPORT_ENDED,)),
    ("ring timeout cancels", RING, ev(K.RING_TIMEOUT), Phase.CANCELLING, (A.SEND_CANCEL,)),
    ("ring timeout before 1xx waits", INV, ev(K.RING_TIMEOUT), Phase.INVITING, ()),
    (
        "pending cancel sent on 1xx",
        DialogState(cancel_cause=CancelCause.RING_TIMEOUT),
        ev(K.PROVISIONAL, 100),
        Phase.CANCELLING,
        (A.SEND_CANCEL,),
    ),
    ("hangup while ringing cancels", RING, ev(K.HANGUP), Phase.CANCELLING, (A.SEND_CANCEL,)),
    (
        "answered while cancelling: ack+bye",
        DialogState(phase=Phase.CANCELLING, cancel_cause=CancelCause.RING_TIMEOUT),
        ev(K.SUCCESS, 200),
        Phase.TERMINATING,
        (A.SEND_ACK, A.SEND_BYE),
    ),
    (
        "second cancel trigger ignored",
        DialogState(phase=Phase.CANCELLING, cancel_cause=CancelCause.RING_TIMEOUT),
        ev(K.HANGUP),
        Phase.CANCELLING,
        (),
    ),
    ("invite timeout", INV, ev(K.INVITE_TIMEOUT), Phase.ENDED, (A.REPORT_ENDED,)),
    ("bye outside dialog refused", RING, ev(K.REMOTE_BYE), Phase.RINGING, (A.REFUSE_BYE,)),
    (
        "remote bye ends",
        CONF,
        ev(K.REMOTE_BYE),
        Phase.ENDED,
        (A.ANSWER_BYE, A.STOP_MEDIA, A.REPORT_ENDED),
    ),
    ("max duration byes", CONF, ev(K.MAX_DURATION), Phase.TERMINATING, (A.STOP_MEDIA, A.SEND_BYE)),
    ("rtp timeout byes", CONF, ev(K.RTP_TIMEOUT), Phase.TERMINATING, (A.STOP_MEDIA, A.SEND_BYE)),
    ("agent done byes", CONF, ev(K.AGENT_DONE), Phase.TERMINATING, (A.STOP_MEDIA, A.SEND_BYE)),
    ("2xx retransmission re-acked", CONF, ev(K.SUCCESS, 200), Phase.CONFIRMED, (A.SEND_ACK,)),
    ("late 180 ignored", CONF, ev(K.PROVISIONAL, 180), Phase.CONFIRMED, ()),
    (
        "bye answered",
        DialogState(phase=Phase.TERMINATING),
        ev(K.BYE_DONE),
        Phase.ENDED,
        (A.REPORT_ENDED,),
    ),
    (
        "crossing byes",
        DialogState(phase=Phase.TERMINATING),
        ev(K.REMOTE_BYE),
        Phase.ENDED,
        (A.ANSWER_BYE, A.REPORT_ENDED),
    ),
    (
        "bye retransmission after end",
        DialogState(phase=Phase.ENDED),
        ev(K.REMOTE_BYE),
        Phase.ENDED,
        (A.ANSWER_BYE,),
    ),
]


@pytest.mark.parametrize(
    ("state", "event", "phase", "actions"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
def test_transitions(
    state: DialogState, event: Event, phase: Phase, actions: tuple[Action, ...]
) -> None:
    result = step(state, event)
    assert result.state.phase is phase
    assert result.actions == actions


END_CASES = [
    ("busy", RING, ev(K.FAILURE, 486), CallEnd(Outcome.BUSY, "sip_486", "busy")),
    ("decline", RING, ev(K.FAILURE, 603), CallEnd(Outcome.REJECTED, "sip_603", "rejected")),
    (
        "487 after ring timeout",
        DialogState(phase=Phase.CANCELLING, cancel_cause=CancelCause.RING_TIMEOUT),
        ev(K.FAILURE, 487),
        CallEnd(Outcome.NO_ANSWER, "ring_timeout", "no_answer"),
    ),
    (
        "487 after hangup",
        DialogState(phase=Phase.CANCELLING, cancel_cause=CancelCause.HANGUP_REQUESTED),
        ev(K.FAILURE, 487),
        CallEnd(Outcome.FAILED, "hangup_requested", "hangup_requested"),
    ),
    ("503", PROC, ev(K.FAILURE, 503), CallEnd(Outcome.FAILED, "sip_503", "failed")),
    (
        "no answer at all",
        INV,
        ev(K.INVITE_TIMEOUT),
        CallEnd(Outcome.FAILED, "sip_timeout", "failed"),
    ),
    ("remote bye", CONF, ev(K.REMOTE_BYE), CallEnd(Outcome.ANSWERED, None, "remote_hangup")),
]


@pytest.mark.parametrize(
    ("state", "event", "end"), [c[1:] for c in END_CASES], ids=[c[0] for c in END_CASES]
)
def test_final_outcome(state: DialogState, event: Event, end: CallEnd) -> None:
    assert step(state, event).state.end == end


def test_max_duration_end_is_kept_through_bye() -> None:
    terminating = step(CONF, ev(K.MAX_DURATION)).state
    ended = step(terminating, ev(K.BYE_DONE)).state
    assert ended.end == CallEnd(Outcome.ANSWERED, None, "max_duration")


@pytest.mark.parametrize(
    ("state", "event"),
    [
        (INV, ev(K.AGENT_DONE)),
        (RING, ev(K.RTP_TIMEOUT)),
        (RING, ev(K.MAX_DURATION)),
        (CONF, ev(K.BYE_DONE)),
        (CONF, ev(K.INVITE_TIMEOUT)),
    ],
)
def test_illegal_events_raise(state: DialogState, event: Event) -> None:
    with pytest.raises(IllegalCallTransitionError):
        step(state, event)
