"""The state machine of one outgoing call (RFC 3261 §13, §15, §9), pure.

``step(call, event)`` returns the next :class:`DialogState` and the actions the UA
must carry out, in order. Timers and the network feed events in; nothing here
does I/O or reads a clock. Events that a state cannot accept from the UA itself
raise :class:`IllegalCallTransitionError`; stray network messages (a late 1xx, a
retransmitted 2xx, a BYE outside a dialog) are answered or ignored, never raised.

A CANCEL is only sent after a provisional response (RFC 3261 §9.1): a ring
timeout or hang-up request before any 1xx is remembered and sent on the first 1xx.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import StrEnum

from agentcall.cell.domain.errors import IllegalCallTransitionError
from agentcall.cell.sip.outcome import (
    CallEnd,
    CancelCause,
    HangupReason,
    outcome_for_answered,
    outcome_for_final,
    outcome_for_timeout,
)


class Phase(StrEnum):
    INVITING = "inviting"  # INVITE sent, no provisional yet
    PROCEEDING = "proceeding"  # 100 Trying (or another 1xx)
    RINGING = "ringing"  # 180/183
    CANCELLING = "cancelling"  # CANCEL sent, waiting for 487
    CONFIRMED = "confirmed"  # 2xx + ACK: talking
    TERMINATING = "terminating"  # BYE sent
    ENDED = "ended"


class EventKind(StrEnum):
    PROVISIONAL = "provisional"
    SUCCESS = "success"
    FAILURE = "failure"
    INVITE_TIMEOUT = "invite_timeout"
    RING_TIMEOUT = "ring_timeout"
    HANGUP = "hangup"
    MAX_DURATION = "max_duration"
    AGENT_DONE = "agent_done"
    RTP_TIMEOUT = "rtp_timeout"
    MEDIA_FAILED = "media_failed"
    REMOTE_BYE = "remote_bye"
    BYE_DONE = "bye_done"


class Action(StrEnum):
    RETRY_WITH_AUTH = "retry_with_auth"
    SEND_CANCEL = "send_cancel"
    SEND_ACK = "send_ack"
    SEND_BYE = "send_bye"
    ANSWER_BYE = "answer_bye"  # 200 OK to the peer's BYE
    REFUSE_BYE = "refuse_bye"  # 481: no such dialog
    START_MEDIA = "start_media"
    STOP_MEDIA = "stop_media"
    REPORT_RINGING = "report_ringing"
    REPORT_ANSWERED = "report_answered"
    REPORT_ENDED = "report_ended"


@dataclass(frozen=True)
class Event:
    kind: EventKind
    status: int | None = None


@dataclass(frozen=True)
class DialogState:
    phase: Phase = Phase.INVITING
    cancel_cause: CancelCause | None = None
    auth_attempts: int = 0
    ringing_reported: bool = False
    end: CallEnd | None = None


@dataclass(frozen=True)
class Step:
    state: DialogState
    actions: tuple[Action, ...] = ()


MAX_AUTH_ATTEMPTS = 1
AUTH_STATUSES = frozenset({401, 407})
RINGING_STATUSES = frozenset({180, 183})
_END_CAUSE = {
    EventKind.MAX_DURATION: HangupReason.MAX_DURATION,
    EventKind.HANGUP: HangupReason.HANGUP_REQUESTED,
    EventKind.AGENT_DONE: HangupReason.AGENT_ENDED,
    EventKind.RTP_TIMEOUT: HangupReason.RTP_TIMEOUT,
    EventKind.MEDIA_FAILED: HangupReason.MEDIA_FAILED,
}
_CANCEL_CAUSE = {
    EventKind.RING_TIMEOUT: CancelCause.RING_TIMEOUT,
    EventKind.HANGUP: CancelCause.HANGUP_REQUESTED,
}


def _illegal(call: DialogState, event: Event) -> Step:
    raise IllegalCallTransitionError(f"event {event.kind} is illegal in phase {call.phase}")


def _ended(call: DialogState, end: CallEnd, *before: Action) -> Step:
    return Step(replace(call, phase=Phase.ENDED, end=end), (*before, Action.REPORT_ENDED))


def _provisional(call: DialogState, event: Event) -> Step:
    status = event.status or 100
    ringing = status in RINGING_STATUSES
    actions: list[Action] = []
    if ringing and not call.ringing_reported:
        actions.append(Action.REPORT_RINGING)
    reported = call.ringing_reported or ringing
    if call.cancel_cause is not None:
        actions.append(Action.SEND_CANCEL)
        return Step(
            replace(call, phase=Phase.CANCELLING, ringing_reported=reported), tuple(actions)
        )
    phase = Phase.RINGING if reported else Phase.PROCEEDING
    return Step(replace(call, phase=phase, ringing_reported=reported), tuple(actions))


def _success_early(call: DialogState, event: Event) -> Step:
    if call.cancel_cause is not None:  # answered while we were giving up: ACK, then BYE
        end = outcome_for_timeout(call.cancel_cause)
        state = replace(call, phase=Phase.TERMINATING, end=end)
        return Step(state, (Action.SEND_ACK, Action.SEND_BYE))
    actions = (Action.SEND_ACK, Action.START_MEDIA, Action.REPORT_ANSWERED)
    return Step(replace(call, phase=Phase.CONFIRMED), actions)


def _failure_early(call: DialogState, event: Event) -> Step:
    status = event.status or 500
    can_auth = call.cancel_cause is None and call.auth_attempts < MAX_AUTH_ATTEMPTS
    if status in AUTH_STATUSES and can_auth:  # a new INVITE transaction starts afresh
        state = replace(call, phase=Phase.INVITING, auth_attempts=call.auth_attempts + 1)
        return Step(state, (Action.RETRY_WITH_AUTH,))
    return _ended(call, outcome_for_final(status, call.cancel_cause))


def _cancel(call: DialogState, event: Event) -> Step:
    if call.cancel_cause is not None:  # already giving up: keep the first cause
        return Step(call)
    cause = _CANCEL_CAUSE[event.kind]
    if call.phase is Phase.INVITING:  # no 1xx yet: CANCEL must wait (RFC 3261 §9.1)
        return Step(replace(call, cancel_cause=cause))
    return Step(replace(call, phase=Phase.CANCELLING, cancel_cause=cause), (Action.SEND_CANCEL,))


def _early(call: DialogState, event: Event) -> Step:
    """INVITING, PROCEEDING, RINGING and CANCELLING: no dialog confirmed yet."""
    kind = event.kind
    if kind is EventKind.PROVISIONAL:
        if call.phase is Phase.CANCELLING:
            return Step(call)
        return _provisional(call, event)
    if kind is EventKind.SUCCESS:
        return _success_early(call, event)
    if kind is EventKind.FAILURE:
        return _failure_early(call, event)
    if kind is EventKind.INVITE_TIMEOUT:
        return _ended(call, outcome_for_timeout(call.cancel_cause))
    if kind in _CANCEL_CAUSE:
        return _cancel(call, event)
    if kind is EventKind.REMOTE_BYE:
        return Step(call, (Action.REFUSE_BYE,))
    return _illegal(call, event)


def _confirmed(call: DialogState, event: Event) -> Step:
    kind = event.kind
    if kind is EventKind.SUCCESS:  # retransmitted 2xx: our ACK was lost
        return Step(call, (Action.SEND_ACK,))
    if kind is EventKind.REMOTE_BYE:
        end = outcome_for_answered(HangupReason.REMOTE_BYE)
        return _ended(call, end, Action.ANSWER_BYE, Action.STOP_MEDIA)
    if kind in _END_CAUSE:
        state = replace(call, phase=Phase.TERMINATING, end=outcome_for_answered(_END_CAUSE[kind]))
        return Step(state, (Action.STOP_MEDIA, Action.SEND_BYE))
    if kind in (EventKind.PROVISIONAL, EventKind.FAILURE, EventKind.RING_TIMEOUT):
        return Step(call)  # late or stray: ignore
    return _illegal(call, event)


def _terminating(call: DialogState, event: Event) -> Step:
    end = call.end or outcome_for_answered(HangupReason.HANGUP_REQUESTED)
    if event.kind is EventKind.BYE_DONE:
        return _ended(call, end)
    if event.kind is EventKind.REMOTE_BYE:  # BYEs crossed
        return _ended(call, end, Action.ANSWER_BYE)
    if event.kind is EventKind.SUCCESS:
        return Step(call, (Action.SEND_ACK,))
    return Step(call)  # timers and late responses no longer matter


def _ended_phase(call: DialogState, event: Event) -> Step:
    if event.kind is EventKind.REMOTE_BYE:
        return Step(call, (Action.ANSWER_BYE,))
    if event.kind is EventKind.SUCCESS:
        return Step(call, (Action.SEND_ACK,))
    return Step(call)


_HANDLERS: dict[Phase, Callable[[DialogState, Event], Step]] = {
    Phase.INVITING: _early,
    Phase.PROCEEDING: _early,
    Phase.RINGING: _early,
    Phase.CANCELLING: _early,
    Phase.CONFIRMED: _confirmed,
    Phase.TERMINATING: _terminating,
    Phase.ENDED: _ended_phase,
}


def step(call: DialogState, event: Event) -> Step:
    """Apply ``event`` to ``call``; raises IllegalCallTransitionError when forbidden."""
    if event.kind in (EventKind.BYE_DONE,) and call.phase is not Phase.TERMINATING:
        if call.phase is Phase.ENDED:
            return Step(call)
        return _illegal(call, event)
    if event.kind in (EventKind.AGENT_DONE, EventKind.RTP_TIMEOUT, EventKind.MEDIA_FAILED):
        if call.phase in (Phase.INVITING, Phase.PROCEEDING, Phase.RINGING, Phase.CANCELLING):
            return _illegal(call, event)
    return _HANDLERS[call.phase](call, event)
