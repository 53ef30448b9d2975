"""Errors raised by :class:`agentcall.cell.client.CellClient`, one rooted tree.

::

    CellClientError                the root: every error this client raises
    ├── CellUnavailableError       cannot reach the cell, timeout, or 503: retry later
    │   ├── CellBusyError          the cell runs --max-calls calls
    │   └── CellDrainingError      the cell is shutting down
    ├── CellProtocolError          the answer is not what this client understands
    └── CellRequestError           the cell refused the request (status, code, field)
        ├── InvalidPlanError       fix the named field (nothing was dialled)
        ├── CallNotFoundError      unknown call (acked, or lost in a cell restart)
        ├── RecordingNotFoundError no recording file for that call
        └── CallConflictError      the call's state forbids the request
            ├── CallIdConflictError    same call_id, different plan
            ├── AlreadyDialledError    call_id dialled before: never dialled twice
            ├── CallNotEndedError      ack before the call finished
            └── UploadNotAllowedError  a PUT was already started/settled
"""

from __future__ import annotations


class CellClientError(Exception):
    """Base of every error of the cell client."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class CellUnavailableError(CellClientError):
    """The cell cannot be reached or is overloaded; retry later. An originate that hit
    this may or may not have been dialled: repeat it with the same plan (idempotent)."""


class CellBusyError(CellUnavailableError):
    """The cell runs its maximum number of calls; retry when one ends."""


class CellDrainingError(CellUnavailableError):
    """The cell is shutting down; retry after it restarted (new boot id)."""


class CellProtocolError(CellClientError):
    """The cell answered something this client does not understand; check versions."""


class CellRequestError(CellClientError):
    """The cell refused the request; ``status``, ``code`` and ``field`` say why."""

    def __init__(self, message: str, *, status: int, code: str, field: str | None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.field = field


class InvalidPlanError(CellRequestError):
    """The request (plan, upload target) is invalid; fix ``field``. Nothing was dialled."""


class CallNotFoundError(CellRequestError):
    """The cell has no such call: acknowledged already, or lost in a cell restart."""


class RecordingNotFoundError(CellRequestError):
    """The cell has no recording file for this call."""


class CallConflictError(CellRequestError):
    """The call's current state forbids this request; read the call again."""


class CallIdConflictError(CallConflictError):
    """This call_id belongs to a call with a different plan."""


class AlreadyDialledError(CallConflictError):
    """This call_id was dialled before (acknowledged or in an earlier boot); the cell
    never dials it again."""


class CallNotEndedError(CallConflictError):
    """Only a finished call (ended and recording settled) can be acknowledged."""


class UploadNotAllowedError(CallConflictError):
    """An upload of this recording was already started or settled; PUTs never repeat."""


BY_CODE: dict[str, type[CellRequestError]] = {
    "invalid_request": InvalidPlanError,
    "invalid_plan": InvalidPlanError,
    "unknown_provider": InvalidPlanError,
    "call_not_found": CallNotFoundError,
    "recording_not_found": RecordingNotFoundError,
    "conflict": CallConflictError,
    "illegal_transition": CallConflictError,
    "call_id_conflict": CallIdConflictError,
    "already_dialled": AlreadyDialledError,
    "call_not_ended": CallNotEndedError,
    "upload_not_allowed": UploadNotAllowedError,
}
UNAVAILABLE_BY_CODE: dict[str, type[CellUnavailableError]] = {
    "cell_unavailable": CellUnavailableError,
    "cell_busy": CellBusyError,
    "cell_draining": CellDrainingError,
    "state_lost": CellUnavailableError,  # the originate log is lost: the cell stops
}
