"""Errors of the worker protocol, each answered by one `ack` error code (worker-protocol.md
§3.11). They extend Orbit's one exception tree (`agentcall.orbit.domain.errors.OrbitError`):

    OrbitError
    └── ProtocolError                 base; `code` is the ack error code
        ├── InvalidMessage            INVALID_MESSAGE  fix the worker: the field is named
        ├── InvalidResult             INVALID_RESULT   report `failed` with code invalid_result
        ├── LeaseLost                 LEASE_LOST       stop the handler; the attempt is over
        ├── AttemptNotFound           ATTEMPT_NOT_FOUND  drop the message
        ├── StartRefused              START_DEADLINE_EXCEEDED / DEADLINE_EXCEEDED: do not run
        ├── ResultConflict            RESULT_CONFLICT  the attempt ended otherwise (worker bug)
        ├── EvidenceConflict          EVIDENCE_CONFLICT  the key was used with other content
        └── EvidenceLimit             EVIDENCE_LIMIT   at most 100 evidence items per attempt
"""

from __future__ import annotations

from agentcall.orbit.domain.errors import OrbitError


class ProtocolError(OrbitError):
    """A worker message that cannot be applied; `code` goes into the ack."""

    code = "INVALID_MESSAGE"


class InvalidMessage(ProtocolError):
    """The message breaks the protocol: fix the field named in the message."""

    code = "INVALID_MESSAGE"


class InvalidResult(ProtocolError):
    """The result is not strict exact JSON within 256 KiB: report a failure instead."""

    code = "INVALID_RESULT"


class LeaseLost(ProtocolError):
    """The lease token is not current: the attempt ended; stop the handler, drop the message."""

    code = "LEASE_LOST"


class AttemptNotFound(ProtocolError):
    """No such attempt on a queue this connection serves: drop the message."""

    code = "ATTEMPT_NOT_FOUND"


class StartRefused(ProtocolError):
    """`started` arrived past a deadline; the task failed without running: do not run it."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class ResultConflict(ProtocolError):
    """The attempt already ended with another outcome: a worker bug; log and drop."""

    code = "RESULT_CONFLICT"


class EvidenceConflict(ProtocolError):
    """The evidence key was already used with other content in this attempt: pick a new key."""

    code = "EVIDENCE_CONFLICT"


class EvidenceLimit(ProtocolError):
    """An attempt holds at most 100 evidence items: record fewer, larger references."""

    code = "EVIDENCE_LIMIT"
