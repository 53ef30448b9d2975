"""The public client of the cell: the only module the Dispatcher imports from ``cell``.

It depends on the wire API only (httpx + websockets), never on cell internals.
"""

from __future__ import annotations

from agentcall.cell.client._client import CellClient
from agentcall.cell.client._errors import (
    AlreadyDialledError,
    CallConflictError,
    CallIdConflictError,
    CallNotEndedError,
    CallNotFoundError,
    CellBusyError,
    CellDrainingError,
    CellError,
    CellProtocolError,
    CellRequestError,
    CellUnavailableError,
    InvalidPlanError,
    RecordingNotFoundError,
    UploadNotAllowedError,
)
from agentcall.cell.client._events import EventStream
from agentcall.cell.client._models import (
    AmdAction,
    CallInfo,
    CallState,
    CellInfo,
    Event,
    EventType,
    Orphan,
    Plan,
    RecordingInfo,
    TranscriptTurn,
    Trunk,
    UploadResult,
    UploadTarget,
)

__all__ = [
    "AlreadyDialledError",
    "AmdAction",
    "CallConflictError",
    "CallIdConflictError",
    "CallInfo",
    "CallNotEndedError",
    "CallNotFoundError",
    "CallState",
    "CellBusyError",
    "CellClient",
    "CellDrainingError",
    "CellError",
    "CellInfo",
    "CellProtocolError",
    "CellRequestError",
    "CellUnavailableError",
    "Event",
    "EventStream",
    "EventType",
    "InvalidPlanError",
    "Orphan",
    "Plan",
    "RecordingInfo",
    "RecordingNotFoundError",
    "TranscriptTurn",
    "Trunk",
    "UploadNotAllowedError",
    "UploadResult",
    "UploadTarget",
]
