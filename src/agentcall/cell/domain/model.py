"""Vocabulary shared by the whole cell: call states, outcomes, who ended a call.

Values are part of the wire API (JSON) and must never change meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class CallState(StrEnum):
    DIALING = "dialing"
    RINGING = "ringing"
    ANSWERED = "answered"
    ENDED = "ended"


class EventType(StrEnum):
    """The types of the event stream's events (``WS /v1/events``)."""

    DIALING = "call.dialing"
    RINGING = "call.ringing"
    ANSWERED = "call.answered"
    TRANSCRIPT = "call.transcript"
    OPT_OUT = "call.opt_out"
    ENDED = "call.ended"
    RECORDING_READY = "call.recording_ready"
    UPLOAD = "call.upload"
    CELL_RESTARTED = "cell.restarted"  # never sent: the client makes it when the boot changed


class Outcome(StrEnum):
    ANSWERED = "answered"
    NO_ANSWER = "no_answer"
    BUSY = "busy"
    REJECTED = "rejected"
    FAILED = "failed"


class EndCause(StrEnum):
    """Who or what ended the call."""

    CALLEE = "callee"  # the far end hung up, was busy, rejected or never answered
    AGENT = "agent"  # the agent ended it (opt-out, max turns, silence)
    LIMIT = "limit"  # ring timeout or max duration reached
    DISPATCHER = "dispatcher"  # a hang-up request
    NETWORK = "network"  # the call failed to set up
    CELL = "cell"  # the cell shut down or hit an internal error


class ReasonCode(StrEnum):
    """Reason codes the cell itself produces (scripts and SIP may add others)."""

    RING_TIMEOUT = "ring_timeout"
    NO_ANSWER = "no_answer"
    BUSY = "busy"
    REJECTED = "rejected"
    NETWORK_FAILURE = "network_failure"
    MAX_DURATION = "max_duration"
    MAX_TURNS = "max_turns"
    SILENCE_TIMEOUT = "silence_timeout"
    OPT_OUT = "opt_out"
    ANSWERING_MACHINE = "answering_machine"
    HANGUP_REQUESTED = "hangup_requested"
    CELL_SHUTDOWN = "cell_shutdown"
    CELL_ERROR = "cell_error"


class AmdAction(StrEnum):
    """What a call does about an answering machine (the plan's ``amd``, else ``CELL_AMD``)."""

    OFF = "off"  # no detection: the agent speaks its opening line at the answer
    HANGUP = "hangup"  # a machine is hung up on at once
    LEAVE_MESSAGE = "leave_message"  # the opening line is left after the beep


class Role(StrEnum):
    USER = "user"
    AGENT = "agent"


@dataclass(frozen=True)
class Turn:
    """One transcript segment; times are ms since the call was answered."""

    turn_id: str
    segment_id: str
    role: Role
    text: str
    start_ms: int
    end_ms: int

    def to_json(self) -> dict[str, object]:
        return {
            "turn_id": self.turn_id,
            "segment_id": self.segment_id,
            "role": self.role.value,
            "text": self.text,
            "start_ms": self.start_ms,
            "end_ms": self.end_ms,
        }
