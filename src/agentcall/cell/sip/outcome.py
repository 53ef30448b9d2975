"""How a SIP call ended, as the call.result outcome and reason code (pure).

=====================================  ============  ======================
final answer / event                   outcome       reason_code
=====================================  ============  ======================
2xx, then BYE (either side)            answered      None
486 Busy Here, 600 Busy Everywhere     busy          sip_486 / sip_600
408/480/487 after our ring timeout     no_answer     ring_timeout
603 Decline                            rejected      sip_603
487 after a hang-up request            failed        hangup_requested
any other 3xx/4xx/5xx/6xx              failed        sip_<status>
no answer to the INVITE (Timer B)      failed        sip_timeout
=====================================  ============  ======================
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from agentcall.cell.domain.model import Outcome


class CancelCause(StrEnum):
    """Why the UA cancelled (or gave up on) an unanswered INVITE."""

    RING_TIMEOUT = "ring_timeout"
    HANGUP_REQUESTED = "hangup_requested"


class HangupReason(StrEnum):
    """Why an answered call ended."""

    REMOTE_BYE = "remote_hangup"
    MAX_DURATION = "max_duration"
    HANGUP_REQUESTED = "hangup_requested"
    AGENT_ENDED = "agent_ended"
    RTP_TIMEOUT = "rtp_timeout"
    MEDIA_FAILED = "media_failed"


@dataclass(frozen=True)
class CallEnd:
    outcome: Outcome
    reason_code: str | None
    cause: str  # the ``ended`` event's cause


BUSY_STATUSES = frozenset({486, 600})
NO_ANSWER_STATUSES = frozenset({408, 480, 487})


def outcome_for_final(status: int, cancel_cause: CancelCause | None) -> CallEnd:
    """Outcome of an INVITE that got the non-2xx final ``status``."""
    if not 300 <= status <= 699:
        raise ValueError(f"status {status} is not a final failure")
    if status in BUSY_STATUSES:
        return CallEnd(Outcome.BUSY, f"sip_{status}", "busy")
    if status == 603:
        return CallEnd(Outcome.REJECTED, "sip_603", "rejected")
    if status in NO_ANSWER_STATUSES and cancel_cause is CancelCause.RING_TIMEOUT:
        return CallEnd(Outcome.NO_ANSWER, "ring_timeout", "no_answer")
    if status == 487 and cancel_cause is CancelCause.HANGUP_REQUESTED:
        return CallEnd(Outcome.FAILED, "hangup_requested", "hangup_requested")
    return CallEnd(Outcome.FAILED, f"sip_{status}", "failed")


def outcome_for_timeout(cancel_cause: CancelCause | None) -> CallEnd:
    """The INVITE (or its CANCEL) got no final answer at all (Timer B)."""
    if cancel_cause is CancelCause.RING_TIMEOUT:
        return CallEnd(Outcome.NO_ANSWER, "ring_timeout", "no_answer")
    if cancel_cause is CancelCause.HANGUP_REQUESTED:
        return CallEnd(Outcome.FAILED, "hangup_requested", "hangup_requested")
    return CallEnd(Outcome.FAILED, "sip_timeout", "failed")


def outcome_for_answered(cause: HangupReason) -> CallEnd:
    return CallEnd(Outcome.ANSWERED, None, cause.value)


def outcome_for_error(reason_code: str) -> CallEnd:
    """A local failure before the call was answered (transport, auth, SDP)."""
    return CallEnd(Outcome.FAILED, reason_code, "failed")
