"""Errors of the cell process: one tree rooted at ``CellError``, each class says how to fix it.

What a request or the process can fail with maps to one wire error each::

    CellError                              (500 internal_error)
    ├── InvalidRequestError                (400 invalid_request)  — names the field
    │   ├── InvalidPlanError               (422 invalid_plan)
    │   └── UnknownProviderError           (422 unknown_provider)
    ├── CallNotFoundError                  (404 call_not_found)
    ├── RecordingNotFoundError             (404 recording_not_found)
    ├── CellConflictError                  (409 conflict)
    │   ├── CallIdConflictError            (409 call_id_conflict)
    │   ├── CallAlreadyDialledError        (409 already_dialled)
    │   ├── CallNotEndedError              (409 call_not_ended)
    │   ├── IllegalTransitionError         (409 illegal_transition)
    │   └── UploadNotAllowedError          (409 upload_not_allowed)
    ├── CellUnavailableError               (503 cell_unavailable)
    │   ├── CellBusyError                  (503 cell_busy)
    │   └── CellDrainingError              (503 cell_draining)
    ├── CellConfigError                    (start-up only: bad script, data dir, options)
    │   └── ScriptError                    (the simulation script is invalid)
    └── StateLostError                     (503 state_lost: the originate log was deleted or
                                            replaced; the cell dials nothing more and exits)

``WIRE_ERRORS`` is the one table from class to HTTP status and code, looked up along the
class hierarchy.

``SipError``, also a ``CellError``, is what a real call can fail with in the SIP user
agent or its media (RTP); each class carries the reason code of the ``failed`` call it
becomes (:func:`agentcall.cell.sip.outcome.outcome_for_error`), none ever escapes a call
task (one that did would answer 500 internal_error)::

    SipError                         unexpected failure in the SIP stack
    ├── SipParseError                a peer sent a malformed SIP message, SDP body or RTP packet
    ├── SipAuthError                 a 401/407 challenge that cannot be answered
    ├── SipConfigError               the trunk configuration is not usable for a real call
    ├── SipTransportError            the socket to the trunk failed
    └── IllegalCallTransitionError   a call event that its current state forbids
"""

from __future__ import annotations


class CellError(Exception):
    """Unexpected failure inside the cell; read the cell log for the cause."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field


class InvalidRequestError(CellError):
    """The request is malformed; fix the named field and send it again."""


class InvalidPlanError(InvalidRequestError):
    """The call plan is invalid; fix the named field of the plan (nothing was dialled)."""


class UnknownProviderError(InvalidRequestError):
    """The agent config names a provider_ref this cell does not offer; use one of its
    providers (GET /v1/info lists them) or start the cell with that provider."""


class CallNotFoundError(CellError):
    """This cell has no such call (never originated here, acknowledged, or lost in a
    cell restart: compare the boot id)."""


class RecordingNotFoundError(CellError):
    """No recording file exists for this call (not answered, recording off, or already
    uploaded and removed)."""


class CellConflictError(CellError):
    """The request conflicts with the current state of the call; re-read it first."""


class CallIdConflictError(CellConflictError):
    """The call_id is already used by a call with a different plan; use a new call_id."""


class CallAlreadyDialledError(CellConflictError):
    """This call_id was already dialled by this cell (acknowledged or in an earlier boot);
    it is never dialled twice. Use a new call_id for a new attempt."""


class CallNotEndedError(CellConflictError):
    """Only an ended call can be acknowledged; wait for its ended event."""


class IllegalTransitionError(CellConflictError):
    """The call cannot move to the requested state from its current state."""


class UploadNotAllowedError(CellConflictError):
    """An upload for this recording was already started or settled; a PUT is never
    retried. Only an authorization that expired unused may be replaced (same upload_id)."""


class CellUnavailableError(CellError):
    """The cell cannot take this request now; retry later."""


class CellBusyError(CellUnavailableError):
    """The cell runs its maximum number of calls (--max-calls); retry when one ends."""


class CellDrainingError(CellUnavailableError):
    """The cell is shutting down and takes no new calls; use it again after restart."""


class CellConfigError(CellError):
    """The cell cannot start with this configuration; fix the named option."""


class ScriptError(CellConfigError):
    """The simulation script is invalid; fix the named field (see docs/cell.md)."""


class StateLostError(CellError):
    """The originate log (the record of what this cell dialled) is missing, or is not the
    file the cell opened: without it a call could be dialled twice, so the cell dials
    nothing more and stops. Restore the file from its volume, or, if this data dir truly
    never dialled, start with --first-start (docs/cell.md, "State files")."""


WIRE_ERRORS: dict[type[CellError], tuple[int, str]] = {
    CellError: (500, "internal_error"),
    InvalidRequestError: (400, "invalid_request"),
    InvalidPlanError: (422, "invalid_plan"),
    UnknownProviderError: (422, "unknown_provider"),
    CallNotFoundError: (404, "call_not_found"),
    RecordingNotFoundError: (404, "recording_not_found"),
    CellConflictError: (409, "conflict"),
    CallIdConflictError: (409, "call_id_conflict"),
    CallAlreadyDialledError: (409, "already_dialled"),
    CallNotEndedError: (409, "call_not_ended"),
    IllegalTransitionError: (409, "illegal_transition"),
    UploadNotAllowedError: (409, "upload_not_allowed"),
    CellUnavailableError: (503, "cell_unavailable"),
    CellBusyError: (503, "cell_busy"),
    CellDrainingError: (503, "cell_draining"),
    StateLostError: (503, "state_lost"),
}


def wire_error(exc: CellError) -> tuple[int, str]:
    """HTTP status and code of ``exc``, looked up along its class hierarchy."""
    for cls in type(exc).__mro__:
        if cls in WIRE_ERRORS:
            return WIRE_ERRORS[cls]
    return WIRE_ERRORS[CellError]


class SipError(CellError):
    """Unexpected failure in the SIP stack; read the cell log (call_id) for the cause."""

    reason_code = "sip_error"


class SipParseError(SipError):
    """The peer sent a message this UA cannot parse; capture it (sipp -trace_msg) and
    check the trunk speaks RFC 3261 over the configured transport."""

    reason_code = "sip_malformed"


class SipAuthError(SipError):
    """The trunk asked for digest credentials this cell cannot give: configure the
    credentials of the trunk's credential_ref (docs/cell-sip.md) or use MD5/SHA-256
    with qop=auth."""

    reason_code = "sip_auth_failed"


class SipConfigError(SipError):
    """The trunk snapshot lacks what a real call needs (transport, auth_mode, host,
    PCMA media profile): fix the approved SIP snapshot."""

    reason_code = "trunk_not_usable"


class SipTransportError(SipError):
    """The socket to the trunk failed: check server_host/server_port/transport and that
    the trunk is reachable from the cell."""

    reason_code = "sip_transport_error"


class IllegalCallTransitionError(SipError):
    """A call event arrived in a state that forbids it: a bug in the UA, report it."""

    reason_code = "sip_internal_error"
